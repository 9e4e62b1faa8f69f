"""What the thirteenth public-kernel sweep found mishandled, each on a kernel written for the test."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from evidence.nki import load_kernel, simulate
from evidence.nki.errors import SimulationError, UnsupportedOpError

RNG = np.random.default_rng(113)

# A MoE decode step gathering each token's top-k router affinities: the expert ids are narrowed to a uint16
# index tile that starts as `memset(..., value=0.0)` (an integral float into an integer tile, as nki-library
# writes it), transposed so GpSimd reads them token-major, gathered with local_gather into a 3-D tile through an
# access pattern, and each token's row is shuffled onto its quadrant's partitions.
TOPK_AFFINITY = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def topk_affinity(aff, idx):
    T, E = aff.shape
    K = idx.shape[1]
    out = nl.ndarray((T, K), dtype=aff.dtype, buffer=nl.shared_hbm)
    aff_sb = nl.ndarray((128, E), dtype=aff.dtype, buffer=nl.sbuf)
    nisa.memset(aff_sb, value=0.0)
    nisa.dma_copy(dst=aff_sb[0:T, 0:E], src=aff[0:T, 0:E])
    idx_sb = nl.ndarray((T, K), dtype=idx.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx_sb, src=idx)
    narrow = nl.ndarray((128, 16), dtype=nl.uint16, buffer=nl.sbuf)
    nisa.memset(dst=narrow, value=0.0)
    nisa.tensor_copy(dst=narrow[0:T, 0:K], src=idx_sb[0:T, 0:K])
    token_major = nl.ndarray((128, 16), dtype=nl.uint16, buffer=nl.sbuf)
    nisa.memset(dst=token_major, value=0.0)
    flipped = nl.ndarray((16, 16), dtype=nl.uint16, buffer=nl.sbuf)
    nisa.nc_transpose(dst=flipped, data=narrow[0:16, 0:16], engine=nisa.vector_engine)
    nisa.tensor_copy(dst=token_major[0:16, 0:16], src=flipped)
    picked = nl.ndarray((128, 16, 16), dtype=aff.dtype, buffer=nl.sbuf)
    nisa.memset(dst=picked, value=0.0)
    nisa.local_gather(dst=picked.ap([[256, 128], [1, 256]]), src_buffer=aff_sb, index=token_major,
                      num_elem_per_idx=1, num_valid_indices=256)
    for t in range(T):
        lined_up = nl.ndarray((128, 16), dtype=aff.dtype, buffer=nl.sbuf)
        nisa.nc_stream_shuffle(src=picked[:, t % 16, :], dst=lined_up, shuffle_mask=[t % 32] * 32)
        first = (t // 32) * 32
        nisa.dma_copy(dst=out[t:t + 1, :], src=lined_up[first:first + 1, 0:K])
    return out


@nki.jit
def fill(x, value):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(dst=t, value=value)
    nisa.dma_copy(dst=out, src=t)
    return out
'''


@pytest.mark.parametrize("T, E, K", [(4, 8, 2), (13, 16, 3)])
def test_topk_affinity_gather_from_a_float_zeroed_index_tile_matches_numpy(T, E, K):
    aff = RNG.random((T, E)).astype(ml_dtypes.bfloat16)
    idx = np.stack([RNG.permutation(E)[:K] for _ in range(T)]).astype(np.int32)
    sim = simulate(load_kernel(TOPK_AFFINITY, display="topk.py").topk_affinity, aff, idx)
    np.testing.assert_array_equal(sim.outputs[0], np.take_along_axis(aff, idx, 1))
    assert not sim.report.findings


@pytest.mark.parametrize("dtype", [np.uint16, np.int32, np.int8])
def test_memset_of_an_integral_float_fills_an_integer_tile_with_that_integer(dtype):
    x = np.zeros((16, 8), dtype)
    sim = simulate(load_kernel(TOPK_AFFINITY, display="topk.py").fill, x, 3.0)
    np.testing.assert_array_equal(sim.outputs[0], np.full_like(x, 3))


def test_memset_of_a_fractional_float_into_an_integer_tile_still_stops_at_its_line():
    with pytest.raises(SimulationError) as err:
        simulate(load_kernel(TOPK_AFFINITY, display="topk.py").fill, np.zeros((16, 8), np.int32), 2.5)
    line = TOPK_AFFINITY.splitlines().index("    nisa.memset(dst=t, value=value)") + 1
    assert err.value.code == "err_dtype_mismatch" and err.value.line == line


# A paged fp8 KV cache read two tokens at a time as bf16 (nki-library's packed-fp8 segmented attention): the
# cache is reshaped to rows, viewed as bf16 (one element per fp8 pair), and a block is picked with `.ap()` whose
# pattern, offset and run-time `scalar_offset` count bf16 elements and rows of that view; the tile is then viewed
# back as fp8. Also the same read through `.ap(dtype=)` on the fp8 rows.
PACKED_CACHE = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def packed_block(cache, blk, through_ap_dtype):
    nb, half, d, two = cache.shape
    out = nl.ndarray((half, d * 2), dtype=cache.dtype, buffer=nl.shared_hbm)
    rows = cache.reshape((nb * half, d * 2))
    first = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=first, src=blk)
    nisa.tensor_scalar(dst=first, data=first, op0=nl.multiply, operand0=half)
    pairs = nl.ndarray((half, d), dtype=nl.bfloat16, buffer=nl.sbuf)
    if through_ap_dtype:
        src = rows.ap(pattern=[[d, half], [1, d]], offset=0, scalar_offset=first, indirect_dim=0, dtype=nl.bfloat16)
    else:
        src = rows.view(nl.bfloat16).ap(pattern=[[d, half], [1, d]], offset=0, scalar_offset=first, indirect_dim=0)
    nisa.dma_copy(dst=pairs, src=src)
    back = nl.ndarray((half, d * 2), dtype=cache.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=back, src=pairs.view(cache.dtype))
    nisa.dma_copy(dst=out, src=back)
    return out


@nki.jit
def rows_of_view(x, off):
    P, F = x.shape
    out = nl.ndarray((2, F // 2), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    t = nl.ndarray((2, F // 2), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.view(nl.bfloat16).ap(pattern=[[F // 2, 2], [1, F // 2]], offset=off))
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def gathered_rows_of_view(x, ids):
    P, F = x.shape
    out = nl.ndarray((2, F // 2), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    i = nl.ndarray((2, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=i, src=ids)
    t = nl.ndarray((2, F // 2), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.view(nl.bfloat16).ap(pattern=[[F // 2, 2], [1, F // 2]], vector_offset=i))
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def scatter_rows_of_view(x, ids):
    P, F = x.shape
    i = nl.ndarray((2, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=i, src=ids)
    t = nl.ndarray((2, F // 2), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.memset(t, value=0.0)
    nisa.dma_copy(dst=x.view(nl.bfloat16).ap(pattern=[[F // 2, 2], [1, F // 2]], vector_offset=i), src=t)
    return x
'''


@pytest.mark.parametrize("through_ap_dtype", [False, True], ids=["view-then-ap", "ap-dtype"])
@pytest.mark.parametrize("blk", [0, 3])
def test_packed_fp8_cache_block_read_as_bf16_keeps_its_bytes(blk, through_ap_dtype):
    cache = RNG.standard_normal((5, 8, 16, 2)).astype(ml_dtypes.float8_e4m3fn)
    sim = simulate(load_kernel(PACKED_CACHE, display="packed.py").packed_block, cache,
                   np.array([[blk]], np.int32), through_ap_dtype)
    np.testing.assert_array_equal(sim.outputs[0].view(np.uint8), cache[blk].reshape(8, 32).view(np.uint8))


@pytest.mark.parametrize("off", [0, 8])
def test_access_pattern_on_a_dtype_view_counts_elements_of_the_view(off):
    x = RNG.standard_normal((6, 8)).astype(ml_dtypes.float8_e4m3fn)
    sim = simulate(load_kernel(PACKED_CACHE, display="packed.py").rows_of_view, x, off)
    np.testing.assert_array_equal(sim.outputs[0].view(np.uint8), x.view(np.uint8)[off // 4:off // 4 + 2])


def test_vector_offset_over_a_dtype_view_gathers_rows_of_the_view():
    x = RNG.standard_normal((6, 8)).astype(ml_dtypes.float8_e4m3fn)
    sim = simulate(load_kernel(PACKED_CACHE, display="packed.py").gathered_rows_of_view, x,
                   np.array([[4], [1]], np.int32))
    np.testing.assert_array_equal(sim.outputs[0].view(np.uint8), x.view(np.uint8)[[4, 1]])


def test_a_write_through_a_gather_over_a_dtype_view_stops_as_not_simulated():
    x = RNG.standard_normal((6, 8)).astype(ml_dtypes.float8_e4m3fn)
    with pytest.raises(UnsupportedOpError) as err:
        simulate(load_kernel(PACKED_CACHE, display="packed.py").scatter_rows_of_view, x,
                 np.array([[4], [1]], np.int32))
    assert err.value.code == "unsupported_op" and "vector_offset" in err.value.message
    assert err.value.line == PACKED_CACHE.splitlines().index(
        "    nisa.dma_copy(dst=x.view(nl.bfloat16).ap(pattern=[[F // 2, 2], [1, F // 2]], vector_offset=i), src=t)") + 1


SAME_WIDTH_VIEW = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def float_bits(x):
    P, F = x.shape
    out = nl.ndarray((P, F), dtype=nl.int32, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.view(nl.int32).ap(pattern=[[F, P], [1, F]], offset=0))
    nisa.dma_copy(dst=out, src=t)
    return out
'''


def test_access_pattern_on_a_same_width_dtype_view_reads_the_bits():
    x = RNG.standard_normal((4, 8)).astype(np.float32)
    sim = simulate(load_kernel(SAME_WIDTH_VIEW, display="bits.py").float_bits, x)
    np.testing.assert_array_equal(sim.outputs[0], x.view(np.int32))


# Padding slots of a MoE block carry token row -1 (nki-library clamps its token ids with `maximum -1`): the
# gathers read them through `.ap(vector_offset=)` and let the DMA skip them (`oob_mode.skip`), so the destination
# keeps its zeros there. The same gather without skip stops at the DMA, not where the pattern is built.
PADDED_GATHER = '''
import nki
import nki.isa as nisa
import nki.language as nl
from nki.isa.constants import oob_mode


@nki.jit
def token_rows(a, rows, skip):
    B = rows.shape[0]
    out = nl.ndarray((B, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    r = nl.ndarray((B, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=r, src=rows)
    nisa.tensor_scalar(dst=r, data=r, op0=nl.maximum, operand0=-1)
    v = nl.ndarray((B, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(v, value=0.0)
    src = a.ap(pattern=[[a.shape[1], B], [1, 1]], offset=0, vector_offset=r, indirect_dim=0)
    nisa.dma_copy(dst=v, src=src, oob_mode=oob_mode.skip if skip else oob_mode.error)
    nisa.dma_copy(dst=out, src=v)
    return out


@nki.jit
def token_rows_transposed(w, rows):
    R, C = w.shape
    L = rows.shape[0]
    out = nl.ndarray((C, L), dtype=w.dtype, buffer=nl.shared_hbm)
    r = nl.ndarray((L, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=r, src=rows)
    t = nl.ndarray((C, 1, L), dtype=w.dtype, buffer=nl.sbuf)
    nisa.memset(t, value=0.0)
    nisa.dma_transpose(dst=t.ap(pattern=[[L, C], [L, 1], [1, L]], offset=0),
                       src=w.reshape((R, 1, C)).ap(pattern=[[C, L], [C, 1], [1, C]], offset=0, vector_offset=r,
                                                   indirect_dim=0),
                       axes=(2, 1, 0), oob_mode=oob_mode.skip)
    o = nl.ndarray((C, L), dtype=w.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=t.reshape((C, L)))
    nisa.dma_copy(dst=out, src=o)
    return out
'''


def test_rows_past_the_tensor_are_skipped_by_an_oob_skip_dma_copy():
    a = RNG.standard_normal((10, 1)).astype(np.float32)
    rows = np.array([[3], [-1], [9], [-5], [0]], np.int32)
    sim = simulate(load_kernel(PADDED_GATHER, display="padded.py").token_rows, a, rows, True)
    np.testing.assert_array_equal(sim.outputs[0], np.where(rows >= 0, a[np.maximum(rows, 0)[:, 0]], 0))
    assert not sim.report.findings


def test_rows_past_the_tensor_without_skip_stop_at_the_dma_line():
    a = RNG.standard_normal((10, 1)).astype(np.float32)
    with pytest.raises(SimulationError) as err:
        simulate(load_kernel(PADDED_GATHER, display="padded.py").token_rows, a,
                 np.array([[3], [-1], [9], [12], [0]], np.int32), False)
    assert err.value.code == "err_tensor_access_out_of_bound"
    assert err.value.line == PADDED_GATHER.splitlines().index(
        "    nisa.dma_copy(dst=v, src=src, oob_mode=oob_mode.skip if skip else oob_mode.error)") + 1


def test_rows_past_the_tensor_are_skipped_by_an_oob_skip_dma_transpose():
    w = RNG.standard_normal((20, 32)).astype(ml_dtypes.bfloat16)
    rows = np.array([5, -1, 19, 20, 0, 7, -1, 3], np.int32).reshape(8, 1)
    sim = simulate(load_kernel(PADDED_GATHER, display="padded.py").token_rows_transposed, w, rows)
    keep = (rows[:, 0] >= 0) & (rows[:, 0] < 20)
    ref = np.where(keep[None, :], w[np.clip(rows[:, 0], 0, 19)].T, 0)
    np.testing.assert_array_equal(sim.outputs[0], ref.astype(w.dtype))


# nki-library's constant-max attention picks its exp engine from the target: `get_nc_version()` and, on gen4, the
# sub-version. A target query returns a value in nki 0.3+; the dst-first check must not refuse the file.
SUB_VERSION = '''
import nki
import nki.isa as nisa
import nki.language as nl


def vector_exp_available():
    return nisa.get_nc_version() == nisa.nc_version.gen4 and nisa.get_nc_sub_version() == 1


@nki.jit
def maybe_scaled(x):
    P, F = x.shape
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    if vector_exp_available():
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=out, src=t)
    return out
'''


def test_a_target_query_whose_value_is_used_loads_and_runs_where_it_is_not_reached():
    x = RNG.standard_normal((4, 8)).astype(np.float32)
    sim = simulate(load_kernel(SUB_VERSION, display="subver.py").maybe_scaled, x, target="trn2")
    np.testing.assert_array_equal(sim.outputs[0], x)


def test_the_sub_version_query_itself_stops_as_not_simulated_at_its_line():
    with pytest.raises(UnsupportedOpError) as err:
        simulate(load_kernel(SUB_VERSION, display="subver.py").maybe_scaled,
                 np.zeros((4, 8), np.float32), target="trn3")
    assert err.value.code == "unsupported_op" and "get_nc_sub_version" in err.value.message
    assert err.value.line == SUB_VERSION.splitlines().index(
        "    return nisa.get_nc_version() == nisa.nc_version.gen4 and nisa.get_nc_sub_version() == 1") + 1


@pytest.mark.parametrize("name", ["view-then-ap", "ap-dtype", "gather", "transpose-skip"])
def test_reinterpreted_and_skipped_accesses_also_trace_without_data(name):
    cache = np.zeros((5, 8, 16, 2), ml_dtypes.float8_e4m3fn)
    packed = load_kernel(PACKED_CACHE, display="packed.py")
    runs = {
        "view-then-ap": (packed.packed_block, (cache, np.array([[3]], np.int32), False)),
        "ap-dtype": (packed.packed_block, (cache, np.array([[3]], np.int32), True)),
        "gather": (packed.gathered_rows_of_view, (np.zeros((6, 8), ml_dtypes.float8_e4m3fn),
                                                  np.array([[4], [1]], np.int32))),
        "transpose-skip": (load_kernel(PADDED_GATHER, display="padded.py").token_rows_transposed,
                           (np.zeros((20, 32), ml_dtypes.bfloat16), np.array([[5], [-1], [19], [20]], np.int32))),
    }
    fn, args = runs[name]
    sim = simulate(fn, *args, trace_only=True)
    assert not sim.report.findings
