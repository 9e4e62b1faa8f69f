"""Undefined data: masked-out parts of fresh results and never-written memory (REFERENCE §3.2, §9.2).

The rule under test (evidence/nki/README.md, "Undefined data"): every fresh result holds NaN
(integers: the sentinel) where its instruction's mask left it uncomputed, for element-wise ops and
reductions alike; reading undefined elements is only reported (`uninitialized_read`, high, at the
line of the first such read) when the values reach an HBM write. Valid ragged-tile kernels compute
unmasked on garbage rows and store masked: no finding.
"""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import marked_line, run_source

RNG = np.random.default_rng(77)
X = RNG.standard_normal((128, 64)).astype(np.float32)
LIVE = 100  # rows a partition mask keeps


def _findings(sim) -> list[tuple[str, int, str]]:
    return [(f.code, f.line, f.severity) for f in sim.report.findings]


# --- the SB-4 repros: a masked result read unmasked and stored -------------------------------

REPRO = {
    "reduction": ("nl.sum(x, axis=[1], mask=(i_p < 100))", lambda x: x + x.sum(axis=1, keepdims=True)),
    "reduction_keepdims": ("nl.max(x, axis=[1], keepdims=True, mask=(i_p < 100))", lambda x: x + x.max(axis=1, keepdims=True)),
    "tensor_reduce": ("nisa.tensor_reduce(np.add, x, axis=[1], mask=(i_p < 100))", lambda x: x + x.sum(axis=1, keepdims=True)),
    "elementwise": ("nl.exp(x, mask=(i_p < 100))", lambda x: x + np.exp(x)),
    "activation_reduce": ("nisa.activation(op=nl.exp, data=x, mask=(i_p < 100))", lambda x: x + np.exp(x)),
}


@pytest.mark.parametrize("name", sorted(REPRO))
def test_masked_result_read_unmasked_reaches_output(name):
    expr, ref = REPRO[name]
    body = f"""
        def kernel(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            i_p = nl.arange(128)[:, None]
            i_f = nl.arange(a.shape[1])[None, :]
            x = nl.load(a[i_p, i_f])
            s = {expr}
            y = nl.add(x, s)  # <-
            nl.store(out[i_p, i_f], value=y)
            return out
    """
    sim, src = run_source(body, "kernel", X)
    got = sim.outputs[0]
    assert np.isnan(got[LIVE:]).all(), "masked-out rows of the fresh result must read back as NaN"
    np.testing.assert_allclose(got[:LIVE], ref(X.astype(np.float64))[:LIVE], rtol=2e-5, atol=1e-5)
    assert _findings(sim) == [("uninitialized_read", marked_line(src), "high")]
    assert "written at k.py:" in sim.report.findings[0].message


def test_sb4_repro_kernels_both_operands_masked():
    """/tmp/repro/masked_fresh.py: nl.add(e, s) of a masked exp and a masked sum."""
    body = """
        def kernel(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            i_p = nl.arange(128)[:, None]
            i_f = nl.arange(a.shape[1])[None, :]
            x = nl.load(a[i_p, i_f])
            e = nl.exp(x, mask=(i_p < 100))
            s = nl.sum(x, axis=[1], mask=(i_p < 100))
            r = nl.add(e, s)  # <-
            nl.store(out[i_p, i_f], value=r)
            return out
    """
    sim, src = run_source(body, "kernel", X)
    x = X.astype(np.float64)
    np.testing.assert_allclose(sim.outputs[0][:LIVE], (np.exp(x) + x.sum(1, keepdims=True))[:LIVE], rtol=2e-5, atol=1e-5)
    assert np.isnan(sim.outputs[0][LIVE:]).all()
    assert _findings(sim) == [("uninitialized_read", marked_line(src), "high")]


def test_undefined_values_are_traced_through_later_instructions():
    """The finding names the read of undefined data, not the store several instructions later."""
    body = """
        def kernel(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            x = nl.load(a)
            s = nl.sum(x, axis=[1], keepdims=True, mask=(nl.arange(128)[:, None] < 100))
            r = nl.reciprocal(s)  # <-
            y = nl.multiply(x, r)
            z = nl.exp(y)
            nl.store(out, value=z)
            return out
    """
    sim, src = run_source(body, "kernel", X)
    assert np.isnan(sim.outputs[0][LIVE:]).all() and not np.isnan(sim.outputs[0][:LIVE]).any()
    assert _findings(sim) == [("uninitialized_read", marked_line(src), "high")]


def test_store_masked_to_the_defined_rows_is_clean():
    body = """
        def kernel(a):
            out = nl.ndarray((100, a.shape[1]), dtype=a.dtype, buffer=nl.shared_hbm)
            i_p = nl.arange(128)[:, None]
            i_f = nl.arange(a.shape[1])[None, :]
            x = nl.load(a[i_p, i_f])
            s = nl.sum(x, axis=[1], mask=(i_p < 100))
            y = nl.add(x, s)
            nl.store(out[i_p, i_f], value=y, mask=(i_p < 100))
            return out
    """
    sim, _ = run_source(body, "kernel", X)
    np.testing.assert_allclose(sim.outputs[0][:LIVE], (X + X.sum(1, keepdims=True))[:LIVE], rtol=2e-5, atol=1e-5)
    assert not sim.report.findings


# --- valid ragged kernels: garbage rows computed, never stored ---------------------------------

RAGGED_SOFTMAX = """
    def kernel(a):
        n, m = a.shape
        out = nl.ndarray((n, m), dtype=a.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(m)[None, :]
        for t in nl.affine_range((n + 127) // 128):
            rows = t * 128 + i_p
            x = nl.load(a[rows, i_f], mask=(rows < n))
            mx = nl.max(x, axis=[1], keepdims=True)      # unmasked: reads the garbage rows
            e = nl.exp(nl.subtract(x, mx))
            s = nl.sum(e, axis=[1])
            y = nl.multiply(e, nl.reciprocal(s))
            nl.store(out[rows, i_f], value=y, mask=(rows < n))
        return out
"""


def _softmax(a):
    e = np.exp(a - a.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def test_valid_ragged_softmax_has_no_finding():
    a = RNG.standard_normal((300, 48)).astype(np.float32)
    sim, _ = run_source(RAGGED_SOFTMAX, "kernel", a)
    np.testing.assert_allclose(sim.outputs[0], _softmax(a.astype(np.float64)), rtol=1e-5, atol=1e-7)
    assert not sim.report.findings


def test_ragged_softmax_with_a_too_narrow_reduction_mask_is_reported():
    """The corpus mutation that found SB-4: the row-sum mask drops the last live rows."""
    body = """
        def kernel(a):
            n, m = a.shape
            out = nl.ndarray((n, m), dtype=a.dtype, buffer=nl.shared_hbm)
            i_p = nl.arange(128)[:, None]
            i_f = nl.arange(m)[None, :]
            for t in nl.affine_range((n + 127) // 128):
                live = t * 128 + i_p < n
                x = nl.load(a[t * 128 + i_p, i_f], mask=live)
                e = nl.exp(x, mask=live)
                s = nl.sum(e, axis=[1], mask=(t * 128 + i_p < n - 5))
                y = nl.divide(e, s, mask=live)  # <-
                nl.store(out[t * 128 + i_p, i_f], value=y, mask=live)
            return out
    """
    a = RNG.standard_normal((200, 32)).astype(np.float32)
    sim, src = run_source(body, "kernel", a)
    got = sim.outputs[0]
    assert np.isnan(got[195:]).all() and not np.isnan(got[:195]).any()
    np.testing.assert_allclose(got[:195], _softmax(a.astype(np.float64))[:195], rtol=1e-5, atol=1e-7)
    assert _findings(sim) == [("uninitialized_read", marked_line(src), "high")]


def test_partly_written_buffer_used_like_a_ragged_tile_is_clean():
    """Never-written memory follows the same rule as masked-out results."""
    body = """
        def kernel(a):
            out = nl.ndarray((100, 64), dtype=a.dtype, buffer=nl.shared_hbm)
            buf = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
            buf[0:100, :] = nl.load(a[0:100, :])
            r = nl.exp(buf)
            nl.store(out, value=r[0:100, :])
            return out
    """
    sim, _ = run_source(body, "kernel", X)
    np.testing.assert_allclose(sim.outputs[0][:LIVE], np.exp(X[:LIVE]), rtol=1e-6)
    assert not sim.report.findings


def test_direct_store_of_an_integer_masked_result_is_reported_at_the_store():
    body = """
        def kernel(a):
            out = nl.ndarray((128, 64), dtype=nl.int32, buffer=nl.shared_hbm)
            buf = nl.ndarray((128, 64), dtype=nl.int32, buffer=nl.sbuf)
            buf[0:100, :] = nl.load(a[0:100, :])
            nl.store(out, value=buf)  # <-
            return out
    """
    ints = RNG.integers(0, 50, (128, 64)).astype(np.int32)
    sim, src = run_source(body, "kernel", ints)
    np.testing.assert_array_equal(sim.outputs[0][:LIVE], ints[:LIVE])
    assert _findings(sim) == [("uninitialized_read", marked_line(src), "high")]


def test_undefined_indirect_index_is_reported_where_it_is_used():
    body = """
        def kernel(a):
            out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
            i_p = nl.arange(128)[:, None]
            i_f = nl.arange(64)[None, :]
            idx = nisa.iota(i_p, dtype=nl.int32, mask=(i_p < 100))
            g = nl.load(a[idx, i_f])  # <-
            nl.store(out[i_p, i_f], value=g, mask=(i_p < 100))
            return out
    """
    sim, src = run_source(body, "kernel", X)
    assert ("uninitialized_read", marked_line(src), "high") in _findings(sim)


# --- masked differential rows: every reduction family, masked-in values and masked-out NaN -------

P_LIVE, F_LIVE = 100, 40
XM = X[:P_LIVE, :F_LIVE].astype(np.float64)  # the elements a (i_p < 100) & (i_f < 40) mask keeps
BOTH = "(i_p < 100) & (i_f < 40)"


def _top8(a):
    return -np.sort(-a, axis=1)[:, :8]


# name -> (expression of x, i_p, i_f; reference on the masked-in block; rows of the result it defines)
MASKED = {
    "sum": (f"nl.sum(x, axis=[1], keepdims=True, mask={BOTH})", lambda a: a.sum(1, keepdims=True)),
    "max": (f"nl.max(x, axis=[1], keepdims=True, mask={BOTH})", lambda a: a.max(1, keepdims=True)),
    "min": (f"nl.min(x, axis=[1], keepdims=True, mask={BOTH})", lambda a: a.min(1, keepdims=True)),
    "mean": (f"nl.mean(x, axis=[1], keepdims=True, mask={BOTH})", lambda a: a.mean(1, keepdims=True)),
    "var": (f"nl.var(x, axis=[1], keepdims=True, mask={BOTH})", lambda a: a.var(1, keepdims=True)),
    "prod": (f"nl.prod(nl.multiply(x, 0.1), axis=[1], keepdims=True, mask={BOTH})",
             lambda a: (0.1 * a).prod(1, keepdims=True)),
    "sum_no_keepdims": (f"nl.sum(x, axis=[1], mask={BOTH})", lambda a: a.sum(1, keepdims=True)),
    "tensor_reduce": (f"nisa.tensor_reduce(np.max, x, axis=[1], keepdims=True, mask={BOTH})",
                      lambda a: a.max(1, keepdims=True)),
    "bn_stats_aggr": ("nisa.bn_aggr(nisa.bn_stats(x, mask=(i_p < 100)), mask=(i_p < 100))",
                      None),  # checked on the whole row block below
    "max8": (f"nisa.max8(src=x, mask={BOTH})", _top8),
    "match_replace8": ("nisa.nc_match_replace8(data=x, vals=nisa.max8(src=x), imm=-100.0, mask=(i_p < 100))", None),
}


def _masked_kernel(expr: str) -> str:
    return f"""
        def kernel(a):
            i_p = nl.arange(128)[:, None]
            i_f = nl.arange(64)[None, :]
            x = nl.load(a[i_p, i_f])
            r = {expr}
            c = nl.copy(r, dtype=nl.float32)  # <-
            out = nl.ndarray(c.shape, dtype=nl.float32, buffer=nl.shared_hbm)
            nl.store(out, value=c)
            return out
    """


@pytest.mark.parametrize("name", sorted(MASKED))
def test_masked_op_differential(name):
    expr, ref = MASKED[name]
    sim, src = run_source(_masked_kernel(expr), "kernel", X)
    got = np.asarray(sim.outputs[0], np.float64).reshape(128, -1)
    assert np.isnan(got[P_LIVE:]).all(), f"{name}: masked-out partitions must be NaN"
    if name == "bn_stats_aggr":
        rows = X[:P_LIVE].astype(np.float64)
        want = np.stack([rows.mean(1), rows.var(1)], axis=1)
    elif name == "match_replace8":
        want = X[:P_LIVE].astype(np.float64).copy()
        np.put_along_axis(want, np.argsort(-want, axis=1, kind="stable")[:, :8], -100.0, axis=1)
    else:
        want = ref(XM)
    np.testing.assert_allclose(got[:P_LIVE], want, rtol=2e-5, atol=1e-6)
    assert _findings(sim) == [("uninitialized_read", marked_line(src), "high")]


def test_masked_partition_reduce_thins_partitions_and_leaves_free_columns_undefined():
    sim, src = run_source(_masked_kernel(f"nisa.tensor_partition_reduce(np.add, x, mask={BOTH})"), "kernel", X)
    got = sim.outputs[0]
    np.testing.assert_allclose(got[0, :F_LIVE], XM.sum(0), rtol=2e-5, atol=1e-5)
    assert np.isnan(got[0, F_LIVE:]).all()
    assert _findings(sim) == [("uninitialized_read", marked_line(src), "high")]


def test_masked_integer_reduction_holds_the_sentinel():
    from evidence.nki.dtypes import INT_SENTINEL

    body = """
        def kernel(a):
            i_p = nl.arange(128)[:, None]
            i_f = nl.arange(64)[None, :]
            x = nl.load(a[i_p, i_f])
            r = nisa.tensor_reduce(np.bitwise_or, x, axis=[1], keepdims=True, mask=(i_p < 100) & (i_f < 40))
            out = nl.ndarray((128, 1), dtype=nl.int32, buffer=nl.shared_hbm)
            nl.store(out, value=r)  # <-
            return out
    """
    ints = RNG.integers(0, 1 << 20, (128, 64)).astype(np.int32)
    sim, src = run_source(body, "kernel", ints)
    np.testing.assert_array_equal(sim.outputs[0][:P_LIVE, 0], np.bitwise_or.reduce(ints[:P_LIVE, :F_LIVE], axis=1))
    # a masked result is never stored where it is undefined: those rows of the output stay unwritten
    assert [f.code for f in sim.report.findings] == ["output_not_fully_written"]
    r_body = body.replace("nl.store(out, value=r)", "nl.store(out, value=nl.copy(r))")
    sim, _ = run_source(r_body, "kernel", ints)
    assert (sim.outputs[0][P_LIVE:] == INT_SENTINEL).all()


@pytest.mark.parametrize("which", ["activation_reduce", "tensor_scalar_reduce"])
def test_masked_reduce_res_keeps_old_values_on_masked_out_partitions(which):
    call = ("nisa.activation_reduce(op=nl.exp, data=x, reduce_op=np.add, reduce_res=res, mask=(i_p < 100))"
            if which == "activation_reduce" else
            "nisa.tensor_scalar_reduce(data=x, op0=np.multiply, operand0=2.0, reduce_op=np.add, reduce_res=res, "
            "mask=(i_p < 100))")
    body = f"""
        def kernel(a):
            i_p = nl.arange(128)[:, None]
            i_f = nl.arange(64)[None, :]
            x = nl.load(a[i_p, i_f])
            res = nl.full((128, 1), -7.0, dtype=nl.float32)
            t = {call}
            out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
            nl.store(out, value=res)
            return out
    """
    sim, _ = run_source(body, "kernel", X)
    got = sim.outputs[0][:, 0]
    x = X[:P_LIVE].astype(np.float64)
    want = np.exp(x).sum(1) if which == "activation_reduce" else (2 * x).sum(1)
    np.testing.assert_allclose(got[:P_LIVE], want, rtol=2e-5, atol=1e-5)
    assert (got[P_LIVE:] == -7.0).all()
    assert not sim.report.findings


def test_undefined_values_accumulated_in_place_are_traced_to_the_read():
    """`acc += t` takes the in-place fp32 fast path; the accumulator still carries the origin."""
    body = """
        def kernel(a):
            out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
            i_p = nl.arange(128)[:, None]
            i_f = nl.arange(64)[None, :]
            x = nl.load(a[i_p, i_f], mask=(i_p < 100))
            acc = nl.zeros((128, 64), nl.float32)
            for k in nl.sequential_range(2):
                acc += nl.exp(x)  # <-
            nl.store(out, value=acc)
            return out
    """
    sim, src = run_source(body, "kernel", X)
    np.testing.assert_allclose(sim.outputs[0][:LIVE], 2 * np.exp(X[:LIVE]), rtol=1e-6)
    assert np.isnan(sim.outputs[0][LIVE:]).all()
    assert _findings(sim) == [("uninitialized_read", marked_line(src), "high")]


def test_matmul_operand_masked_result_takes_part_only_where_defined():
    """A masked result used as a matmul operand acts as operand masking (its masked-out elements take
    no part), like `x[i_p < 100]`: nothing undefined is read."""
    body = """
        def kernel(a):
            out = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.shared_hbm)
            i_p = nl.arange(128)[:, None]
            i_f = nl.arange(64)[None, :]
            x = nl.load(a[i_p, i_f], mask=(i_p < 100))
            acc = nl.zeros((64, 64), nl.float32, buffer=nl.psum)
            acc += nl.matmul(x, x, transpose_x=True)
            nl.store(out, value=nl.copy(acc))
            return out
    """
    sim, _ = run_source(body, "kernel", X)
    x = X[:LIVE].astype(np.float64)
    np.testing.assert_allclose(sim.outputs[0], x.T @ x, rtol=1e-5, atol=1e-4)
    assert not sim.report.findings


def test_psum_accumulation_into_a_never_written_tile_starts_the_group():
    """`acc += nc_matmul(...)` into a PSUM `nl.ndarray` nothing wrote: the first matmul of the group
    overwrites (as nki 0.3+'s dst-first nc_matmul does), later ones add. A VectorE `+=` of another
    result onto the same kind of tile still reads undefined data."""
    body = """
        def kernel(a, b):
            out = nl.ndarray((64, 96), dtype=nl.float32, buffer=nl.shared_hbm)
            acc = nl.ndarray((64, 96), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(3):
                lhs = nl.load(a[k * 128:(k + 1) * 128, :])
                rhs = nl.load(b[k * 128:(k + 1) * 128, :])
                acc += nisa.nc_matmul(lhs, rhs)
            nl.store(out, value=nl.copy(acc))
            return out
    """
    a = RNG.standard_normal((384, 64)).astype(np.float32)
    b = RNG.standard_normal((384, 96)).astype(np.float32)
    sim, _ = run_source(body, "kernel", a, b)
    np.testing.assert_allclose(sim.outputs[0], a.T @ b, rtol=1e-4, atol=1e-4)
    assert _findings(sim) == []
    vector = body.replace("acc = nl.ndarray((64, 96), dtype=nl.float32, buffer=nl.psum)",
                          "acc = nl.ndarray((64, 96), dtype=nl.float32, buffer=nl.sbuf)")
    vector = vector.replace("acc += nisa.nc_matmul(lhs, rhs)", "acc += nl.copy(nisa.nc_matmul(lhs, rhs))  # <-")
    sim, src = run_source(vector, "kernel", a, b)
    assert np.isnan(sim.outputs[0]).all()
    assert _findings(sim) == [("uninitialized_read", marked_line(src), "high")]
