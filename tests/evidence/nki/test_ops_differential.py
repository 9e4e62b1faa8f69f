"""Differential tests: every op in the simulator's table against plain numpy (float64 references).

One row per op. Each row builds tiles from numpy inputs inside a small kernel, applies the op and
returns the result; the reference is computed independently in float64. Tolerances are stated per
row (fp32 arithmetic: rtol 1e-5 unless the op is an approximation or accumulates).
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from evidence.nki import simulate
from evidence.nki.ops import OPS
from evidence.nki.shim import isa as nisa
from evidence.nki.shim import language as nl

RNG = np.random.default_rng(1234)
P, F = 128, 64
X = RNG.standard_normal((P, F)).astype(np.float32)
Y = RNG.standard_normal((P, F)).astype(np.float32)
POS = RNG.uniform(0.1, 3.0, (P, F)).astype(np.float32)
SMALL = RNG.uniform(-1.0, 1.0, (P, F)).astype(np.float32)
INTS = RNG.integers(0, 1000, (P, F)).astype(np.int32)
INTS2 = RNG.integers(1, 7, (P, F)).astype(np.int32)
COL = RNG.standard_normal((P, 1)).astype(np.float32)
_erf = np.vectorize(math.erf)


def _tiles_kernel(fn):
    def kernel(*ins):
        tiles = [nl.load(x) for x in ins]
        r = fn(*tiles)
        out = nl.ndarray(r.shape, dtype=r.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=r)
        return out
    return kernel


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x):
    return np.log1p(np.exp(x))


UNARY_REF = {
    "abs": (np.abs, X), "negative": (np.negative, X), "sign": (np.sign, X), "trunc": (np.trunc, 3 * X),
    "floor": (np.floor, 3 * X), "ceil": (np.ceil, 3 * X), "exp": (np.exp, X), "log": (np.log, POS),
    "cos": (np.cos, X), "sin": (np.sin, X), "tan": (np.tan, SMALL), "tanh": (np.tanh, X), "arctan": (np.arctan, X),
    "sqrt": (np.sqrt, POS), "rsqrt": (lambda x: 1 / np.sqrt(x), POS), "reciprocal": (lambda x: 1 / x, POS),
    "sigmoid": (_sig, X), "relu": (lambda x: np.maximum(x, 0), X),
    "gelu": (lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))), X),
    "gelu_dx": (lambda x: 0.5 * (1 + _erf(x / math.sqrt(2))) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi), X),
    "gelu_apprx_tanh": (lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))), X),
    "gelu_apprx_sigmoid": (lambda x: x * _sig(1.702 * x), X), "silu": (lambda x: x * _sig(x), X),
    "silu_dx": (lambda x: _sig(x) * (1 + x * (1 - _sig(x))), X), "erf": (_erf, X),
    "erf_dx": (lambda x: 2 / math.sqrt(math.pi) * np.exp(-x * x), X), "softplus": (_softplus, X),
    "mish": (lambda x: x * np.tanh(_softplus(x)), X), "square": (np.square, X),
    "invert": (np.invert, INTS), "logical_not": (np.logical_not, (X > 0).astype(np.int32)),
}
BINARY_REF = {
    "add": (np.add, X, Y), "subtract": (np.subtract, X, Y), "multiply": (np.multiply, X, Y),
    "divide": (np.divide, X, POS), "power": (np.power, POS, Y), "maximum": (np.maximum, X, Y),
    "minimum": (np.minimum, X, Y), "mod": (np.mod, 5 * X, POS), "fmod": (np.fmod, 5 * X, POS),
    "bitwise_and": (np.bitwise_and, INTS, INTS2), "bitwise_or": (np.bitwise_or, INTS, INTS2),
    "bitwise_xor": (np.bitwise_xor, INTS, INTS2), "left_shift": (np.left_shift, INTS, INTS2),
    "right_shift": (np.right_shift, INTS, INTS2), "equal": (np.equal, INTS % 3, INTS2 % 3),
    "not_equal": (np.not_equal, INTS % 3, INTS2 % 3), "greater": (np.greater, X, Y),
    "greater_equal": (np.greater_equal, X, Y), "less": (np.less, X, Y), "less_equal": (np.less_equal, X, Y),
    "logical_and": (np.logical_and, INTS % 2, INTS2 % 2), "logical_or": (np.logical_or, INTS % 2, INTS2 % 2),
    "logical_xor": (np.logical_xor, INTS % 2, INTS2 % 2),
}
REDUCE_REF = {"sum": np.sum, "max": np.max, "min": np.min, "mean": np.mean, "var": np.var}
# A product of 64 factors in [-1, 1] is ~1e-20, which an all-zero result matches within any atol:
# factors near 1 keep it of order 1. `all` needs rows that are true and rows that are not.
NEAR_ONE = RNG.uniform(0.9, 1.1, (P, F)).astype(np.float32)
MOSTLY_ONES = np.ones((P, F), np.float32)
MOSTLY_ONES[::2, RNG.integers(0, F, P // 2)] = 0.0  # every even row has a zero


def _bn_ref(x):
    return np.stack([x.mean(axis=1), x.var(axis=1)], axis=1)


def _scan_ref(a, b, init):
    out = np.empty_like(a, dtype=np.float64)
    prev = init.astype(np.float64)[:, 0]
    for i in range(a.shape[1]):
        prev = a[:, i] * prev + b[:, i]
        out[:, i] = prev
    return out


def _activation_reduce(x, b):
    res = nl.ndarray((P, 1), dtype=nl.float32)
    nisa.activation_reduce(op=nl.exp, data=x, bias=b, scale=0.5, reduce_op=nl.add, reduce_res=res)
    return res


def _tensor_scalar_reduce(x):
    res = nl.ndarray((P, 1), dtype=nl.float32)
    nisa.tensor_scalar_reduce(data=x, op0=np.multiply, operand0=2.0, reduce_op=np.add, reduce_res=res)
    return res


def _predicated(x, y, pred):
    dst = nl.copy(y)
    nisa.tensor_copy_predicated(src=x, dst=dst, predicate=pred)
    return dst


def _iota():
    return nisa.iota(nl.arange(P)[:, None] * 3 + nl.arange(F)[None, :], dtype=nl.int32)


def _memset():
    return nisa.memset((P, F), 2.5, nl.float32)


def _affine_select(x):
    ix, iy = nl.mgrid[0:P, 0:F]
    return nisa.affine_select(ix >= iy, x, -9.0)


def _gather(x, idx):
    return nl.gather_flattened(x, idx)


def _dma_copy(x):
    dst = nl.ndarray((P, F), dtype=nl.float32)
    nisa.dma_copy(dst=dst, src=x)
    return dst


def _loop_reduce(x):
    acc = nl.full((P, F), -1e30, dtype=nl.float32)
    for i in nl.affine_range(3):
        acc = nl.loop_reduce(nl.multiply(x, i), op=np.maximum, loop_indices=[i])
    return acc


def _full_like(x):
    return nl.add(nl.full_like(x, 3.0), nl.add(nl.zeros_like(x), nl.ones_like(x)))


def _constants(x):
    ident = nl.load(nl.shared_identity_matrix(P, dtype=nl.float32))
    const = nl.load(nl.shared_constant(np.full((P, F), 2.0, np.float32)))
    return nl.add(nl.matmul(ident, x, transpose_x=True), const)


def _expand_dims(c):
    return nl.multiply(nl.expand_dims(nl.sum(c, axis=[1]), 1), 2.0)


def _stream_shuffle(x):
    dst = nl.copy(x)
    nisa.nc_stream_shuffle(src=x, dst=dst, shuffle_mask=[0] * 16 + [255] * 16)
    return dst


def _shuffle_ref(a):
    out = a.copy()
    for q0 in range(0, P, 32):
        out[q0:q0 + 16] = a[q0]
    return out


def _replace_top8(a):
    out = a.copy()
    np.put_along_axis(out, np.argsort(-a, axis=1, kind="stable")[:, :8], -100.0, axis=1)
    return out


# name -> (kernel fn over tiles, inputs, reference over float64 inputs, rtol, atol)
ROWS: dict[str, tuple] = {}
for _n, (_f, _x) in UNARY_REF.items():
    ROWS[_n] = (lambda t, _n=_n: getattr(nl, _n)(t), (_x,), _f, 2e-5 if _n.startswith(("gelu", "erf")) else 1e-5, 1e-6)
for _n, (_f, _a, _b) in BINARY_REF.items():
    ROWS[_n] = (lambda s, t, _n=_n: getattr(nl, _n)(s, t), (_a, _b), _f, 1e-5, 1e-6)
for _n, _f in REDUCE_REF.items():
    ROWS[_n] = (lambda t, _n=_n: getattr(nl, _n)(t, axis=[1], keepdims=True), (SMALL,),
                lambda a, _f=_f: _f(a, axis=1, keepdims=True), 1e-4, 1e-6)
ROWS.update({
    "prod": (lambda t: nl.prod(t, axis=[1], keepdims=True), (NEAR_ONE,), lambda a: a.prod(axis=1, keepdims=True), 1e-4, 0),
    "all": (lambda t: nl.all(t, axis=[1], keepdims=True), (MOSTLY_ONES,), lambda a: a.all(axis=1, keepdims=True), 0, 0),
    "load": (lambda t: t, (X,), lambda a: a, 0, 0),
    "store": (lambda t: nl.multiply(t, 1.0), (X,), lambda a: a, 0, 0),
    "copy": (lambda t: nl.copy(t, dtype=nl.float32), (X,), lambda a: a, 0, 0),
    "nisa.tensor_copy": (lambda t: nisa.tensor_copy(t), (X,), lambda a: a, 0, 0),
    "astype": (lambda t: t.astype(nl.bfloat16), (X,), lambda a: a.astype(np.float32).astype(ml_dtypes.bfloat16), 0, 0),
    "broadcast_to": (lambda t: nl.broadcast_to(t[0:1, :], shape=(P, F)), (X,), lambda a: np.broadcast_to(a[0:1], (P, F)), 0, 0),
    "matmul": (lambda s, t: nl.matmul(s, t, transpose_x=True), (X[:, :32].copy(), Y), lambda a, b: a.T @ b, 1e-5, 1e-5),
    "nisa.nc_matmul": (lambda s, t: nisa.nc_matmul(s, t), (X[:, :48].copy(), Y), lambda a, b: a.T @ b, 1e-5, 1e-5),
    "transpose": (lambda t: nl.transpose(t), (X,), lambda a: a.T, 0, 0),
    "nisa.nc_transpose": (lambda t: nisa.nc_transpose(t), (X,), lambda a: a.T, 0, 0),
    "nisa.tensor_tensor": (lambda s, t: nisa.tensor_tensor(s, t, op=np.subtract), (X, Y), np.subtract, 1e-6, 1e-6),
    "nisa.tensor_scalar": (lambda t, c: nisa.tensor_scalar(t, np.multiply, c, op1=np.add, operand1=0.5), (X, COL),
                           lambda a, c: a * c + 0.5, 1e-6, 1e-6),
    "nisa.scalar_tensor_tensor": (lambda t, u: nisa.scalar_tensor_tensor(data=t, op0=np.subtract, operand0=1.0, op1=np.multiply, operand1=u),
                                  (X, Y), lambda a, b: (a - 1.0) * b, 1e-6, 1e-6),
    "nisa.activation": (lambda t, c: nisa.activation(op=nl.tanh, data=t, bias=c, scale=2.0), (X, COL),
                        lambda a, c: np.tanh(2 * a + c), 1e-5, 1e-6),
    "nisa.activation_reduce": (_activation_reduce, (X, COL), lambda a, c: np.exp(0.5 * a + c).sum(axis=1, keepdims=True), 1e-5, 1e-5),
    "nisa.tensor_reduce": (lambda t: nisa.tensor_reduce(np.max, t, axis=[1], keepdims=True), (X,), lambda a: a.max(axis=1, keepdims=True), 0, 0),
    "nisa.tensor_partition_reduce": (lambda t: nisa.tensor_partition_reduce(np.add, t), (SMALL,), lambda a: a.sum(axis=0, keepdims=True), 1e-5, 1e-5),
    "nisa.tensor_scalar_reduce": (_tensor_scalar_reduce, (SMALL,), lambda a: (2 * a).sum(axis=1, keepdims=True), 1e-5, 1e-5),
    "nisa.tensor_tensor_scan": (lambda a, b, c: nisa.tensor_tensor_scan(a, b, c, np.multiply, np.add), (0.5 * SMALL, SMALL, COL),
                                _scan_ref, 1e-5, 1e-6),
    "nisa.tensor_copy_predicated": (_predicated, (X, Y, (INTS % 2).astype(np.int32)), lambda a, b, p: np.where(p != 0, a, b), 0, 0),
    "nisa.iota": (_iota, (), lambda: np.arange(P)[:, None] * 3 + np.arange(F)[None, :], 0, 0),
    "nisa.memset": (_memset, (), lambda: np.full((P, F), 2.5), 0, 0),
    "nisa.affine_select": (_affine_select, (X,), lambda a: np.where(np.arange(P)[:, None] >= np.arange(F)[None, :], a, -9.0), 0, 0),
    "nisa.reciprocal": (lambda t: nisa.reciprocal(t), (POS,), lambda a: 1 / a, 1e-6, 0),
    "nisa.bn_stats": (lambda t: nisa.bn_aggr(nisa.bn_stats(t)), (X,), _bn_ref, 1e-5, 1e-6),
    "nisa.bn_aggr": (lambda t: nisa.bn_aggr(nl.copy(nisa.bn_stats(t))), (X,), _bn_ref, 1e-5, 1e-6),
    "nisa.max8": (lambda t: nisa.max8(src=t), (X,), lambda a: -np.sort(-a, axis=1)[:, :8], 0, 0),
    "nisa.dma_copy": (_dma_copy, (X,), lambda a: a, 0, 0),
    "nisa.dma_transpose": (lambda t: nisa.dma_transpose(t), (X,), lambda a: a.T, 0, 0),
    "nisa.dropout": (lambda t: nisa.dropout(t, 0.0), (X,), lambda a: a, 0, 0),
    "dropout": (lambda t: nl.dropout(t, 1.0), (X,), lambda a: np.zeros_like(a), 0, 0),
    "where": (lambda t, u: nl.where(nl.greater(t, 0.0), t, u), (X, Y), lambda a, b: np.where(a > 0, a, b), 0, 0),
    "where_affine": (lambda t: nl.where(nl.arange(P)[:, None] >= nl.arange(F)[None, :], t, 0.0), (X,),
                     lambda a: np.where(np.arange(P)[:, None] >= np.arange(F)[None, :], a, 0.0), 0, 0),
    "softmax": (lambda t: nl.softmax(t, axis=1), (X,), lambda a: np.exp(a - a.max(1, keepdims=True)) / np.exp(a - a.max(1, keepdims=True)).sum(1, keepdims=True), 1e-5, 1e-7),
    "rms_norm": (lambda t, w: nl.rms_norm(t, w, axis=1, n=F), (X, Y[0:1].copy()),
                 lambda a, w: a / np.sqrt((a * a).mean(1, keepdims=True) + 1e-6) * w, 1e-5, 1e-6),
    "gather_flattened": (_gather, (X, (INTS % F).astype(np.uint32)), lambda a, i: np.take_along_axis(a, i.astype(np.int64), 1), 0, 0),
    "loop_reduce": (_loop_reduce, (X,), lambda a: np.maximum(np.maximum(0 * a, a), 2 * a), 1e-6, 1e-6),
    "full_like": (_full_like, (X,), lambda a: np.full_like(a, 4.0), 0, 0),
    "shared_constant": (_constants, (X,), lambda a: a + 2.0, 1e-6, 1e-6),
    "expand_dims": (_expand_dims, (COL,), lambda c: 2 * c, 1e-6, 0),
    "nisa.nc_stream_shuffle": (_stream_shuffle, (X,), _shuffle_ref, 0, 0),
    "nisa.nc_find_index8": (lambda t: nisa.nc_find_index8(data=t, vals=nisa.max8(src=t)), (X,),
                            lambda a: np.argsort(-a, axis=1, kind="stable")[:, :8], 0, 0),
    "nisa.nc_match_replace8": (lambda t: nisa.nc_match_replace8(data=t, vals=nisa.max8(src=t), imm=-100.0), (X,),
                               _replace_top8, 0, 0),
    "nc_matmul_double_row": (
        lambda s, t: nisa.nc_matmul(s.reshape((P, 2, 32)).astype(nl.float8_e4m3),
                                    t.reshape((P, 2, 32)).astype(nl.float8_e4m3), perf_mode="double_row_gen3"),
        (X, Y), lambda a, b: np.einsum("kjm,kjn->mn", *(v.reshape(P, 2, 32).astype(np.float32)
                                       .astype(ml_dtypes.float8_e4m3).astype(np.float64) for v in (a, b))),
        1e-5, 1e-5),
})
# --- gathers, selections, dynamic copies and single-rank collectives (issue 13) ----------------
GATHER_OFFSETS = RNG.integers(0, F - 4, (P, 2)).astype(np.uint16)  # element offsets, 4 elements each
SEGMENTS = np.sort(RNG.integers(0, 6, (1, F))).astype(np.float32)
SPARSE = np.where(RNG.random((P, F)) < 0.3, X, 0).astype(np.float32)
DYN_COLS = RNG.permutation(F)[:8].astype(np.int32).reshape(1, 8)


def _local_gather_ref(src, offsets):
    out = np.empty((P, 32, 4))
    for core in range(0, P, 16):
        starts = offsets[core:core + 16].astype(np.int64).flatten(order="F")
        for j, s0 in enumerate(starts):
            out[core:core + 16, j, :] = src[core:core + 16, s0:s0 + 4]
    return out


def _segment_bounds_ref(ids):
    seq = ids[0]
    n = len(seq)
    start, end = np.zeros(n), np.zeros(n)
    for i in range(n):
        start[i] = n if seq[i] == 0 else (start[i - 1] if i and seq[i] == seq[i - 1] else i)
    for i in reversed(range(n)):
        end[i] = -1 if seq[i] == 0 else (end[i + 1] if i < n - 1 and seq[i] == seq[i + 1] else i + 1)
    return np.stack([start, end])[None]


def _nonzero_ref(a):
    rows = []
    for p in range(0, P, 16):
        hits = np.flatnonzero(a[p] != 0)
        row = np.full(F + 1, -1.0)
        row[:hits.size], row[-1] = hits, hits.size
        rows.append(row)
    return np.stack(rows)


def _range_select(x, lo, hi, reduce_out=False):
    res = nl.ndarray((P, 1), dtype=nl.float32)
    kept = nisa.range_select(on_true_tile=x, comp_op0=np.greater_equal, comp_op1=np.less, bound0=lo, bound1=hi,
                             reduce_cmd=nisa.reduce_cmd.reset_reduce, reduce_res=res, range_start=8,
                             on_false_value=nl.fp32.min)
    return res if reduce_out else kept


def _range_select_ref(x, lo, hi):
    idx = 8 + np.arange(F)[None, :]
    return np.where((idx >= lo) & (idx < hi), x, np.finfo(np.float32).min)


def _select_reduce(x, pred, reduce_out=False):
    dst = nl.ndarray((P, F), dtype=nl.float32)
    res = nl.ndarray((P, 1), dtype=nl.float32)
    nisa.select_reduce(dst=dst, predicate=pred, on_true=x, on_false=-5.0, reduce_res=res,
                       reduce_cmd=nisa.reduce_cmd.reset_reduce)
    return res if reduce_out else dst


def _dynamic_src(x, cols):
    out = nl.ndarray((P, 8), dtype=nl.float32)
    ip, jf = nl.mgrid[0:P, 0:1]
    for j in nl.affine_range(8):
        out[ip, j + jf] = nisa.tensor_copy_dynamic_src(x[ip, cols[0, j] + jf])
    return out


def _dynamic_dst(x, cols):
    out = nl.full((P, F), 0.0, dtype=nl.float32)
    ip, jf = nl.mgrid[0:P, 0:1]
    for j in nl.affine_range(8):
        nisa.tensor_copy_dynamic_dst(dst=out[ip, cols[0, j] + jf], src=x[ip, j + jf])
    return out


def _dynamic_dst_ref(x, cols):
    out = np.zeros((P, F))
    out[:, cols[0]] = x[:, :8]
    return out


def _dma_compute(x, y):
    dst = nl.ndarray((P, F), dtype=nl.float32)
    nisa.dma_copy(dst=dst, src=x)
    nisa.dma_compute(dst=dst, srcs=[y, dst], reduce_op=np.add)
    return dst


ROWS.update({
    "nisa.local_gather": (lambda s, i: nisa.local_gather(s, i, 4), (X, GATHER_OFFSETS), _local_gather_ref, 0, 0),
    "nisa.nc_n_gather": (lambda s, i: nisa.nc_n_gather(s, i), (X, (INTS % F).astype(np.uint32)),
                         lambda a, i: np.take_along_axis(a, i.astype(np.int64), 1), 0, 0),
    "nisa.sequence_bounds": (lambda s: nisa.sequence_bounds(segment_ids=s), (SEGMENTS,), _segment_bounds_ref, 0, 0),
    "nisa.nonzero_with_count": (lambda s: nisa.nonzero_with_count(s, index_offset=0, padding_val=-1)[0:P:16, :],
                                (SPARSE,), _nonzero_ref, 0, 0),
    "nisa.range_select": (_range_select, (X, np.zeros((P, 1), np.float32), np.full((P, 1), 40.0, np.float32)),
                          _range_select_ref, 0, 0),
    "range_select_reduce_res": (lambda x, lo, hi: _range_select(x, lo, hi, True),
                                (X, np.zeros((P, 1), np.float32), np.full((P, 1), 40.0, np.float32)),
                                lambda x, lo, hi: _range_select_ref(x, lo, hi).max(1, keepdims=True), 0, 0),
    "nisa.select_reduce": (_select_reduce, (X, (INTS % 2).astype(np.uint8)), lambda a, p: np.where(p != 0, a, -5.0),
                           0, 0),
    "select_reduce_reduce_res": (lambda x, p: _select_reduce(x, p, True), (X, (INTS % 2).astype(np.uint8)),
                                 lambda a, p: np.where(p != 0, a, -5.0).max(1, keepdims=True), 0, 0),
    "nisa.tensor_copy_dynamic_src": (_dynamic_src, (X, DYN_COLS), lambda a, c: a[:, c[0]], 0, 0),
    "nisa.tensor_copy_dynamic_dst": (_dynamic_dst, (X, DYN_COLS), _dynamic_dst_ref, 0, 0),
    "all_reduce": (lambda s: nl.all_reduce(s, op=np.add, program_axes=[0]), (X,), lambda a: a, 0, 0),
    "nisa.dma_compute": (_dma_compute, (X, Y), np.add, 1e-6, 1e-6),
})


# Ops exercised elsewhere: name -> a row of this table, or "module.py::test_name" in this folder.
COVERED_BY = {"zeros": "full_like", "ones": "full_like", "zeros_like": "full_like", "ones_like": "full_like",
              "full": "loop_reduce", "ndarray": "nisa.dma_copy", "shared_identity_matrix": "shared_constant",
              "empty_like": "test_simulate.py::test_views_indirect_indexing_atomics_and_helpers",
              "rand": "test_simulate.py::test_views_indirect_indexing_atomics_and_helpers",
              "random_seed": "test_simulate.py::test_views_indirect_indexing_atomics_and_helpers",
              "device_print": "test_simulate.py::test_views_indirect_indexing_atomics_and_helpers",
              "load_transpose2d": "test_simulate.py::test_views_indirect_indexing_atomics_and_helpers",
              "atomic_rmw": "test_simulate.py::test_views_indirect_indexing_atomics_and_helpers",
              "assign": "test_simulate.py::test_block_dimensions_partition_leading_broadcast_and_psum_accumulation",
              "iadd": "test_simulate.py::test_block_dimensions_partition_leading_broadcast_and_psum_accumulation",
              "inplace": "test_simulate.py::test_block_dimensions_partition_leading_broadcast_and_psum_accumulation",
              "reshape": "test_simulate.py::test_finfo_reshape_keyword_and_numpy_integer_indices",
              "view": "test_simulate.py::test_view_reinterprets_bits",
              "nisa.core_barrier": "test_standalone_library_idioms.py::test_core_barrier_orders_disjoint_writes_of_two_cores",
              "nisa.register_load": "test_standalone_library_idioms.py::test_register_load_bounds_fori_loop_and_dynamic_range_at_run_time"}
# Ops that kernels reach through Python syntax, not by name: what their test's source must contain.
SYNTAX = {"assign": "] = ", "iadd": "+=", "inplace": "*="}
# Rows whose reference is a constant by design: a constant implementation is the right one there.
CONSTANT_BY_DESIGN = {"nisa.memset", "full_like", "dropout"}


def test_every_op_has_a_differential_row():
    missing = sorted(set(OPS) - set(ROWS) - set(COVERED_BY))  # extra rows test op variants
    assert not missing, f"ops without a differential test row: {missing}"


def test_covered_by_names_real_rows_and_tests():
    here = Path(__file__).parent
    wrong = []
    for op, where in COVERED_BY.items():
        if op in ROWS:
            wrong.append(f"{op}: has its own row")
        elif "::" in where:
            module, test = where.split("::")
            source = (here / module).read_text()
            found = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == test]
            if not found:
                wrong.append(f"{op}: {where} does not exist")
            elif SYNTAX.get(op, op.split(".")[-1]) not in (ast.get_source_segment(source, found[0]) or ""):
                wrong.append(f"{op}: {where} never uses it")
        elif where not in ROWS:
            wrong.append(f"{op}: no row {where!r}")
    assert wrong == []


@pytest.mark.parametrize("name", sorted(set(ROWS) - CONSTANT_BY_DESIGN))
def test_row_would_catch_a_zero_or_constant_implementation(name):
    """The row's inputs and tolerance reject an output of all zeros and an output of one constant."""
    _, inputs, ref, rtol, atol = ROWS[name]
    expected = np.asarray(ref(*[np.asarray(i, dtype=np.float64) if i.dtype.kind == "f" else i for i in inputs]),
                          dtype=np.float64)
    for fake in (np.zeros_like(expected), np.full_like(expected, np.median(expected))):
        assert not np.allclose(fake, expected, rtol=rtol, atol=atol), f"{name}: a constant {fake.flat[0]} passes"


@pytest.mark.parametrize("name", sorted(ROWS))
def test_op_matches_numpy(name):
    fn, inputs, ref, rtol, atol = ROWS[name]
    sim = simulate(_tiles_kernel(fn), *inputs)
    got = np.asarray(sim.outputs[0]).astype(np.float64)
    expected = np.asarray(ref(*[np.asarray(i, dtype=np.float64) if i.dtype.kind == "f" else i for i in inputs]))
    expected = expected.astype(np.float64).reshape(got.shape) if expected.size == got.size else expected
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
    assert not [f for f in sim.report.findings if f.severity in ("high", "critical")], sim.report.findings
