"""Column sums out[c] = sum over r of x[r, c] of an fp32 matrix, ported from kernel.cu.

The CUDA strips of 128 rows become K-tiles of a TensorE matmul with a ones vector: ones[128, 1]
as the stationary operand and a [128, 512] strip of x as the moving one give the strip's column
sums as a [1, 512] PSUM row, and the atomicAdd across strips becomes PSUM accumulation over the
strips (acc += ...), in fp32 like the CUDA partial sums. The ones operand is flagged as 0/1 for
TensorE's faster path. Rows are a multiple of 128 and cols of 512 (asserted).
"""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def colsum_kernel(x):
    rows, cols = x.shape
    P, F = nl.tile_size.pmax, nl.tile_size.psum_fmax
    assert rows % P == 0 and cols % F == 0, "rows must be a multiple of 128, cols of 512"
    out = nl.ndarray((cols,), dtype=nl.float32, buffer=nl.shared_hbm)
    out_row = out.reshape((1, cols))
    ones = nl.ones((P, 1), dtype=nl.float32)

    for c in nl.affine_range(cols // F):
        acc = nl.zeros((1, F), dtype=nl.float32, buffer=nl.psum)
        for s in nl.affine_range(rows // P):
            strip = nl.load(x[s * P:(s + 1) * P, c * F:(c + 1) * F])
            acc += nisa.nc_matmul(ones, strip, is_stationary_onezero=True)
        nl.store(out_row[:, c * F:(c + 1) * F], value=nisa.tensor_copy(acc))
    return out
