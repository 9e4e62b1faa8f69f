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
