"""out = a * x + y over a flat fp32 vector, ported from kernel.cu.

The CUDA grid-stride loop exists to spread n elements over a fixed grid of threads. On a
NeuronCore the unit of work is a tile instruction over 128 partitions, so the vector is viewed as
[128, n / 128] (partition p holds a contiguous stretch of n / 128 elements) and processed in
[128, 2048] tiles: one scalar_tensor_tensor computes a * x + y per tile, 8 KiB per partition per
transfer. n must be a multiple of 128 * 2048 (asserted).
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

FREE = 2048


@nki.jit
def axpy_kernel(a, x, y):
    (n,) = x.shape
    P = nl.tile_size.pmax
    assert n % (P * FREE) == 0, "n must be a multiple of 128 * 2048"
    cols = n // P
    out = nl.ndarray((n,), dtype=x.dtype, buffer=nl.shared_hbm)
    x2, y2, out2 = x.reshape((P, cols)), y.reshape((P, cols)), out.reshape((P, cols))

    for t in nl.affine_range(cols // FREE):
        xs = nl.load(x2[:, t * FREE:(t + 1) * FREE])
        ys = nl.load(y2[:, t * FREE:(t + 1) * FREE])
        r = nisa.scalar_tensor_tensor(data=xs, op0=np.multiply, operand0=a, op1=np.add, operand1=ys,
                                      dtype=x.dtype)
        nl.store(out2[:, t * FREE:(t + 1) * FREE], value=r)
    return out
