"""simulate(): calling conventions, SPMD, numerics and storage, indexing styles, report numbers."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from evidence.nki import SimulationError, load_kernel, simulate
from evidence.nki import dtypes as dt
from evidence.nki.shim import language as nl
from evidence.nki.shim import typing as nt

from .conftest import kernel_source

RNG = np.random.default_rng(7)


def _run(body, *args, entry="kernel", **kw):
    return simulate(getattr(load_kernel(kernel_source(body), display="k.py"), entry), *args, **kw)


def test_spmd_grid_program_ids_and_counts():
    body = """
        def kernel(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            i, j = nl.program_id(0), nl.program_id(axis=1)
            n, m = nl.num_programs(0), nl.num_programs(1)
            assert nl.program_ndim() == 2 and nl.num_programs() == n * m
            t = nl.load(a[i * 128:(i + 1) * 128, j * 64:(j + 1) * 64])
            nl.store(out[i * 128:(i + 1) * 128, j * 64:(j + 1) * 64], value=nl.add(t, i * 10 + j))
            return out
    """
    a = np.zeros((256, 192), np.float32)
    out = _run(body, a, grid=(2, 3)).outputs[0]
    assert out[0, 0] == 0 and out[200, 70] == 11 and out[255, 191] == 12


def test_grid_by_indexing_the_kernel_and_simulate_kernel_inside_the_file():
    body = """
        @nki.jit
        def kernel(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            p = nl.program_id(0)
            nl.store(out[p * 128:(p + 1) * 128, :], value=nl.load(a[p * 128:(p + 1) * 128, :]))
            return out

        def run(a):
            return nki.simulate_kernel(kernel[2], a)
    """
    mod = load_kernel(kernel_source(body))
    a = RNG.standard_normal((256, 32)).astype(np.float32)
    np.testing.assert_array_equal(mod.run(a), a)
    np.testing.assert_array_equal(mod.kernel[2](a), a)  # calling a kernel outside a run simulates it


def test_old_style_trailing_output_argument():
    body = """
        def kernel(a, b, c):
            nl.store(c, value=nl.add(nl.load(a), nl.load(b)))
    """
    a, b = np.ones((128, 16), np.float32), np.full((128, 16), 2.0, np.float32)
    c = np.full((128, 16), np.nan, np.float32)
    sim = _run(body, a, b, c)
    assert sim.returned is None and len(sim.outputs) == 1
    np.testing.assert_array_equal(c, 3.0)
    assert sim.outputs[0] is c


def test_mutable_tensor_parameter_and_kwargs_with_plain_values():
    body = """
        def kernel(x, y: nt.mutable_tensor, *, alpha, reps=1):
            for _ in range(reps):
                nl.store(y, value=nl.add(nl.multiply(nl.load(x), alpha), nl.load(y)))
            return y
    """
    x, y = np.ones((128, 8), np.float32), np.zeros((128, 8), np.float32)
    sim = _run(body, x, y, alpha=0.5, reps=3)
    np.testing.assert_array_equal(sim.outputs[0], 1.5)


def test_benchmark_decorated_kernel_runs_with_a_no_timing_finding():
    body = """
        @nki.benchmark(warmup=2, iters=10)
        def kernel(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            nl.store(out, value=nl.load(a))
            return out
    """
    sim = _run(body, np.ones((128, 8), np.float32))
    assert [f.code for f in sim.report.findings] == ["benchmark_no_timing"]
    assert sim.report.findings[0].severity == "info"


TILED = """
    def kernel(lhsT, rhs):
        K, M = lhsT.shape
        _, N = rhs.shape
        out = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)
        for m in nl.affine_range(M // 128):
            for n in nl.affine_range(N // 512):
                acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
                for k in nl.affine_range(K // 128):
                    a = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                    b = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                    acc += nl.matmul(a, b, transpose_x=True)
                nl.store(out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=nl.copy(acc, dtype=out.dtype))
        return out
"""


def test_trace_only_report_equals_the_full_report_traffic():
    lhsT = RNG.standard_normal((256, 256)).astype(ml_dtypes.bfloat16)
    rhs = RNG.standard_normal((256, 1024)).astype(ml_dtypes.bfloat16)
    full = _run(TILED, lhsT, rhs).report
    spec = _run(TILED, nt.tensor[[256, 256], nl.bfloat16], nt.tensor[[256, 1024], nl.bfloat16], trace_only=True)
    traced = spec.report
    assert spec.outputs == () and spec.output_shapes == (((256, 1024), "bfloat16"),)
    for field in ("instructions", "instr_by_engine", "hbm_read_bytes", "hbm_write_bytes", "dma_count", "dma_bytes",
                  "dma_small_count", "redundant_hbm_read_bytes", "matmul_flops", "partition_utilisation",
                  "sbuf_peak_bytes_per_partition", "psum_peak_banks", "cycles_by_engine"):
        assert getattr(full, field) == getattr(traced, field), field
    assert full.matmul_flops == 2 * 256 * 256 * 1024
    # every lhsT tile is loaded once per n block and every rhs tile once per m block (2 each):
    # each input is read twice, so its whole size is redundant
    assert full.redundant_hbm_read_bytes == 256 * 256 * 2 + 256 * 1024 * 2
    assert full.hbm_write_bytes == 256 * 1024 * 2


def test_report_counts_dmas_small_transfers_and_engines():
    body = """
        def kernel(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            for i in nl.affine_range(4):
                t = nl.load(a[i * 32:(i + 1) * 32, :])
                nl.store(out[i * 32:(i + 1) * 32, :], value=nl.exp(t))
            return out
    """
    r = _run(body, np.zeros((128, 16), np.float32)).report
    assert r.dma_count == 8 and r.dma_small_count == 8  # 64 B per partition each
    assert r.instr_by_engine["scalar"] == 4 and r.instr_by_engine["dma"] == 8
    assert r.partition_utilisation == 0.25
    assert r.dma_size_histogram == {"<=2048": 8}


def test_low_precision_storage_rounds_to_nearest_even():
    body = """
        def kernel(a):
            out = nl.ndarray(a.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
            out8 = nl.ndarray(a.shape, dtype=nl.float8_e4m3, buffer=nl.shared_hbm)
            t = nl.load(a)
            nl.store(out, value=nl.copy(t, dtype=nl.bfloat16))
            nl.store(out8, value=t)
            return out, out8
    """
    a = RNG.standard_normal((128, 64)).astype(np.float32)
    bf, f8 = _run(body, a).outputs
    assert bf.dtype == ml_dtypes.bfloat16 and f8.dtype == ml_dtypes.float8_e4m3
    np.testing.assert_array_equal(bf, a.astype(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(f8, a.astype(ml_dtypes.float8_e4m3))
    # 1 + 2^-8 is halfway between two bf16 values: RNE goes to the even one (1.0)
    assert float(np.float32(1 + 2**-8).astype(ml_dtypes.bfloat16)) == 1.0


def test_tf32_rounding_and_promotion_table():
    x = np.array([1 + 2**-11, 1 + 3 * 2**-11, np.inf], np.float32)
    np.testing.assert_array_equal(dt.round_tf32(x), [1.0, 1 + 2**-9, np.inf])
    assert dt.promote(dt.float16, dt.bfloat16) == dt.float32
    assert dt.promote(dt.float8_e4m3, dt.float8_e5m2) == dt.bfloat16
    assert dt.promote(dt.float8_e4m3, dt.float16) == dt.float16
    assert dt.promote(dt.int8, dt.uint8) == dt.int16
    assert dt.promote(dt.int8, dt.uint16) == dt.int32
    assert dt.promote(dt.int32, dt.uint32) == dt.float32
    assert dt.promote(dt.float16, 1.2) == dt.float32 and dt.promote(dt.int8, 2) == dt.int32
    assert dt.promote(dt.int32, dt.float16) == dt.float16 and dt.promote(dt.uint16, dt.tfloat32) is dt.tfloat32


def test_weak_scalar_promotes_a_bf16_tile_to_fp32_and_arithmetic_is_fp32():
    body = """
        def kernel(a):
            t = nl.load(a)
            r = nl.add(t, 1.0)
            assert r.dtype == nl.float32
            out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
            nl.store(out, value=r)
            return out
    """
    a = np.full((2, 4), 256.0, np.float32).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(_run(body, a).outputs[0], 257.0)  # 257 is not representable in bf16


def test_masks_ragged_tiles_and_uninitialised_memory():
    body = """
        def kernel(a):
            n, m = a.shape
            out = nl.ndarray((n, m), dtype=a.dtype, buffer=nl.shared_hbm)
            i_p = nl.arange(128)[:, None]
            i_f = nl.arange(m)[None, :]
            for t in nl.affine_range((n + 127) // 128):
                rows = t * 128 + i_p
                x = nl.load(a[rows, i_f], mask=(rows < n))
                nl.store(out[rows, i_f], value=nl.exp(x, mask=(rows < n)), mask=(rows < n))
            return out
    """
    a = RNG.standard_normal((200, 24)).astype(np.float32)
    sim = _run(body, a)
    np.testing.assert_allclose(sim.outputs[0], np.exp(a), rtol=1e-6)
    assert not sim.report.findings
    # the uninitialised fill values
    assert np.isnan(dt.fill_uninitialised((2, 2), dt.bfloat16).astype(np.float32)).all()
    assert (dt.fill_uninitialised((2, 2), dt.int32) == dt.INT_SENTINEL).all()


def test_mgrid_attributes_ds_and_free_axis_transpose():
    body = """
        def kernel(a):
            P, X, Y = a.shape
            out = nl.ndarray((P, Y, X), dtype=a.dtype, buffer=nl.shared_hbm)
            g = nl.mgrid[0:P, 0:X, 0:Y]
            t = nl.load(a[g.p, g.x, g.y])
            u = nl.ndarray((P, Y, X), dtype=a.dtype)
            i_p, i_y, i_x = nl.mgrid[0:P, 0:Y, 0:X]
            u[i_p, i_y, i_x] = nl.copy(t[i_p, i_x, i_y])
            nl.store(out[nl.ds(0, P), :, :], value=u)
            return out
    """
    a = RNG.standard_normal((16, 3, 5)).astype(np.float32)
    np.testing.assert_array_equal(_run(body, a).outputs[0], a.transpose(0, 2, 1))


def test_block_dimensions_partition_leading_broadcast_and_psum_accumulation():
    body = """
        def kernel(a):
            out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
            blk = nl.ndarray((2, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
            for b in nl.affine_range(2):
                blk[b] = nl.load(a[b * 128:(b + 1) * 128, :])
            total = nl.sum(blk[0], axis=1)              # [128] without keepdims
            norm = nl.divide(blk[0], total)             # aligned on the partition axis
            ones = nl.full((128, 128), 1.0, nl.float32)
            acc = nl.zeros((128, 64), nl.float32, buffer=nl.psum)
            acc[...] += nl.matmul(ones, blk[1], transpose_x=True)
            acc += nl.matmul(ones, blk[1], transpose_x=True)
            r = nl.ndarray((128, 64), dtype=nl.float32)
            r[...] = nl.add(norm, acc)
            r -= 1.0
            r *= 2.0
            nl.store(out, value=r)
            return out
    """
    a = RNG.uniform(1, 2, (256, 64)).astype(np.float32)
    sim = _run(body, a)
    x0, x1 = a[:128].astype(np.float64), a[128:].astype(np.float64)
    expected = (x0 / x0.sum(1, keepdims=True) + 2 * x1.sum(0, keepdims=True) - 1) * 2
    np.testing.assert_allclose(sim.outputs[0], expected, rtol=1e-5)
    assert sim.report.instr_by_engine["tensor"] == 2  # += into PSUM adds no instruction
    assert sim.report.matmul_flops == 2 * 2 * 128 * 128 * 64


def test_views_indirect_indexing_atomics_and_helpers(capsys):
    body = """
        def kernel(a, idx, acc: nt.mutable_tensor):
            out = nl.ndarray((64, 32), dtype=a.dtype, buffer=nl.shared_hbm)
            flat = a.reshape((32, 64))
            t = nl.load_transpose2d(flat)                       # [64, 32]
            i_f = nl.arange(32)[None, :]
            ix = nl.load(idx)                                   # [64, 1] int32 row ids
            g = nl.load(flat[ix, i_f])                          # indirect rows of the free range
            nl.atomic_rmw(acc[ix, i_f], value=g, op=np.add)     # duplicate ids accumulate
            nl.random_seed(3)
            r1 = nl.rand((64, 32))
            nl.random_seed(3)
            r2 = nl.rand((64, 32))
            nl.device_print("same:", nl.equal(r1, r2))
            e = nl.empty_like(t)
            e[...] = nl.add(t, nl.multiply(g, 0.0))
            nl.store(out, value=nl.add(e, nl.subtract(r1, r2)))
            return out, acc
    """
    a = np.arange(32 * 64, dtype=np.float32)
    idx = (np.arange(64) % 4).astype(np.int32)[:, None]
    acc = np.zeros((32, 64), np.float32)
    out, acc_out = _run(body, a, idx, acc).outputs
    np.testing.assert_array_equal(out, a.reshape(32, 64).T)
    np.testing.assert_array_equal(acc_out[:4, :32], 16 * a.reshape(32, 64)[:4, :32])
    assert acc_out[4:].sum() == 0
    assert "same:" in capsys.readouterr().out


def test_tile_size_depends_on_target_and_errors_carry_a_partial_report():
    body = """
        def kernel(a):
            assert nl.tile_size.total_available_sbuf_size == EXPECTED
            t = nl.load(a)
            u = nl.load(t)
            return a
    """
    for target, expected in (("trn1", 180224), ("trn2", 212984)):
        with pytest.raises(SimulationError) as info:
            _run(body.replace("EXPECTED", str(expected)), np.ones((128, 4), np.float32), target=target)
        assert info.value.code == "err_unsupported_memory"
        assert info.value.report.dma_count == 1 and info.value.report.target == target


def test_view_reinterprets_bits():
    body = """
        def kernel(a):
            out = nl.ndarray((128, 4), dtype=nl.int32, buffer=nl.shared_hbm)
            nl.store(out, value=nl.load(a.view(nl.int32)))
            return out
    """
    a = RNG.standard_normal((128, 4)).astype(np.float32)
    np.testing.assert_array_equal(_run(body, a).outputs[0], a.view(np.int32))


def test_per_partition_vectors_as_one_dimensional_views_and_rank_one_loads():
    body = """
        def kernel(x, bias):
            out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
            m = nl.full((128, 1), fill_value=-1e4, dtype=np.float32)
            s = nl.ndarray((128, 1), dtype=np.float32)
            t = nl.load(x)
            b = nl.load(bias)                                  # a 1-D [128] tile
            m_prev = nl.copy(m[:, 0])
            m[:, 0] = nl.maximum(m_prev, nisa.tensor_reduce(np.max, t, axis=(1,)))
            e = nisa.activation_reduce(np.exp, t, bias=-1 * m[:, 0], reduce_op=nl.add, reduce_res=s[:, 0])
            r = nl.add(nl.divide(e, s[:, 0]), b)               # [128, F] with [128]: per partition
            nl.store(out, value=r)
            return out
    """
    x = RNG.standard_normal((128, 32)).astype(np.float32)
    bias = RNG.standard_normal(128).astype(np.float32)
    sim = _run(body, x, bias)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(sim.outputs[0], e / e.sum(1, keepdims=True) + bias[:, None], rtol=1e-5, atol=1e-6)
    assert not sim.report.findings


def test_higher_rank_index_grids_with_unit_axes_and_masked_bn_stats_chunks():
    body = """
        def kernel(x, g):
            n, f = x.shape
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            ip, jf, i1 = nl.mgrid[0:128, 0:f, 0:1]
            gb = nl.load(g.reshape((1, f))[i1, jf]).broadcast_to((128, f))   # [1, f, 1] access -> [128, f]
            for i in nl.affine_range((n + 127) // 128):
                t = nl.load(x[i * 128 + ip, jf], mask=(i * 128 + ip < n))
                ibn, ist = nl.mgrid[0:512, 0:6]
                nb = (f + 511) // 512
                stats = nl.ndarray((128, 6 * nb), dtype=np.float32)
                for j in nl.affine_range(nb):
                    stats[ip, j * 6 + ist] = nisa.bn_stats(t[ip, j * 512 + ibn], mask=(j * 512 + ibn < f))
                mv = nisa.bn_aggr(stats[ip, nl.arange(6 * nb)[None, :]])
                y = nisa.tensor_scalar(data=t, op0=np.subtract, operand0=mv[ip, 0], op1=np.multiply,
                                       operand1=nl.rsqrt(mv[ip, 1] + 1e-5))
                nl.store(out[i * 128 + ip, jf], value=y * gb, mask=(i * 128 + ip < n))
            return out
    """
    x = RNG.random((200, 700)).astype(np.float32)
    g = RNG.random(700).astype(np.float32)
    sim = _run(body, x, g)
    x64 = x.astype(np.float64)
    expected = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-5) * g
    np.testing.assert_allclose(sim.outputs[0], expected, rtol=1e-4, atol=1e-5)
    assert not sim.report.findings


def test_accumulating_through_an_index_grid_is_psum_accumulation_only():
    body = """
        def kernel(a, b):
            out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
            acc = nl.zeros((nl.par_dim(128), 128), dtype=np.float32, buffer=nl.psum)
            ip, jf = nl.mgrid[0:128, 0:128]
            for k in nl.affine_range(2):
                x = nl.load(a[k * 128 + ip, jf])
                y = nl.load(b[k * 128 + ip, jf])
                acc[ip, jf] += nisa.nc_matmul(stationary=x, moving=y)
            nl.store(out[jf, ip], value=nl.copy(acc[ip, jf]))   # transposed store through grids
            return out
    """
    a = RNG.standard_normal((256, 128)).astype(np.float32)
    b = RNG.standard_normal((256, 128)).astype(np.float32)
    sim = _run(body, a, b)
    np.testing.assert_allclose(sim.outputs[0], (a.T.astype(np.float64) @ b).T, rtol=1e-4, atol=1e-4)
    assert sim.report.instr_by_engine["tensor"] == 2 and sim.report.instr_by_engine["vector"] == 2  # zeros + copy


def test_three_axis_mgrid_with_a_unit_middle_axis_gives_two_dimensional_tiles():
    body = """
        def kernel(a, g):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            ix, iw, iy = nl.mgrid[0:128, 0:1, 0:a.shape[1]]
            gt = nl.load(g.reshape((1, g.shape[0]))[iw, iy])           # [1, F]
            for i in nl.affine_range((a.shape[0] + 127) // 128):
                t = nl.load(a[i * 128 + ix, iy], mask=(i * 128 + ix < a.shape[0]))   # [128, F]
                assert tuple(t.shape) == (128, a.shape[1]) and tuple(gt.shape) == (1, a.shape[1])
                r = nl.rsqrt(nl.sum(nl.square(t), axis=[1]) / a.shape[1])
                o = nl.multiply(t, r)
                o[...] = nl.multiply(o, gt.broadcast_to((128, a.shape[1])), mask=(i * 128 + ix < a.shape[0]))
                nl.store(out[i * 128 + ix, iy], value=o, mask=(i * 128 + ix < a.shape[0]))
            return out
    """
    a = RNG.random((300, 96)).astype(np.float32)
    g = RNG.random(96).astype(np.float32)
    a64 = a.astype(np.float64)
    expected = a64 / np.sqrt((a64 * a64).mean(1, keepdims=True)) * g
    np.testing.assert_allclose(_run(body, a, g).outputs[0], expected, rtol=1e-5)


def test_sbuf_peak_counts_live_tiles_between_instructions():
    body = """
        def kernel(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            for i in nl.affine_range(4):
                buf = nl.ndarray((128, 1024), dtype=nl.float32)     # replaces the previous iteration's buffer
                buf[:, 0:512] = nl.load(a)
                buf[:, 512:1024] = nl.load(a)
                nl.store(out, value=buf[:, 0:512])
            return out
    """
    r = _run(body, np.ones((128, 512), np.float32)).report
    # the live set is at most: buf (4 KiB) + one freshly loaded [128, 512] tile (2 KiB)
    assert r.sbuf_peak_bytes_per_partition == 4096 + 2048


def test_operand_masks_in_subscripts_limit_the_matmul():
    body = """
        def kernel(a, b):
            out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
            i_lhs_f = nl.arange(128)[None, :]
            i_rhs_f = nl.arange(512)[None, :]
            x = nl.load(a)
            y = nl.load(b)
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            acc += nl.matmul(x[i_lhs_f < 64], y[i_rhs_f < 256], transpose_x=True)
            nl.store(out, value=nl.copy(acc))
            return out
    """
    a = RNG.standard_normal((128, 128)).astype(np.float32)
    b = RNG.standard_normal((128, 512)).astype(np.float32)
    out = _run(body, a, b).outputs[0]
    full = a.T.astype(np.float64) @ b
    np.testing.assert_allclose(out[:64, :256], full[:64, :256], rtol=1e-4, atol=1e-4)
    assert (out[64:] == 0).all() and (out[:, 256:] == 0).all()  # not computed: the zeros stay


def test_finfo_reshape_keyword_and_numpy_integer_indices():
    body = """
        def kernel(a):
            out = nl.ndarray((2, 3), dtype=a.dtype, buffer=nl.shared_hbm)
            flat = a.reshape(shape=(2, 12))
            rows, cols = nl.mgrid[0:2, 0:3]
            picks = np.array([5, 0, 11], dtype=np.int32)
            t = nl.full((2, 3), fill_value=nl.finfo(a.dtype).min, dtype=a.dtype)
            for i in nl.static_range(3):
                t[rows, i] = nl.load(flat[rows, picks[i]])
            nl.store(out, value=t)
            return out
    """
    a = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(_run(body, a).outputs[0], a.reshape(2, 12)[:, [5, 0, 11]])


def test_integer_on_a_tile_free_axis_keeps_a_unit_axis():
    body = """
        def update(l_col, m_blk):
            l_col[:, 0] = nl.add(l_col[:, 0], m_blk[:, 0])       # l_col is l_buffer[:, i]: still [P, 1]

        def kernel(a):
            out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
            l_buffer = nl.zeros((128, 4), dtype=nl.float32)
            m_buffer = nl.full((2, nl.par_dim(128), 1), fill_value=1.0, dtype=nl.float32)
            for i in nl.affine_range(4):
                assert tuple(l_buffer[:, i].shape) == (128, 1) and tuple(m_buffer[1].shape) == (128, 1)
                update(l_buffer[:, i], m_buffer[i % 2])
            nl.store(out, value=l_buffer)
            return out
    """
    np.testing.assert_array_equal(_run(body, np.zeros((1, 1), np.float32)).outputs[0], 1.0)


def test_loop_reduce_into_a_subscript_and_single_element_loads():
    body = """
        def kernel(a, seed):
            out = nl.ndarray((2, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
            s = nl.load(seed[0])                                  # one element: a [1, 1] tile
            offset_seed = nl.add(s[0, 0], 5)
            nl.random_seed(seed=offset_seed)
            red = nl.zeros((2, nl.par_dim(128), 64), dtype=nl.float32)
            for k in nl.affine_range(3):
                for j in nl.affine_range(2):
                    x = nl.multiply(nl.load(a[j]), k + 1.0)
                    red[j, :, :] = nl.loop_reduce(x, op=np.maximum, loop_indices=(k,), dtype=nl.float32)
            for j in nl.affine_range(2):
                nl.store(out[j], value=red[j, :, :])
            return out
    """
    a = RNG.uniform(0.5, 1.0, (2, 128, 64)).astype(np.float32)
    out = _run(body, a, np.array([3], np.int32)).outputs[0]
    np.testing.assert_allclose(out, 3 * a, rtol=1e-6)


def test_written_masks_cover_kernel_created_outputs_only():
    body = """
        def kernel(a, rows):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            i_p, i_f = nl.mgrid[0:128, 0:64]
            for t in nl.affine_range(2):
                row = t * 128 + i_p
                nl.store(out[row, i_f], value=nl.load(a[row, i_f], mask=row < rows), mask=row < rows)
            return out
    """
    a = np.ones((256, 64), np.float32)
    partial = _run(body, a, 200)
    assert partial.written[0].shape == (256, 64) and int(partial.written[0].sum()) == 200 * 64
    assert not partial.written[0][200:].any() and np.isnan(partial.outputs[0][200:]).all()
    assert _run(body, a, 256).written == (None,)  # every element written
    assert _run(body, a, 200, trace_only=True).written == ()
    trailing = """
        def kernel(a, c):
            nl.store(c[0:128, :], value=nl.load(a[0:128, :]))
    """
    # an output argument keeps its caller's values where the kernel does not write: not "unwritten"
    assert _run(trailing, a, np.zeros_like(a)).written == (None,)
