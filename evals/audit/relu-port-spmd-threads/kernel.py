"""y = max(x, 0) over a flat fp32 vector, ported from kernel.cu.

Same launch as the CUDA kernel: one SPMD program instance per block of 128 threads (the grid is
n / 128), thread t of the block on partition t, one element per partition.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

THREADS = 128


@nki.jit
def relu_kernel(x):
    (n,) = x.shape
    y = nl.ndarray((n,), dtype=x.dtype, buffer=nl.shared_hbm)
    xv, yv = x.reshape((n // THREADS, THREADS)), y.reshape((n // THREADS, THREADS))
    block = nl.program_id(0)  # blockIdx.x
    t = nl.arange(THREADS)[:, None]  # threadIdx.x
    zero = nl.arange(1)[None, :]
    xt = nl.load(xv[block + zero, t])
    nl.store(yv[block + zero, t], value=nisa.activation(op=nl.relu, data=xt))
    return y
