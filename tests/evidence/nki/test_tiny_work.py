"""Tiny instructions by choice or by the data: a per-element walk of a wide tile is thread-per-lane
work the rubric caps; a decode step whose 4 tokens are the whole free axis is what the data allows."""

from __future__ import annotations

import textwrap

import numpy as np

from evidence.nki import load_kernel, simulate
from evidence.nki.shim import language as nl
from evidence.nki.shim import typing as nt
from evidence.nki.trace_items import trace_fact_items

from .conftest import run_source

DECODE = """
    def kernel(x_t, w):
        H, T = x_t.shape
        out = nl.ndarray((w.shape[1], T), dtype=nl.float32, buffer=nl.shared_hbm)
        xs = nl.ndarray((H // 128, nl.par_dim(128), T), dtype=x_t.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(H // 128):
            xs[k] = nl.load(x_t[k * 128:(k + 1) * 128, :])
        for m in nl.affine_range(w.shape[1] // 128):
            acc = nl.zeros((nl.par_dim(128), T), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(H // 128):
                wt = nl.load(w[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                acc += nisa.nc_matmul(wt, xs[k])
            nl.store(out[m * 128:(m + 1) * 128, :], value=nl.copy(acc))
        return out
"""

COLUMN_WALK = """
    def kernel(x):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        total = nl.zeros((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.sequential_range(x.shape[1]):
            total[...] = nl.add(total, t[:, j:j + 1])
        nl.store(out, value=total)
        return out
"""


def _partition_use(sim):
    items = trace_fact_items(sim.report, "k.py", "sim", None, lambda file, line: None)
    return next(i for i in items if i.kind == "sim.partition_use")


def test_a_decode_step_as_wide_as_its_tokens_is_data_bounded():
    rng = np.random.default_rng(0)
    sim, _ = run_source(DECODE, "kernel", rng.standard_normal((256, 4), dtype=np.float32),
                        rng.standard_normal((256, 256), dtype=np.float32))
    assert sim.report.tiny_instr_count > 0 and sim.report.tiny_walk_count == 0
    use = _partition_use(sim)
    assert use.labels["tiny_work"] == "data_bounded" and use.metrics["free_elements_mean"] < 8


def test_a_column_walk_of_a_wide_tile_is_walked():
    sim, _ = run_source(COLUMN_WALK, "kernel", nt.tensor[[128, 64], nl.float32], trace_only=True)
    assert sim.report.tiny_walk_count == 64  # every add takes one column of the [128, 64] tile
    assert _partition_use(sim).labels["tiny_work"] == "walked"


def test_a_column_load_of_a_wide_hbm_matrix_is_walked():
    src = """
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for j in nl.affine_range(x.shape[1]):
            nl.store(out[:, j:j + 1], value=nl.exp(nl.load(x[:, j:j + 1])))
        return out
    """
    sim, _ = run_source(src, "kernel", nt.tensor[[128, 32], nl.float32], trace_only=True)
    assert sim.report.tiny_walk_count >= 64  # the column loads and stores, though each exp covers its tile whole
    assert _partition_use(sim).labels["tiny_work"] == "walked"


def test_a_partition_column_of_a_long_vector_is_walked():
    # one element per partition per instruction over a flat vector, as a CUDA block of 128 threads would
    src = """
    def kernel(x):
        y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        xv, yv = x.reshape((x.shape[0] // 128, 128)), y.reshape((x.shape[0] // 128, 128))
        for b in nl.affine_range(x.shape[0] // 128):
            nl.store(yv[b, :], value=nl.exp(nl.load(xv[b, :])))
        return y
    """
    sim, _ = run_source(src, "kernel", nt.tensor[[4096], nl.float32], trace_only=True)
    assert sim.report.tiny_walk_count >= 64  # 32 loads and 32 stores of 1 of the 32 elements a partition could take
    assert _partition_use(sim).labels["tiny_work"] == "walked"


# A decode projection in nki 0.3+ style: the 4 tokens of each head are a slice of one [d, heads * 4] tile, the
# heads accumulate into a 4-column slice of a PSUM tile that packs several token groups, and each head has its own
# weights: every matmul is 4 columns wide because the data is, not by choice.
HEADS_INTO_PACKED_PSUM = """
    import nki
    import nki.isa as nisa
    import nki.language as nl

    @nki.jit
    def kernel(x_t, w):
        D, NT = x_t.shape
        heads, T = w.shape[0] // D, 4
        out = nl.ndarray((128, 2 * T), dtype=nl.float32, buffer=nl.shared_hbm)
        xs = nl.ndarray((D, NT), dtype=x_t.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xs, src=x_t)
        ws = nl.ndarray((D, heads * 128), dtype=w.dtype, buffer=nl.sbuf)
        for h in nl.affine_range(heads):
            nisa.dma_copy(dst=ws[:, h * 128:(h + 1) * 128], src=w[h * D:(h + 1) * D, :])
        acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        for g in nl.affine_range(2):
            for h in nl.affine_range(heads):
                nisa.nc_matmul(dst=acc[:, g * T:(g + 1) * T], stationary=ws[:, h * 128:(h + 1) * 128],
                               moving=xs[:, h * T:(h + 1) * T])
        res = nl.ndarray((128, 2 * T), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc[:, 0:2 * T])
        nisa.dma_copy(dst=out, src=res)
        return out
"""
# The same weights multiplied by one column of the activations at a time: one 64-column matmul would do.
COLUMN_MATMULS = """
    def kernel(x, w):
        out = nl.ndarray((128, x.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
        xs = nl.load(x)
        ws = nl.load(w)
        res = nl.ndarray((128, x.shape[1]), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.affine_range(x.shape[1]):
            res[:, j:j + 1] = nl.copy(nisa.nc_matmul(ws, xs[:, j:j + 1]))
        nl.store(out, value=res)
        return out
"""


def _standalone(body: str, *args):
    return simulate(load_kernel(textwrap.dedent(body), display="k.py").kernel, *args, keep_trace=False)


def test_narrow_matmuls_walk_only_when_they_stream_columns_through_the_same_weights():
    rng = np.random.default_rng(1)
    x_t = rng.standard_normal((64, 8 * 4), dtype=np.float32)
    w = rng.standard_normal((8 * 64, 128), dtype=np.float32)
    sim = _standalone(HEADS_INTO_PACKED_PSUM, x_t, w)
    assert sim.report.tiny_instr_count >= 16 and sim.report.tiny_walk_count == 0
    assert _partition_use(sim).labels["tiny_work"] == "data_bounded"

    sim, _ = run_source(COLUMN_MATMULS, "kernel", nt.tensor[[128, 64], nl.float32], nt.tensor[[128, 128], nl.float32],
                        trace_only=True)
    assert sim.report.tiny_walk_count >= 63  # every matmul after the first, and the column copies
    assert _partition_use(sim).labels["tiny_work"] == "walked"


def test_a_few_walks_beside_data_bounded_work_do_not_make_the_kernel_a_walk():
    # per-head layout copies (one 4-token piece of a wider tile each) beside 16 data-bounded matmuls
    src = HEADS_INTO_PACKED_PSUM.replace(
        "        acc = nl.ndarray((128, 512)",
        "        for h in nl.affine_range(2):\n"
        "            nisa.tensor_copy(dst=xs[:, h * 4:(h + 1) * 4], src=xs[:, (h + 2) * 4:(h + 3) * 4])\n"
        "        acc = nl.ndarray((128, 512)")
    rng = np.random.default_rng(2)
    sim = _standalone(src, rng.standard_normal((64, 32), dtype=np.float32), rng.standard_normal((512, 128),
                                                                                                dtype=np.float32))
    assert sim.report.tiny_walk_count == 2
    use = _partition_use(sim)
    assert use.labels["tiny_work"] == "data_bounded" and "2 of the" in use.title
