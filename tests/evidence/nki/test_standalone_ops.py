"""Differential tests of the standalone nki 0.3+ dialect: every dst-first `nisa` instruction against numpy.

Each row is a small kernel body written the 0.3+ way (`nisa.<op>(dst, ...)` into `nl.ndarray`
tiles, `nisa.dma_copy` in and out), run by the simulator and compared with a float64 numpy
reference. The module declares itself a standalone-dialect file (`__nki_dialect__`), as
`load_kernel` marks kernel files that import `nki`.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from evidence.nki import SimulationError, simulate
from evidence.nki.shim.standalone import isa as nisa
from evidence.nki.shim.standalone import language as nl

__nki_dialect__ = "standalone"

RNG = np.random.default_rng(2026)
P, F = 128, 64
X = RNG.standard_normal((P, F)).astype(np.float32)
Y = RNG.standard_normal((P, F)).astype(np.float32)
POS = RNG.uniform(0.5, 2.0, (P, F)).astype(np.float32)
COL = RNG.standard_normal((P, 1)).astype(np.float32)
INTS = RNG.integers(0, 1000, (P, F)).astype(np.int32)
SPARSE = np.where(RNG.random((P, F)) < 0.3, X, 0).astype(np.float32)
_erf = np.vectorize(math.erf)


def sb(shape, dtype=nl.float32):
    return nl.ndarray(shape, dtype=dtype, buffer=nl.sbuf)


def _kernel(fn):
    def kernel(*ins):
        tiles = []
        for x in ins:
            t = sb(x.shape, x.dtype)
            nisa.dma_copy(dst=t, src=x)
            tiles.append(t)
        r = fn(*tiles)
        out = nl.ndarray(r.shape, dtype=r.dtype, buffer=nl.shared_hbm)
        if r.buffer == nl.psum:  # 0.3+ DMA reads no PSUM: evict through SBUF
            s = sb(r.shape, r.dtype)
            nisa.tensor_copy(s, r)
            r = s
        nisa.dma_copy(dst=out, src=r)
        return out
    return kernel


def _unary(call):
    def fn(t):
        d = sb(t.shape)
        call(d, t)
        return d
    return fn


def _matmul_acc(s, m):
    acc = nl.ndarray((s.shape[1], m.shape[1]), dtype=nl.float32, buffer=nl.psum)
    for k in range(2):  # first overwrites the fresh PSUM tile, second accumulates
        nisa.nc_matmul(acc, s[k * 64:(k + 1) * 64, :], m[k * 64:(k + 1) * 64, :])
    return acc


def _matmul_modes(s, m):
    acc = nl.ndarray((s.shape[1], m.shape[1]), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(acc, s, m)
    nisa.nc_matmul(acc, s, m, accumulate=True)
    nisa.nc_matmul(acc, s, m, accumulate=True)
    nisa.nc_matmul(acc, s, m, accumulate=False)  # overwrite: only this product remains
    nisa.nc_matmul(acc, s, m, accumulate=True)
    return acc


def _transpose(engine):
    def fn(t):
        rows, cols = (t.shape[0], t.shape[1])
        d = nl.ndarray((cols, rows), dtype=t.dtype, buffer=nl.psum if engine == nisa.engine.tensor else nl.sbuf)
        nisa.nc_transpose(d, t, engine=engine)
        return d
    return fn


def _activation_registers(t, b):
    d, res = sb(t.shape), sb((t.shape[0], 1))
    nisa.activation(d, op=nl.exp, data=t, bias=b, scale=0.5, reduce_op=nl.add, reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nisa.activation(d, op=nl.exp, data=t, bias=b, scale=0.5, reduce_op=nl.add, reduce_res=res,
                    reduce_cmd=nisa.reduce_cmd.reduce)
    return res


def _activation_reduce(t, b):
    d, res = sb(t.shape), sb((t.shape[0], 1))
    nisa.activation_reduce(d, nl.tanh, t, nl.add, res, bias=b)
    return res


def _tensor_scalar_reduce(t):
    d, res = sb(t.shape), sb((t.shape[0], 1))
    nisa.tensor_scalar_reduce(d, t, nl.multiply, 3.0, nl.add, res)
    return res


def _bn(t):
    stats, aggr = sb((t.shape[0], 6)), sb((t.shape[0], 2))
    nisa.bn_stats(stats, t)
    nisa.bn_aggr(aggr, stats)
    return aggr


def _find_index(t):
    top, idx = sb((t.shape[0], 8)), sb((t.shape[0], 8), nl.uint32)
    nisa.max8(top, t)
    nisa.nc_find_index8(idx, t, top)
    return idx


def _match_replace(t):
    top, d = sb((t.shape[0], 8)), sb(t.shape)
    nisa.max8(top, t)
    nisa.nc_match_replace8(d, t, top, -100.0)
    return d


def _replace_top8(a):
    out = a.copy()
    np.put_along_axis(out, np.argsort(-a, axis=1, kind="stable")[:, :8], -100.0, axis=1)
    return out


def _scan(a, b, init):
    d = sb(a.shape)
    nisa.tensor_tensor_scan(d, a, b, init, nl.multiply, nl.add)
    return d


def _scan_ref(a, b, init):
    out, prev = np.empty_like(a), init[:, 0]
    for i in range(a.shape[1]):
        prev = a[:, i] * prev + b[:, i]
        out[:, i] = prev
    return out


def _predicated(t, u, p):
    d = sb(u.shape)
    nisa.tensor_copy(d, u)
    nisa.tensor_copy_predicated(d, t, p)
    return d


def _shuffle(t):
    d = sb(t.shape)
    nisa.tensor_copy(d, t)
    nisa.nc_stream_shuffle(d, t, [31 - i for i in range(32)])
    return d


def _shuffle_ref(a):
    out = a.copy()
    for q in range(0, P, 32):
        out[q:q + 32] = a[q:q + 32][::-1]
    return out


def _memset_iota():
    d = sb((P, F), nl.int32)
    nisa.iota(d, [[1, F]], offset=5, channel_multiplier=F)
    return d


def _memset():
    d = sb((P, F), nl.int32)
    nisa.memset(d, 7)
    return d


def _affine_select(t):
    d = sb(t.shape)
    nisa.affine_select(d, [[-1, F]], 1, t, -9.0, cmp_op=nl.greater_equal)  # keep where p - j >= 0
    return d


def _local_gather(t, idx):
    d = sb((P, 32, 2))
    nisa.local_gather(d, t, idx, num_elem_per_idx=2)
    return d


def _local_gather_ref(a, idx):
    out = np.empty((P, 32, 2))
    for core in range(0, P, 16):
        for j, s0 in enumerate(idx[core:core + 16].astype(np.int64).flatten(order="F")):
            out[core:core + 16, j] = a[core:core + 16, s0:s0 + 2]
    return out


def _n_gather(t, idx):
    d = sb(idx.shape)
    nisa.nc_n_gather(d, t, idx)
    return d


def _bounds(seg):
    d = sb((1, 2, seg.shape[1]))
    nisa.sequence_bounds(d, seg)
    return d


def _bounds_ref(ids):
    seq, n = ids[0], ids.shape[1]
    start, end = np.zeros(n), np.zeros(n)
    for i in range(n):
        start[i] = n if seq[i] == 0 else (start[i - 1] if i and seq[i] == seq[i - 1] else i)
    for i in reversed(range(n)):
        end[i] = -1 if seq[i] == 0 else (end[i + 1] if i < n - 1 and seq[i] == seq[i + 1] else i + 1)
    return np.stack([start, end])[None]


def _nonzero(t):
    d = sb((P, F + 1), nl.int32)
    nisa.memset(d, 0)
    nisa.nonzero_with_count(d, t, index_offset=100, padding_val=-1)
    return d


def _nonzero_ref(a):
    out = np.zeros((P, F + 1))
    for p in range(0, P, 16):
        hits = np.flatnonzero(a[p] != 0)
        out[p, :] = -1
        out[p, :hits.size], out[p, -1] = hits + 100, hits.size
    return out


def _range_select(t, lo, hi):
    d, res = sb(t.shape), sb((t.shape[0], 1))
    nisa.range_select(d, t, nl.greater_equal, nl.less, lo, hi, reduce_res=res, range_start=4,
                      on_false_value=nl.fp32.min)
    return res


def _range_select_ref(a, lo, hi):
    idx = 4 + np.arange(F)[None, :]
    return np.where((idx >= lo) & (idx < hi), a, np.finfo(np.float32).min).max(axis=1, keepdims=True)


def _select_reduce(t, p):
    d, res = sb(t.shape), sb((t.shape[0], 1))
    nisa.select_reduce(d, p, t, -7.0, reduce_res=res, reduce_cmd=nisa.reduce_cmd.reset_reduce)
    return d


def _dynamic_copies(t, cols):
    d = sb((P, 8))
    back = sb(t.shape)
    nisa.memset(back, 0.0)
    for j in range(8):
        nisa.tensor_copy_dynamic_src(d[:, j:j + 1], t.ap([[F, P], [1, 1]], scalar_offset=cols[0:1, j:j + 1],
                                                          indirect_dim=1))
        nisa.tensor_copy_dynamic_dst(back.ap([[F, P], [1, 1]], scalar_offset=cols[0:1, j:j + 1], indirect_dim=1),
                                     d[:, j:j + 1])
    return back


def _dynamic_ref(a, cols):
    out = np.zeros_like(a)
    out[:, cols[0]] = a[:, cols[0]]
    return out


def _dma_compute(t, u):
    d = sb(t.shape)
    nisa.dma_copy(d, t)
    nisa.dma_compute(d, [u, d], nl.add)
    return d


def _dma_transpose(t):
    d = sb((t.shape[1], t.shape[0]))
    nisa.dma_transpose(d, t)
    return d


def _access_patterns(t):
    """Static .ap views: a transposed read of a [P, F] tile's first 64 columns, a stride-0 broadcast."""
    d = sb((F, F))
    nisa.tensor_copy(d, t.ap([[1, F], [F, F]]))  # d[i, j] = t[j, i] for j < 64
    b = sb((F, F))
    nisa.tensor_copy(b, t.ap([[0, F], [1, F]], offset=F * 3))  # every row: t[3, :]
    s = sb((F, F))
    nisa.tensor_tensor(s, d, b, nl.add)
    return s


ROWS: dict[str, tuple] = {
    "dma_copy": (lambda t: t, (X,), lambda a: a, 0, 0),
    "tensor_copy": (_unary(lambda d, t: nisa.tensor_copy(d, t, engine=nisa.engine.scalar)), (X,), lambda a: a, 0, 0),
    "tensor_tensor": (lambda t, u: (lambda d: (nisa.tensor_tensor(d, t, u, nl.subtract), d)[1])(sb(t.shape)),
                      (X, Y), np.subtract, 1e-6, 1e-6),
    "tensor_scalar": (_unary(lambda d, t: nisa.tensor_scalar(d, t, nl.multiply, 2.0, op1=nl.add, operand1=-1.0)),
                      (X,), lambda a: 2 * a - 1, 1e-6, 1e-6),
    "tensor_reduce": (lambda t: (lambda d: (nisa.tensor_reduce(d, nl.maximum, t, axis=1), d)[1])(sb((P, 1))),
                      (X,), lambda a: a.max(axis=1, keepdims=True), 0, 0),
    "tensor_partition_reduce": (lambda t: (lambda d: (nisa.tensor_partition_reduce(d, nl.add, t), d)[1])(sb((1, F))),
                                (X,), lambda a: a.sum(axis=0, keepdims=True), 1e-5, 1e-5),
    "activation": (_activation_registers, (X, COL),
                   lambda a, c: 2 * np.exp(0.5 * a + c).sum(axis=1, keepdims=True), 1e-5, 1e-5),
    "activation_reduce": (_activation_reduce, (X, COL), lambda a, c: np.tanh(a + c).sum(axis=1, keepdims=True),
                          1e-5, 1e-5),
    "tensor_tensor_scan": (_scan, (0.5 * X, Y, COL), _scan_ref, 1e-5, 1e-6),
    "scalar_tensor_tensor": (lambda t, u: (lambda d: (nisa.scalar_tensor_tensor(d, t, nl.subtract, 1.0, nl.multiply,
                                                                                 u), d)[1])(sb(t.shape)),
                             (X, Y), lambda a, b: (a - 1) * b, 1e-6, 1e-6),
    "tensor_scalar_reduce": (_tensor_scalar_reduce, (X,), lambda a: (3 * a).sum(axis=1, keepdims=True), 1e-5, 1e-5),
    "nc_matmul": (_matmul_acc, (X[:, :32].copy(), Y), lambda a, b: a.T @ b, 1e-5, 1e-5),
    "nc_matmul_accumulate_modes": (_matmul_modes, (X[:, :32].copy(), Y), lambda a, b: 2 * (a.T @ b), 1e-5, 1e-5),
    "nc_transpose": (_transpose(nisa.engine.tensor), (X,), lambda a: a.T, 0, 0),
    "nc_transpose_vector": (_transpose(nisa.engine.vector), (X[:32, :32].copy(),), lambda a: a.T, 0, 0),
    "dma_transpose": (_dma_transpose, (X,), lambda a: a.T, 0, 0),
    "reciprocal": (_unary(nisa.reciprocal), (POS,), lambda a: 1 / a, 1e-6, 0),
    "bn_stats": (_bn, (X,), lambda a: np.stack([a.mean(axis=1), a.var(axis=1)], axis=1), 1e-5, 1e-6),
    "max8": (lambda t: (lambda d: (nisa.max8(d, t), d)[1])(sb((P, 8))), (X,),
             lambda a: -np.sort(-a, axis=1)[:, :8], 0, 0),
    "nc_find_index8": (_find_index, (X,), lambda a: np.argsort(-a, axis=1, kind="stable")[:, :8], 0, 0),
    "nc_match_replace8": (_match_replace, (X,), _replace_top8, 0, 0),
    "dropout": (_unary(lambda d, t: nisa.dropout(d, t, 0.0)), (X,), lambda a: a, 0, 0),
    "local_gather": (_local_gather, (X, RNG.integers(0, F - 2, (P, 2)).astype(np.uint16)), _local_gather_ref, 0, 0),
    "nc_n_gather": (_n_gather, (X, (INTS % F).astype(np.uint32)),
                    lambda a, i: np.take_along_axis(a, i.astype(np.int64), 1), 0, 0),
    "sequence_bounds": (_bounds, (np.sort(RNG.integers(0, 5, (1, F))).astype(np.int32),), _bounds_ref, 0, 0),
    "nonzero_with_count": (_nonzero, (SPARSE,), _nonzero_ref, 0, 0),
    "range_select": (_range_select, (X, np.full((P, 1), 3.0, np.float32), np.full((P, 1), 40.0, np.float32)),
                     _range_select_ref, 0, 0),
    "select_reduce": (_select_reduce, (X, (INTS % 2).astype(np.uint8)), lambda a, p: np.where(p != 0, a, -7.0), 0, 0),
    "tensor_copy_predicated": (_predicated, (X, Y, (INTS % 2).astype(np.uint8)),
                               lambda a, b, p: np.where(p != 0, a, b), 0, 0),
    "nc_stream_shuffle": (_shuffle, (X,), _shuffle_ref, 0, 0),
    "tensor_copy_dynamic_src": (_dynamic_copies, (X, RNG.permutation(F)[:8].astype(np.int32).reshape(1, 8)),
                                _dynamic_ref, 0, 0),
    "dma_compute": (_dma_compute, (X, Y), np.add, 1e-6, 1e-6),
    "memset": (_memset, (), lambda: np.full((P, F), 7.0), 0, 0),
    "iota": (_memset_iota, (), lambda: 5 + F * np.arange(P)[:, None] + np.arange(F)[None, :], 0, 0),
    "affine_select": (_affine_select, (X,), lambda a: np.where(np.arange(P)[:, None] - np.arange(F)[None, :] >= 0,
                                                                a, -9.0), 0, 0),
    "access_patterns": (_access_patterns, (X,), lambda a: a[:F].T + np.broadcast_to(a[3], (F, F)), 1e-6, 1e-6),
    "nl_convenience": (lambda t, u: nl.multiply(nl.exp(t), nl.add(u, 1.0)), (X, Y), lambda a, b: np.exp(a) * (b + 1),
                       1e-5, 1e-6),
}
# adapters exercised by another row
COVERED_BY = {"bn_aggr": "bn_stats", "tensor_copy_dynamic_dst": "tensor_copy_dynamic_src"}


def test_every_dst_first_instruction_has_a_row():
    public = set(nisa._SIGNATURES) | {"dma_copy", "memset", "iota", "affine_select", "nc_matmul",
                                      "tensor_copy_predicated", "nc_stream_shuffle", "tensor_copy_dynamic_dst",
                                      "dma_compute"}
    missing = sorted(public - set(ROWS) - set(COVERED_BY))
    assert not missing, f"standalone instructions without a differential row: {missing}"


@pytest.mark.parametrize("name", sorted(ROWS))
def test_dst_first_instruction_matches_numpy(name):
    fn, inputs, ref, rtol, atol = ROWS[name]
    sim = simulate(_kernel(fn), *inputs)
    assert sim.report.dialect == "standalone"
    got = np.asarray(sim.outputs[0]).astype(np.float64)
    expected = np.asarray(ref(*[np.asarray(i, dtype=np.float64) if i.dtype.kind == "f" else i for i in inputs]))
    expected = expected.astype(np.float64).reshape(got.shape) if expected.size == got.size else expected
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
    assert not [f for f in sim.report.findings if f.severity in ("high", "critical")], sim.report.findings


def _run(body):
    return simulate(_kernel(body), X)


@pytest.mark.parametrize("body, code", [
    (lambda t: (lambda p: (nisa.nc_matmul(p, t[:, :32], t), nisa.dma_copy(sb(p.shape), p)))(
        nl.ndarray((32, F), dtype=nl.float32, buffer=nl.psum))[0], "err_unsupported_memory"),  # DMA from PSUM
    (lambda t: nisa.tensor_tensor(sb(t.shape), t, t, nl.add, mask=None), "err_removed_argument"),
    (lambda t: nisa.tensor_copy(sb(t.shape), t, engine=2), "err_invalid_enum"),
    (lambda t: nisa.dma_copy(sb(t.shape, nl.bfloat16), t, dge_mode=nisa.dge_mode.hwdge), "err_dtype_mismatch"),
    (lambda t: nisa.memset(sb(t.shape, nl.int32), 2.5), "err_dtype_mismatch"),
    (lambda t: nl.ndarray(t.shape, dtype=nl.float32, buffer="sbuf"), "err_invalid_buffer"),
    (lambda t: nisa.nc_matmul(sb((F, F)), t, t), "err_unsupported_memory"),  # TensorE writes PSUM
    (lambda t: nisa.tensor_tensor(sb((P, 8)), t, t, nl.add), "err_shape_mismatch"),
    (lambda t: nl.exp(t, mask=None), "err_removed_argument"),
])
def test_standalone_constraints_name_the_code(body, code):
    with pytest.raises(SimulationError) as info:
        _run(body)
    assert info.value.code == code, info.value


def test_returned_outputs_must_be_shared_hbm_and_arguments_may_be_written_and_returned():
    def private_out(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.hbm)
        nisa.dma_copy(dst=out, src=a)
        return out

    with pytest.raises(SimulationError) as info:
        simulate(private_out, X)
    assert info.value.code == "err_unsupported_memory" and "shared_hbm" in info.value.message

    def in_place(a):
        t = sb(a.shape)
        nisa.dma_copy(dst=t, src=a)
        nisa.tensor_scalar(t, t, nl.multiply, 2.0)
        nisa.dma_copy(dst=a, src=t)
        return a

    sim = simulate(in_place, X.copy())
    np.testing.assert_array_equal(sim.outputs[0], 2 * X)


def test_vector_offset_access_pattern_gathers_rows():
    table = RNG.standard_normal((300, F)).astype(np.float32)
    rows = RNG.integers(0, 300, (P, 1)).astype(np.int32)

    def gather(tab, idx):
        i = sb(idx.shape, nl.int32)
        nisa.dma_copy(dst=i, src=idx)
        d = sb((P, F))
        nisa.dma_copy(dst=d, src=tab.ap([[F, P], [1, F]], vector_offset=i, indirect_dim=0))
        out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=d)
        return out

    sim = simulate(gather, table, rows)
    np.testing.assert_array_equal(sim.outputs[0], table[rows[:, 0]])
    bad = rows.copy()
    bad[5] = 300
    with pytest.raises(SimulationError) as info:
        simulate(gather, table, bad)
    assert info.value.code == "err_tensor_access_out_of_bound"
