"""What-ifs: the estimate re-run with one fix applied to the trace."""

from __future__ import annotations

import pytest

from evidence.nki.shim import language as nl
from evidence.nki.shim import typing as nt
from evidence.perf import estimate, load_spec
from evidence.perf.whatif import whatifs

from .conftest import line_of, trace

SPEC = load_spec("trn1")

TILED = """
    def kernel(lhsT, rhs):
        K, M = lhsT.shape
        _, N = rhs.shape
        out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
        for m in nl.affine_range(M // 128):
            for n in nl.affine_range(N // 512):
                acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
                for k in nl.affine_range(K // 128):
                    a = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])  # <-lhs
                    b = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])   # <-rhs
                    acc += nl.matmul(a, b, transpose_x=True)                          # <-mm
                nl.store(out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=nl.copy(acc))
        return out
"""
LHS, RHS, MM = (line_of(TILED, m) for m in ("# <-lhs", "# <-rhs", "# <-mm"))


def _wis(sim, hints=()):
    base = estimate(sim, spec=SPEC)
    return base, {(w.code, w.line): w for w in whatifs(sim, SPEC, base, list(hints), limit=10)}


def test_reload_whatif_counts_the_reloaded_bytes_per_line_and_saves_time():
    K, M, N = 1024, 512, 2048
    base, wis = _wis(trace(TILED, nt.tensor[[K, M], nl.bfloat16], nt.tensor[[K, N], nl.bfloat16]))
    lhs = wis[("reload", LHS)]
    assert lhs.metrics["redundant_bytes"] == (N // 512 - 1) * K * M * 2  # lhsT re-read for every n tile
    assert lhs.metrics["unique_bytes"] == K * M * 2
    assert lhs.time_s < base.time_s and "removes" in lhs.change and lhs.source == "trace"
    assert "removes 3 MiB of HBM reads" in lhs.change  # (2048 // 512 - 1) * 1024 * 512 * 2 bytes, in a readable unit
    assert wis[("reload", RHS)].metrics["redundant_bytes"] == (M // 128 - 1) * K * N * 2


def test_static_hint_marks_the_source():
    K, M, N = 512, 256, 1024
    _, wis = _wis(trace(TILED, nt.tensor[[K, M], nl.bfloat16], nt.tensor[[K, N], nl.bfloat16]),
                  hints=[("hoistable-load", LHS, LHS)])
    assert wis[("reload", LHS)].source == "static:hoistable-load"


def test_fp32_operands_whatif_runs_tensore_at_the_bf16_rate():
    base, wis = _wis(trace(TILED, nt.tensor[[512, 256], nl.float32], nt.tensor[[512, 1024], nl.float32]))
    w = wis[("fp32-operands", MM)]
    assert w.metrics["matmuls"] == (512 // 128) * 2 * 2
    assert w.time_s <= base.time_s


SEQ = """
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.sequential_range(x.shape[0] // 128):   # <-loop
            t = nl.load(x[i * 128:(i + 1) * 128, :])
            nl.store(out[i * 128:(i + 1) * 128, :], value=nl.exp(t))
        return out
"""


def test_sequential_hint_lifts_the_barrier_to_the_affine_schedule():
    x = nt.tensor[[128 * 16, 2048], nl.bfloat16]
    sim = trace(SEQ, x)
    loop = line_of(SEQ, "# <-loop")
    base, wis = _wis(sim, hints=[("sequential-without-dependency", loop, loop + 2)])
    affine = estimate(trace(SEQ.replace("sequential_range", "affine_range"), x), spec=SPEC)
    w = wis[("sequential", loop)]
    assert w.time_s == pytest.approx(affine.time_s, rel=1e-9) and w.time_s < 0.7 * base.time_s


def test_overlap_whatif_is_the_busiest_resource():
    base, wis = _wis(trace(SEQ, nt.tensor[[128 * 4, 2048], nl.bfloat16]))
    w = wis[("overlap", 0)]
    busy = base.engine_busy_s
    assert w.time_s == pytest.approx(max(busy["scalar"], busy["dma_load"] + busy["dma_store"] + busy["dma_copy"],
                                         busy["hbm"]))


def test_small_dma_whatif_names_the_file_of_a_helper_modules_lines(tmp_path):
    # a kernel whose small transfers sit partly in a helper module: a bare line number would point into the kernel
    (tmp_path / "helper.py").write_text(HEADER_HELPER)
    (tmp_path / "kernel.py").write_text(KERNEL_WITH_HELPER)
    from evidence.nki import load_kernel, simulate
    mod = load_kernel(tmp_path / "kernel.py", display="kernel.py")
    sim = simulate(mod.kernel, nt.tensor[[128, 4], nl.float32], target="trn1", trace_only=True)
    _, wis = _wis(sim)
    (w,) = [w for (code, _), w in wis.items() if code == "small-dma"]
    assert w.file == "kernel.py" and "(lines 8, 10, helper.py:6)" in w.change, w.change


HEADER_HELPER = """import nki.isa as nisa
import nki.language as nl


def bounce(dst, src):
    nisa.dma_copy(dst=dst, src=src)
"""
KERNEL_WITH_HELPER = """import nki
import nki.isa as nisa
import nki.language as nl
from helper import bounce

@nki.jit
def kernel(x):
    t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf); nisa.dma_copy(dst=t, src=x)
    out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    u = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf); nisa.dma_copy(dst=u, src=x)
    bounce(out, t)
    return out
"""


TRANSPOSE_HELPER = """import nki.isa as nisa
import nki.language as nl


def load_keys(dst, k):
    for b in range(2):
        nisa.dma_transpose(dst=dst[:, b * 128:(b + 1) * 128], src=k[b * 128:(b + 1) * 128, :])
"""
KERNEL_WITH_TRANSPOSES = """import nki
import nki.isa as nisa
import nki.language as nl
from helper import load_keys

@nki.jit
def kernel(k):
    t = nl.ndarray((128, 256), dtype=nl.bfloat16, buffer=nl.sbuf)
    load_keys(t, k)
    out = nl.ndarray((128, 256), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out
"""


def test_a_static_hint_of_a_helper_module_edits_that_modules_lines_only(tmp_path):
    (tmp_path / "helper.py").write_text(TRANSPOSE_HELPER)
    (tmp_path / "kernel.py").write_text(KERNEL_WITH_TRANSPOSES)
    from evidence.nki import load_kernel, simulate
    mod = load_kernel(tmp_path / "kernel.py", display="kernel.py")
    sim = simulate(mod.kernel, nt.tensor[[256, 128], nl.bfloat16], target="trn2", trace_only=True)
    spec = load_spec("trn2")
    base = estimate(sim, spec=spec)
    def codes(hints):
        return {(w.code, w.file, w.line) for w in whatifs(sim, spec, base, hints, limit=10)}
    assert ("dma-transpose", "helper.py", 7) in codes([("load-transpose-in-loop", 7, 7, "helper.py")])
    # the kernel file's line 7 is the kernel's `def`: a hint there names no DMA transpose
    assert not {c for c in codes([("load-transpose-in-loop", 7, 7, "kernel.py")]) if c[0] == "dma-transpose"}


# A memory-bound kernel: 32 KiB-per-partition streams of x dominate; two [128, 128] blocks of w go through a DMA
# transpose in a short loop, on other queues while the stream runs, and nothing waits for them.
SIDE_TRANSPOSE = """
    def kernel(x, w):
        P, F = x.shape
        out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
        wt_out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
        for r in nl.affine_range(2):
            wt = nl.load_transpose2d(w[r * 128:(r + 1) * 128, :])  # <-side
            nl.store(wt_out[:, r * 128:(r + 1) * 128], value=wt)
        for c in nl.affine_range(F // 8192):
            t = nl.load(x[:, c * 8192:(c + 1) * 8192])
            nl.store(out[:, c * 8192:(c + 1) * 8192], value=nl.multiply(t, 2.0))
        return out, wt_out
"""
# Every byte of this kernel moves through the DMA transpose.
ALL_TRANSPOSE = """
    def kernel(x):
        R, C = x.shape
        out = nl.ndarray((C, R), dtype=x.dtype, buffer=nl.shared_hbm)
        for j in nl.affine_range(C // 128):
            row = nl.ndarray((128, R), dtype=x.dtype, buffer=nl.sbuf)
            for i in nl.affine_range(R // 128):
                row[:, i * 128:(i + 1) * 128] = nl.load_transpose2d(x[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128])  # <-all
            nl.store(out[j * 128:(j + 1) * 128, :], value=row)
        return out
"""


def test_a_dma_transpose_finding_is_priced_even_when_its_fix_gains_nothing():
    """The rubric weighs a DMA-transpose finding by what its fix buys, so the what-if is reported either way."""
    side = line_of(SIDE_TRANSPOSE, "# <-side")
    sim = trace(SIDE_TRANSPOSE, nt.tensor[[128, 2 ** 21], nl.float32], nt.tensor[[256, 128], nl.float32])
    base, wis = _wis(sim, hints=[("load-transpose-in-loop", side, side)])
    w = wis[("dma-transpose", side)]
    assert w.source == "static:load-transpose-in-loop" and w.baseline_s == base.time_s
    assert base.time_s / w.time_s < 1.01  # off the critical path: the stream of x decides the time
    # without the finding's hint no dma-transpose what-if is made (they come from static findings only)
    assert ("dma-transpose", side) not in _wis(sim)[1]

    whole = line_of(ALL_TRANSPOSE, "# <-all")
    sim = trace(ALL_TRANSPOSE, nt.tensor[[1024, 1024], nl.float32])
    base, wis = _wis(sim, hints=[("load-transpose-in-loop", whole, whole)])
    assert base.time_s / wis[("dma-transpose", whole)].time_s > 1.5  # on the critical path


# Two small transfers per tile beside a long matmul chain: fixing them is worth little, other fixes more.
SMALL_BESIDE_MATMULS = """
    def kernel(lhsT, rhs, bias):
        K, M = lhsT.shape
        _, N = rhs.shape
        out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
        for m in nl.affine_range(M // 128):
            b = nl.load(bias[m * 128:(m + 1) * 128, :])
            acc = nl.zeros((128, N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                a = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                r = nl.load(rhs[k * 128:(k + 1) * 128, :])
                acc += nl.matmul(a, r, transpose_x=True)
            nl.store(out[m * 128:(m + 1) * 128, :], value=nl.add(acc, b))
        return out
"""


def test_batching_small_transfers_is_priced_even_when_other_fixes_gain_more():
    """The rubric weighs a small-transfer finding by what batching the kernel's small transfers buys (its
    performance point goes when that is under 1.3x), so the what-if is reported however it ranks."""
    sim = trace(SMALL_BESIDE_MATMULS, nt.tensor[[1024, 256], nl.float32], nt.tensor[[1024, 512], nl.float32],
                nt.tensor[[256, 1], nl.float32])
    base = estimate(sim, spec=SPEC)
    small = [w for w in whatifs(sim, SPEC, base, limit=1) if w.code == "small-dma"]
    assert len(small) == 1 and small[0].metrics["transfers"] == 18  # 16 lhsT tiles of 512 B/partition, 2 biases
    assert base.time_s / small[0].time_s < 1.3
