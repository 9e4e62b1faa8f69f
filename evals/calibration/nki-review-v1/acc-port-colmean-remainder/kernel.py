"""Column means y[c] = sum_r x[r, c] / rows of an fp32 matrix, ported from kernel.cu.

The per-thread row walk becomes a reduction over the partition axis on TensorE: each strip of
128 rows is the moving operand of a matmul with a [128, 1] ones vector, whose [1, 512] product
holds the strip's column sums, and the strips accumulate in one fp32 PSUM row, as the CUDA float
accumulator does. The rows that remain after the full strips (44 of 300) form one shorter strip
with its own slice of the ones vector. The 1/rows scale is fused into the PSUM eviction. cols is a
multiple of 512 (asserted); rows is any positive integer.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def colmean_kernel(x):
    rows, cols = x.shape
    P, F = nl.tile_size.pmax, nl.tile_size.psum_fmax
    assert cols % F == 0, "cols must be a multiple of 512"
    full, rem = rows // P, rows % P
    y = nl.ndarray((cols,), dtype=nl.float32, buffer=nl.shared_hbm)
    y_row = y.reshape((1, cols))
    ones = nl.ones((P, 1), dtype=nl.float32)

    for c in nl.affine_range(cols // F):
        acc = nl.zeros((1, F), dtype=nl.float32, buffer=nl.psum)
        for s in nl.affine_range(full):
            strip = nl.load(x[s * P:(s + 1) * P, c * F:(c + 1) * F])
            acc += nisa.nc_matmul(ones, strip)
        if rem:  # the remainder strip, known at trace time
            tail = nl.load(x[full * P:rows, c * F:(c + 1) * F])
            acc += nisa.nc_matmul(ones[0:rem, :], tail)
        mean = nisa.activation(op=nl.copy, data=acc, scale=1.0 / rows, dtype=nl.float32)
        nl.store(y_row[:, c * F:(c + 1) * F], value=mean)
    return y
