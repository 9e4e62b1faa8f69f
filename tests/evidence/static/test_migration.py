"""Migration acceptance: one CUDA kernel, a faithful and a thread-emulating NKI port; the
verdicts must tell them apart. Plus the atomics and accumulation verdicts on small cases."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from _corpus import corpus_entry, loader  # noqa: E402

from evidence.static.cuda import parse_cuda  # noqa: E402
from evidence.static.engine import analyze, bindings_from  # noqa: E402
from evidence.static.migration import migration_items  # noqa: E402

CU = parse_cuda((loader.CUDA_DIR / "softmax_rows.cu").read_text(), "softmax_rows.cu")


def _verdicts(nki_path: Path) -> dict[str, str]:
    src, inputs, entry, opts = corpus_entry(nki_path)
    a = analyze(src, file=nki_path.name, inputs=inputs, entry=entry, options=opts)
    return {i.kind: i.labels["verdict"] for i in migration_items(CU, a, "cuda-static@1")}


def test_faithful_and_thread_emulating_ports_are_told_apart():
    faithful = _verdicts(loader.CUDA_DIR / "softmax_rows_faithful.py")
    threads = _verdicts(loader.CUDA_DIR / "softmax_rows_threads.py")
    assert faithful == {"migration.accumulation": "preserved", "migration.thread_indexing": "tile_level",
                        "migration.tiling": "restructured", "migration.atomics": "not_needed",
                        "migration.idioms": "handled"}
    assert threads["migration.thread_indexing"] == "thread_emulation"
    assert threads["migration.tiling"] == "surface"
    assert threads["migration.idioms"] == "unhandled"
    assert threads["migration.accumulation"] == "preserved"  # the surface port still keeps float statistics


NARROW = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
@nki.jit
def k(x):
    out = nl.ndarray((128, 1), dtype=nl.float16, buffer=nl.shared_hbm)
    t = nl.load(x)
    s = nl.sum(t, axis=1, keepdims=True)
    nl.store(out, value=s)
    return out
"""
ATOMIC_CU = "__global__ void k(const __half* x, float* out) { float acc = 0; " \
            "for (int i = 0; i < 8; i++) acc += __half2float(x[i]); atomicAdd(out, acc); }"


def test_narrowed_accumulation_and_missing_atomics():
    a = analyze(NARROW, file="k.py", inputs=bindings_from({"x": ((128, 512), "float16")}))
    cu = parse_cuda(ATOMIC_CU, "k.cu")
    got = {i.kind: i for i in migration_items(cu, a, "cuda-static@1")}
    assert got["migration.accumulation"].labels["verdict"] == "narrowed"
    assert got["migration.accumulation"].severity.value == "high"
    assert got["migration.atomics"].labels["verdict"] == "replaced"  # nl.sum replaces the atomic sum
    no_reduce = NARROW.replace("nl.sum(t, axis=1, keepdims=True)", "nl.copy(t[:, 0:1])")
    a2 = analyze(no_reduce, file="k.py", inputs=bindings_from({"x": ((128, 512), "float16")}))
    got2 = {i.kind: i.labels["verdict"] for i in migration_items(cu, a2, "cuda-static@1")}
    assert got2["migration.atomics"] == "missing"
    assert got2["migration.accumulation"] == "unknown"
