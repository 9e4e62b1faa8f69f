"""Column sums out[c] = sum over r of x[r, c] of an fp32 matrix, ported from kernel.cu.

One SPMD program instance per CUDA strip of 128 rows (nl.program_id(0) is blockIdx.y; the
manifest's grid is [rows / 128]). Each instance sums its strip's columns on TensorE with a ones
vector (ones[128, 1] stationary, the strip moving, fp32 in PSUM) and writes its sums to out.
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
    s = nl.program_id(0)  # blockIdx.y: this instance's strip

    for c in nl.affine_range(cols // F):
        strip = nl.load(x[s * P:(s + 1) * P, c * F:(c + 1) * F])
        sums = nisa.nc_matmul(ones, strip, is_stationary_onezero=True)
        nl.store(out_row[:, c * F:(c + 1) * F], value=nisa.tensor_copy(sums))
    return out
