"""Tiled bf16 matmul: C[M, N] = lhsT.T @ rhs, fp32 accumulation in PSUM, bf16 result."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def matmul_tiled(lhsT, rhs):
    K, M = lhsT.shape
    K_rhs, N = rhs.shape
    assert K == K_rhs, "lhsT and rhs must share the contraction size"

    TILE_K = nl.tile_size.pmax  # contraction on the partition axis
    TILE_M = nl.tile_size.gemm_stationary_fmax  # 128 stationary columns
    TILE_N = nl.tile_size.gemm_moving_fmax  # 512 moving columns: one PSUM bank of fp32

    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)

    # Both operands fit on chip at this size (K x (M + N) bf16 is 640 KiB, 5 KiB per partition),
    # so each byte is read from HBM exactly once, in transfers of 512 B-2 KiB per partition.
    lhsT_tiles = nl.ndarray((K // TILE_K, nl.par_dim(TILE_K), M), dtype=lhsT.dtype, buffer=nl.sbuf)
    rhs_tiles = nl.ndarray((K // TILE_K, nl.par_dim(TILE_K), N), dtype=rhs.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(K // TILE_K):
        lhsT_tiles[k] = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K, :])
        rhs_tiles[k] = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, :])

    for m in nl.affine_range(M // TILE_M):
        for n in nl.affine_range(N // TILE_N):
            acc = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                stationary = lhsT_tiles[k, :, m * TILE_M:(m + 1) * TILE_M]
                moving = rhs_tiles[k, :, n * TILE_N:(n + 1) * TILE_N]
                acc += nl.matmul(stationary, moving, transpose_x=True)
            # Evict PSUM with the cast fused into the copy.
            out_tile = nl.copy(acc, dtype=result.dtype)
            nl.store(result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N], value=out_tile)

    return result
