"""bf16 matmul out = a_t.T @ b for a short contraction, fp32 PSUM accumulation, bf16 result.

a_t [K, M] and b [K, N] both fit on chip; each is loaded with one transfer per 128-row K-tile and
kept. Every [128, 512] output tile accumulates its K-tiles in one PSUM bank with +=, and the
eviction casts to bf16. K and M are multiples of 128, N of 512 (asserted).
"""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


def load_k_tiles(src, n_tiles, width):
    """All K-tiles of a [K, width] operand, side by side in one SBUF buffer."""
    buf = nl.ndarray((nl.tile_size.pmax, n_tiles * width), dtype=src.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(n_tiles):
        buf[:, k * width:(k + 1) * width] = nl.load(src[k * 128:(k + 1) * 128, :])
    return buf


@nki.jit
def small_matmul(a_t, b):
    K, M = a_t.shape
    _, N = b.shape
    assert K % 128 == 0 and M % 128 == 0 and N % 512 == 0
    KT = K // 128
    out = nl.ndarray((M, N), dtype=a_t.dtype, buffer=nl.shared_hbm)
    a_sb = load_k_tiles(a_t, KT, M)
    b_sb = load_k_tiles(b, KT, N)

    for mi in nl.affine_range(M // 128):
        for ni in nl.affine_range(N // 512):
            ps = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                ps += nisa.nc_matmul(a_sb[:, k * M + mi * 128:k * M + (mi + 1) * 128],
                                     b_sb[:, k * N + ni * 512:k * N + (ni + 1) * 512])
            nl.store(out[mi * 128:(mi + 1) * 128, ni * 512:(ni + 1) * 512], value=nisa.tensor_copy(ps, dtype=a_t.dtype))
    return out
