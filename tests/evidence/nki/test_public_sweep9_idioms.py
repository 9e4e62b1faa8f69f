"""Semantics the ninth public-kernel sweep (beta dialect) found mishandled, each on a kernel written for the test."""

from __future__ import annotations

import numpy as np

import pytest

from evidence.nki import load_kernel, simulate

RNG = np.random.default_rng(91)

# Rows gathered from (or scattered into) a table through run-time indices with `oob_mode.skip`: the indices past
# the table's end are not moved, so the gathered tile keeps its fill there and the table keeps its rows
# (REFERENCE §3.4). The paged-attention kernels pad their block tables with such indices.
SKIPPED_ROWS = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from neuronxcc.nki.isa.constants import oob_mode


@nki.jit
def gather_rows(table, idx):
    n, d = table.shape
    out = nl.ndarray((128, d), dtype=table.dtype, buffer=nl.shared_hbm)
    ids = nl.load(idx)
    t = nl.full((128, d), -1.0, dtype=table.dtype, buffer=nl.sbuf)
    i_f = nl.arange(d)[None, :]
    nisa.dma_copy(dst=t, src=table[ids, i_f], oob_mode=oob_mode.skip)
    nl.store(out, value=t)
    return out


@nki.jit
def scatter_rows(table, idx, rows):
    n, d = table.shape
    out = nl.ndarray((n, d), dtype=table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=table)
    ids = nl.load(idx)
    r = nl.load(rows)
    i_f = nl.arange(d)[None, :]
    nisa.dma_copy(dst=out[ids, i_f], src=r, oob_mode=oob_mode.skip)
    return out
'''


def _indices(n_rows: int) -> np.ndarray:
    # every other index past the table's end, the rest a permutation of distinct in-range rows
    idx = RNG.permutation(max(n_rows, 128))[:128].astype(np.int32)
    idx[::2] = n_rows + np.arange(64, dtype=np.int32)
    return idx.reshape(128, 1)


def test_dma_copy_skips_out_of_range_gather_rows():
    mod = load_kernel(SKIPPED_ROWS, display="skipped_rows.py")
    table = RNG.standard_normal((200, 32)).astype(np.float32)
    idx = _indices(200)
    sim = simulate(mod.gather_rows, table, idx)
    ids = idx[:, 0]
    want = np.where((ids < 200)[:, None], table[np.minimum(ids, 199)], -1.0).astype(np.float32)
    np.testing.assert_array_equal(sim.outputs[0], want)
    assert not [f for f in sim.report.findings if f.severity in ("critical", "high")]


def test_dma_copy_skips_out_of_range_scatter_rows():
    mod = load_kernel(SKIPPED_ROWS, display="skipped_rows.py")
    table = RNG.standard_normal((160, 32)).astype(np.float32)
    rows = RNG.standard_normal((128, 32)).astype(np.float32)
    idx = _indices(160)
    sim = simulate(mod.scatter_rows, table, idx, rows)
    want = table.copy()
    ids = idx[:, 0]
    want[ids[ids < 160]] = rows[ids < 160]
    np.testing.assert_array_equal(sim.outputs[0], want)


def test_dma_copy_without_skip_still_reports_the_access():
    src = SKIPPED_ROWS.replace(", oob_mode=oob_mode.skip", "")
    mod = load_kernel(src, display="error_rows.py")
    table = RNG.standard_normal((200, 32)).astype(np.float32)
    with pytest.raises(Exception, match="err_tensor_access_out_of_bound"):
        simulate(mod.gather_rows, table, _indices(200))


# A keyword-only `nisa` instruction called with positional arguments (an nki-samples variant passes `data, op0,
# operand0` to `tensor_scalar_reduce` so): the documented beta signature is `(*, data, op0, ...)`, so the call is
# the kernel's error at its line, naming the signature; it read as a crash "raised in simulator code".
POSITIONAL_REDUCE = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def row_max_plus_one(x):
    out = nl.ndarray((128, 1), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    m = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    y = nisa.tensor_scalar_reduce(t, np.add, 1.0, reduce_op=np.max, reduce_res=m)  # <- call
    nl.store(out, value=m)
    return out
'''


def test_positional_arguments_to_keyword_only_instruction_are_the_kernels_error():
    mod = load_kernel(POSITIONAL_REDUCE, display="positional.py")
    x = RNG.standard_normal((128, 64)).astype(np.float32)
    with pytest.raises(Exception) as info:
        simulate(mod.row_max_plus_one, x)
    msg = str(info.value)
    line = next(i for i, s in enumerate(POSITIONAL_REDUCE.splitlines(), 1) if s.endswith("# <- call"))
    assert f"positional.py:{line}: err_invalid_arguments" in msg
    assert "3 were given" in msg and "(*, data, op0, operand0, reduce_op, reduce_res" in msg
    assert "simulator code" not in msg
    fixed = POSITIONAL_REDUCE.replace("(t, np.add, 1.0,", "(data=t, op0=np.add, operand0=1.0,")
    sim = simulate(load_kernel(fixed, display="keywords.py").row_max_plus_one, x)
    np.testing.assert_allclose(sim.outputs[0][:, 0], x.max(axis=1) + 1.0, rtol=1e-6)


# One row per SPMD instance (a count per row, rows sharded over two instances): the destination is addressed with
# one-element index grids, `dst[nl.arange(1)[:, None] + row, nl.arange(1)[None, :]]`. The view of such a subscript
# was a copied scalar, so the write was lost and the output read as never written (a false high finding).
ONE_ROW_COUNTS = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def row_counts(x):
    rows, cols = x.shape
    per = rows // nl.num_programs(0)
    first = per * nl.program_id(0)
    out = nl.ndarray((rows,), dtype=nl.int32, buffer=nl.shared_hbm)
    i_r = nl.arange(per)[:, None]
    t = nl.load(x[first + i_r, nl.arange(cols)[None, :]])
    n = nisa.tensor_reduce(nl.add, t, axis=[1])
    col = out.reshape((rows, 1))
    nisa.dma_copy(dst=col[first + i_r, nl.arange(1)[None, :]], src=n)
    return out
'''


@pytest.mark.parametrize("rows,grid", [(1, (1,)), (2, (2,)), (4, (2,))])
def test_writes_through_one_element_index_grids_reach_the_tensor(rows, grid):
    mod = load_kernel(ONE_ROW_COUNTS, display="one_row.py")
    x = (RNG.random((rows, 256)) < 0.3).astype(np.float32)
    sim = simulate(mod.row_counts, x, grid=grid)
    np.testing.assert_array_equal(sim.outputs[0], x.sum(axis=1).astype(np.int32))
    assert not sim.report.findings


# The engines compute in fp32 and cast results to integer dtypes with saturation. The bounds of 32-bit integers are
# not fp32 numbers, and the clip was in fp32: 3e9 cast to int32 gave INT32_MIN, and UINT32_MAX + 64 cast to uint32
# gave 0 (the neuron-team index kernel adds quadrant offsets to "not found" indices and reduces with min).
SATURATING_CAST = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def offset_indices(idx, off, big):
    out = nl.ndarray(idx.shape, dtype=nl.uint32, buffer=nl.shared_hbm)
    out2 = nl.ndarray(big.shape, dtype=nl.int32, buffer=nl.shared_hbm)
    r = nisa.tensor_scalar(nl.load(idx), nl.add, nl.load(off), dtype=nl.uint32)
    nl.store(out, value=r)
    nl.store(out2, value=nisa.tensor_copy(nl.load(big), dtype=nl.int32))
    return out, out2
'''


def test_float_to_integer_results_saturate_at_32_bit_bounds():
    mod = load_kernel(SATURATING_CAST, display="saturate.py")
    idx = np.full((128, 8), np.iinfo(np.uint32).max, np.uint32)
    idx[:, 0] = 5
    off = np.full((128, 1), 64.0, np.float32)
    big = np.array([[3e9, -3e9, 1e3, 2.5]] * 128, np.float32)
    out, out2 = simulate(mod.offset_indices, idx, off, big).outputs
    assert (out[:, 0] == 69).all() and (out[:, 1:] == np.iinfo(np.uint32).max).all()
    assert (out2 == np.array([2**31 - 1, -2**31, 1000, 2], np.int32)).all()


# `nc_find_index8` for values absent from the data: the docs call the result undefined; kernels relying on it
# expect the all-ones index. It read 0 (a valid index, silently); it is UINT32_MAX now, with a low finding.
FIND_MISSING = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def positions(data, vals):
    out = nl.ndarray((data.shape[0], 8), dtype=nl.uint32, buffer=nl.shared_hbm)
    nl.store(out, value=nisa.nc_find_index8(data=nl.load(data), vals=nl.load(vals)))
    return out
'''


def test_find_index8_of_absent_values_is_all_ones_and_a_finding():
    mod = load_kernel(FIND_MISSING, display="find.py")
    data = np.tile(np.arange(64, dtype=np.float32), (128, 1))
    vals = np.tile(np.array([3, 5, 70, 7, 80, 0, 63, 90], np.float32), (128, 1))
    sim = simulate(mod.positions, data, vals)
    want = np.array([3, 5, 2**32 - 1, 7, 2**32 - 1, 0, 63, 2**32 - 1], np.uint32)
    assert (sim.outputs[0] == want).all()
    (f,) = [f for f in sim.report.findings if f.code == "find_index8_value_not_found"]
    assert f.severity == "low" and "384 of the 1024 values" in f.message


# `nisa.iota` of a scalar affine expression (the SPMD program id): vLLM's paged attention materialises its KV head id
# this way to offset each block-table entry (`block * n_heads + head`). It was err_1d_arange_not_supported.
HEAD_OFFSETS = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def flat_rows(blocks, n_heads):
    out = nl.ndarray((n_heads, 128, 1), dtype=nl.int32, buffer=nl.shared_hbm)
    head = nl.program_id(axis=0)
    h = nisa.iota(head, dtype=nl.int32).reshape((1, 1))
    col = nl.transpose(h.broadcast_to((1, 128)))
    ids = nl.load(blocks)
    nl.store(out[head], value=nl.add(nl.multiply(ids, n_heads), col))
    return out
'''


def test_iota_of_the_program_id_is_a_one_element_tile():
    mod = load_kernel(HEAD_OFFSETS, display="heads.py")
    blocks = RNG.integers(0, 50, (128, 1)).astype(np.int32)
    sim = simulate(mod.flat_rows, blocks, 3, grid=(3,))
    np.testing.assert_array_equal(sim.outputs[0], np.stack([blocks * 3 + h for h in range(3)]))


# `tensor_copy_predicated` with a scalar source, the documented form NxDI's chunked-prefill attention masks its
# PSUM scores with (`src=-9984.0, reverse_pred=True`: the constant where the mask is 0). It was
# err_invalid_operand "expects a tile for 'src'".
MASKED_SCORES = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def masked_scores(q, k, keep):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    s = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    s[...] = nl.matmul(nl.load(q), nl.load(k), transpose_x=True)
    nisa.tensor_copy_predicated(src=-9984.0, dst=s, predicate=nl.load(keep), reverse_pred=True)
    nl.store(out, value=nl.copy(s))
    return out
'''


def test_tensor_copy_predicated_copies_a_scalar_source():
    mod = load_kernel(MASKED_SCORES, display="masked.py")
    q = RNG.standard_normal((64, 128)).astype(np.float32)
    k = RNG.standard_normal((64, 512)).astype(np.float32)
    keep = (RNG.random((128, 512)) < 0.6).astype(np.uint8)
    sim = simulate(mod.masked_scores, q, k, keep)
    want = np.where(keep > 0, q.T @ k, -9984.0)
    np.testing.assert_allclose(sim.outputs[0], want, rtol=1e-5, atol=1e-4)
    bad = MASKED_SCORES.replace("dtype=nl.float32, buffer=nl.psum)", "dtype=nl.int32, buffer=nl.sbuf)").replace(
        "s[...] = nl.matmul(nl.load(q), nl.load(k), transpose_x=True)", "s[...] = 0")
    with pytest.raises(Exception, match="a float source needs a float dst"):
        simulate(load_kernel(bad, display="int_dst.py").masked_scores, q, k, keep)


# One element of a loaded index tile beside slices, `state[:, slot]`: a dynamic offset that selects one index on
# that axis (NxDI's chunked-prefill attention picks the query tile each scheduled KV tile updates this way). It was
# err_unsupported_mixing_basic_advanced_tensor_indexing; a slot past the axis is a run-time fault, reported.
SLOT_UPDATES = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def add_to_slots(state, slots, rows):
    p, n_slots, f = state.shape
    n = rows.shape[0]
    out = nl.ndarray((p, n_slots, f), dtype=state.dtype, buffer=nl.shared_hbm)
    acc = nl.ndarray((p, n_slots, f), dtype=state.dtype, buffer=nl.hbm)
    for s in nl.affine_range(n_slots):
        nl.store(acc[:, s], value=nl.load(state[:, s]))
    ids = nl.load(slots.reshape((1, n)), dtype=nl.int32)
    for t in nl.sequential_range(n):
        slot = ids[0, t]
        cur = nl.load(acc[:, slot])
        nl.store(acc[:, slot], value=nl.add(cur, nl.load(rows[t])))
    for s in nl.affine_range(n_slots):
        nl.store(out[:, s], value=nl.load(acc[:, s]))
    return out
'''


def test_one_element_of_an_index_tile_is_a_dynamic_offset():
    mod = load_kernel(SLOT_UPDATES, display="slots.py")
    state = RNG.standard_normal((128, 3, 16)).astype(np.float32)
    rows = RNG.standard_normal((5, 128, 16)).astype(np.float32)
    slots = np.array([2, 0, 2, 1, 2], np.int32)
    sim = simulate(mod.add_to_slots, state, slots, rows)
    want = state.copy()
    for t, s in enumerate(slots):
        want[:, s] += rows[t]
    np.testing.assert_allclose(sim.outputs[0], want, rtol=1e-6)
    with pytest.raises(Exception, match="dynamic index 3 .* exceeds dimension size 3"):
        simulate(mod.add_to_slots, state, np.array([0, 3, 1, 1, 1], np.int32), rows)
