"""2-D transpose out = x.T of an fp32 matrix on TensorE.

Each output row tile j gathers the 128x128 blocks (i, j) of the input, each transposed by the DMA
on its way into SBUF, and leaves in one 2 KiB-per-partition store. Both sides are multiples of 128.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def transpose_kernel(x):
    rows, cols = x.shape
    P = nl.tile_size.pmax
    assert rows % P == 0 and cols % P == 0, "both sides must be multiples of 128"
    RT, CT = rows // P, cols // P
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)

    for j in nl.affine_range(CT):
        out_tile = nl.ndarray((P, rows), dtype=x.dtype, buffer=nl.sbuf)
        for i in nl.affine_range(RT):
            out_tile[:, i * P:(i + 1) * P] = nl.load_transpose2d(x[i * P:(i + 1) * P, j * P:(j + 1) * P])
        nl.store(out[j * P:(j + 1) * P, :], value=out_tile)
    return out
