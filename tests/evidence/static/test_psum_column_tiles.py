"""psum-accumulate-not-inplace does not report the merge of PE column tiles: with column tiling (a matmul of few
tokens spread over `tile_position` column offsets), each column tile's partial sum sits in its own PSUM partitions,
so adding them with VectorE is the only way to combine them, not an accumulation group written out of place. The
same adds of one fixed column tile's per-K-step products are still reported. Kernels written here; each one
simulates to w.T @ x (checked when written)."""

from __future__ import annotations

import pytest

from evidence.static.engine import analyze
from evidence.static.framework import load_rules

RULE = next(r for r in load_rules() if r.id == "psum-accumulate-not-inplace")

BETA = '''
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa


@nki.jit
def kernel(xT, w):
    K, T = xT.shape  # T = 64 tokens: half the PE columns
    _, E = w.shape
    out = nl.ndarray((T, E), dtype=nl.float32, buffer=nl.shared_hbm)
    res = nl.zeros((T, E), dtype=nl.float32, buffer=nl.sbuf)
    for c in nl.static_range(2):  # K = 256: K tile c on column tile c, each product in its own PSUM tile
        part = nisa.nc_matmul(nl.load(xT[c * 128:(c + 1) * 128, :]), nl.load(w[c * 128:(c + 1) * 128, :]),
                              tile_position=(0, OFFSET), tile_size=(128, 64))
        res[...] = nl.add(res, part)
    nl.store(out, value=res)
    return out
'''

# standalone: the operands loaded into SBUF, K tile k at [:, k, :]
SA_LOADS = '''
import nki
import nki.language as nl
import nki.isa as nisa


@nki.jit
def kernel(xT, w):
    K, T = xT.shape
    _, E = w.shape
    out = nl.ndarray((T, E), dtype=nl.float32, buffer=nl.shared_hbm)
    x_sb = nl.ndarray((128, K // 128, T), dtype=xT.dtype, buffer=nl.sbuf)
    w_sb = nl.ndarray((128, K // 128, E), dtype=w.dtype, buffer=nl.sbuf)
    for k in range(K // 128):
        nisa.dma_copy(dst=x_sb[:, k, :], src=xT[k * 128:(k + 1) * 128, :])
        nisa.dma_copy(dst=w_sb[:, k, :], src=w[k * 128:(k + 1) * 128, :])
'''

STANDALONE = SA_LOADS + '''    res = nl.ndarray((T, E), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=res, value=0.0)
    for c in range(2):  # K = 256: K tile c on column tile c, each product in its own PSUM tile
        part = nl.ndarray((T, E), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=part, stationary=x_sb[:, c, :], moving=w_sb[:, c, :], tile_position=(0, OFFSET),
                       tile_size=(128, 64))
        nisa.tensor_tensor(dst=res, data1=res, data2=part, op=nl.add)
    nisa.dma_copy(dst=out, src=res)
    return out
'''

# the router top-k layout: one PSUM tile, column tile c writes partitions 64 c.., merged after the K loop
MERGED_AFTER = SA_LOADS + '''    psum = nl.ndarray((128, E), dtype=nl.float32, buffer=nl.psum)
    for k in range(K // 128):
        c = k % 2
        nisa.nc_matmul(dst=psum[nl.ds(c * 64, T), :], stationary=x_sb[:, k, :], moving=w_sb[:, k, :],
                       tile_position=(0, c * 64), tile_size=(128, 64))
    res = nl.ndarray((T, E), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=psum[0:T, :])
    for c in range(1, 2):
        nisa.tensor_tensor(dst=res, data1=res, data2=psum[nl.ds(c * 64, T), :], op=nl.add)
    nisa.dma_copy(dst=out, src=res)
    return out
'''


def _findings(source: str) -> list:
    result = analyze(source, file="kernel.py", rules=[RULE])
    assert not result.failures, result.failures
    return [(f.start, f.message) for f in result.findings]


@pytest.mark.parametrize("source", [BETA, STANDALONE], ids=["beta", "standalone"])
def test_adding_the_partial_sums_of_different_column_tiles_is_no_finding(source):
    assert _findings(source.replace("OFFSET", "c * 64")) == []


def test_the_router_layout_merging_column_tiles_after_the_k_loop_is_no_finding():
    assert _findings(MERGED_AFTER) == []


@pytest.mark.parametrize("source", [BETA, STANDALONE], ids=["beta", "standalone"])
def test_per_step_products_of_one_column_tile_added_out_of_place_are_still_reported(source):
    # every step on column tile 1: its products could have accumulated in one PSUM tile
    found = _findings(source.replace("OFFSET", "64"))
    assert len(found) == 1 and "matmul" in found[0][1], found


# The exemption is per add, not per function: one function merges two column tiles' partial sums (no finding),
# and also accumulates one fixed column tile's per-K-step products by adds (a finding, at that add only).
BETA_MERGE_AND_STEPS = '''
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa


@nki.jit
def kernel(xT, w):
    K, T = xT.shape  # K = 768: K tiles 0-1 split over column tiles 0 and 64, K tiles 2-5 on column tile 64
    _, E = w.shape
    out = nl.ndarray((T, E), dtype=nl.float32, buffer=nl.shared_hbm)
    p0 = nisa.nc_matmul(nl.load(xT[0:128, :]), nl.load(w[0:128, :]), tile_position=(0, 0), tile_size=(128, 64))
    p1 = nisa.nc_matmul(nl.load(xT[128:256, :]), nl.load(w[128:256, :]), tile_position=(0, 64), tile_size=(128, 64))
    res = nl.copy(p0)
    res = nl.add(res, p1)
    for k in nl.affine_range(4):
        part = nisa.nc_matmul(nl.load(xT[(k + 2) * 128:(k + 3) * 128, :]), nl.load(w[(k + 2) * 128:(k + 3) * 128, :]),
                              tile_position=(0, 64), tile_size=(128, 64))
        res[...] = nl.add(res, part)
    nl.store(out, value=res)
    return out
'''

STANDALONE_MERGE_AND_STEPS = SA_LOADS + '''    p0 = nl.ndarray((T, E), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p0, stationary=x_sb[:, 0, :], moving=w_sb[:, 0, :], tile_position=(0, 0), tile_size=(128, 64))
    p1 = nl.ndarray((T, E), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p1, stationary=x_sb[:, 1, :], moving=w_sb[:, 1, :], tile_position=(0, 64), tile_size=(128, 64))
    res = nl.ndarray((T, E), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=p0)
    nisa.tensor_tensor(dst=res, data1=res, data2=p1, op=nl.add)
    for k in range(2, K // 128):
        part = nl.ndarray((T, E), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=part, stationary=x_sb[:, k, :], moving=w_sb[:, k, :], tile_position=(0, 64),
                       tile_size=(128, 64))
        nisa.tensor_tensor(dst=res, data1=res, data2=part, op=nl.add)
    nisa.dma_copy(dst=out, src=res)
    return out
'''


def _line(source: str, text: str, nth: int = 1) -> int:
    lines = [i for i, line in enumerate(source.splitlines(), 1) if text in line]
    return lines[nth - 1]


@pytest.mark.parametrize("source, merge, steps", [
    (BETA_MERGE_AND_STEPS, "res = nl.add(res, p1)", "res[...] = nl.add(res, part)"),
    (STANDALONE_MERGE_AND_STEPS, "data2=p1", "data2=part"),
], ids=["beta", "standalone"])
def test_a_column_merge_exempts_only_its_own_add_not_the_functions_other_accumulations(source, merge, steps):
    found = _findings(source)
    lines = [line for line, _ in found]
    assert _line(source, steps) in lines, found  # one column tile's K steps: could have accumulated in PSUM
    assert _line(source, merge) not in lines, found  # column tiles 0 and 64 merged: no accumulation group possible
    assert len(found) == 1, found
