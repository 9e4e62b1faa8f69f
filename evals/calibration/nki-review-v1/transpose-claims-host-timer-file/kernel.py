"""2-D transpose out = x.T of an fp32 matrix on TensorE.

The input is loaded once, one 128-row tile at a time (2 KiB per partition). Each output row tile
j gathers the 128x128 blocks (i, j) of the input, transposed by TensorE into PSUM and evicted to
one SBUF tile, and leaves in one 2 KiB-per-partition store. Both sides are multiples of 128.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def transpose_kernel(x):
    rows, cols = x.shape
    P = nl.tile_size.pmax
    assert rows % P == 0 and cols % P == 0, "both sides must be multiples of 128"
    RT, CT = rows // P, cols // P
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)

    x_sb = nl.ndarray((P, RT, cols), dtype=x.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(RT):
        x_sb[:, i, :] = nl.load(x[i * P:(i + 1) * P, :])

    for j in nl.affine_range(CT):
        out_tile = nl.ndarray((P, rows), dtype=x.dtype, buffer=nl.sbuf)
        for i in nl.affine_range(RT):
            block_t = nisa.nc_transpose(x_sb[:, i, j * P:(j + 1) * P], engine=nisa.tensor_engine)
            out_tile[:, i * P:(i + 1) * P] = nisa.tensor_copy(block_t, dtype=x.dtype)
        nl.store(out[j * P:(j + 1) * P, :], value=out_tile)
    return out
