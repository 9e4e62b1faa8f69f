"""Row softmax of an fp16 matrix with fp32 statistics, ported from kernel.cu.

A CUDA block per row becomes a partition per row: 128 rows per tile, and the last tile, which
holds the remainder (300 rows = 2 x 128 + 44), is masked. The block's shared-memory tree
reductions are kept as trees along the free axis: each step folds the upper half of an fp32
working tile onto the lower half (cols must be a power of two), first with max, then, over the
exponentials, with add. Statistics are fp32 as in the CUDA kernel; the output is fp16.
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def softmax_rows(x):
    rows, cols = x.shape
    assert cols & (cols - 1) == 0, "the tree reduction needs a power-of-two row length"
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax
    steps = cols.bit_length() - 1

    i_p = nl.arange(P)[:, None]
    i_f = nl.arange(cols)[None, :]
    for t in nl.affine_range((rows + P - 1) // P):
        r = t * P + i_p
        valid = r < rows  # the remainder tile
        xt = nl.load(x[r, i_f], mask=valid)

        red = nisa.tensor_copy(xt, dtype=nl.float32, mask=valid)  # the shared-memory buffer
        for s in nl.static_range(steps):
            half = cols >> (s + 1)
            red[:, 0:half] = nisa.tensor_tensor(red[:, 0:half], red[:, half:2 * half], np.maximum,
                                                dtype=nl.float32, mask=valid)
        neg_max = nisa.tensor_scalar(red[:, 0:1], np.multiply, -1.0, dtype=nl.float32, mask=valid)

        e = nisa.activation(op=nl.exp, data=xt, bias=neg_max, dtype=nl.float32, mask=valid)
        red[...] = nisa.tensor_copy(e, dtype=nl.float32, mask=valid)
        for s in nl.static_range(steps):
            half = cols >> (s + 1)
            red[:, 0:half] = nisa.tensor_tensor(red[:, 0:half], red[:, half:2 * half], np.add,
                                                dtype=nl.float32, mask=valid)
        inv_total = nisa.reciprocal(red[:, 0:1], dtype=nl.float32, mask=valid)
        y = nisa.tensor_scalar(e, np.multiply, inv_total, dtype=x.dtype, mask=valid)
        nl.store(out[r, i_f], value=y, mask=valid)
    return out
