"""out = a * x + y over a flat fp32 vector, ported from kernel.cu.

The port keeps the CUDA launch: 256 blocks of 128 threads walk the vector in a grid-stride loop.
Thread threadIdx.x of a block is partition threadIdx.x of a [128, 1] tile, so each step of a block
loads, computes and stores the 128 consecutive elements its threads own.
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

THREADS = 128  # blockDim.x of the CUDA launch
BLOCKS = 256  # gridDim.x


@nki.jit
def axpy_kernel(a, x, y):
    (n,) = x.shape
    stride = THREADS * BLOCKS
    assert n % stride == 0, "n must be a multiple of the grid size"
    out = nl.ndarray((n,), dtype=x.dtype, buffer=nl.shared_hbm)
    x2, y2, out2 = (t.reshape((n // THREADS, THREADS)) for t in (x, y, out))

    tid = nl.arange(THREADS)[:, None]  # threadIdx.x
    one = nl.arange(1)[None, :]
    for step in nl.affine_range(n // stride):  # the grid-stride loop
        for block in nl.affine_range(BLOCKS):  # blockIdx.x
            row = step * BLOCKS + block  # elements row * 128 + threadIdx.x
            xs = nl.load(x2[row + one, tid])
            ys = nl.load(y2[row + one, tid])
            r = nisa.scalar_tensor_tensor(data=xs, op0=np.multiply, operand0=a, op1=np.add, operand1=ys,
                                          dtype=x.dtype)
            nl.store(out2[row + one, tid], value=r)
    return out
