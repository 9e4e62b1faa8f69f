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


ROW_CU = """#define THREADS 256
__global__ void row_sumsq(const float* x, float* out, int cols) {
    __shared__ float partial[THREADS];
    const int row = blockIdx.x;
    float acc = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) { float v = x[row * cols + c]; acc += v * v; }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[row] = partial[0];
}"""
ROW_PER_INSTANCE = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
@nki.jit
def row_sumsq(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    row = nl.program_id(0)
    tile = nl.load(x[row:row + 1, :])
    s = nl.sum(nl.square(tile), axis=[1], keepdims=True, dtype=nl.float32)
    nl.store(out[row:row + 1, :], value=s)
    return out
"""
ROW_BLOCK_PER_INSTANCE = ROW_PER_INSTANCE.replace("row:row + 1", "row * 128:(row + 1) * 128")


def _row_verdicts(src: str, grid: tuple[int, ...]) -> dict:
    a = analyze(src, file="kernel.py", inputs=bindings_from({"x": ((256, 1024), "float32")}), options={"grid": grid})
    return {i.kind: i for i in migration_items(parse_cuda(ROW_CU, "kernel.cu"), a, "cuda-static@1")}


def test_one_spmd_instance_per_cuda_block_is_thread_emulation():
    got = _row_verdicts(ROW_PER_INSTANCE, (256,))
    ti = got["migration.thread_indexing"]
    assert ti.labels["verdict"] == "thread_emulation"
    assert "one SPMD instance per row with 1-partition tiles (line 8)" in ti.labels["nki"]
    assert got["migration.tiling"].labels["verdict"] == "surface"
    # The block reduction became one nl.sum over the row: the barrier idiom is handled, not replayed.
    assert got["migration.idioms"].labels["verdict"] == "handled"


def test_one_spmd_instance_per_128_row_block_is_tile_level():
    got = _row_verdicts(ROW_BLOCK_PER_INSTANCE, (2,))
    assert got["migration.thread_indexing"].labels["verdict"] == "tile_level"
    assert got["migration.tiling"].labels["verdict"] == "restructured"


def test_a_single_instance_grid_is_not_a_thread_grid():
    a = analyze(ROW_PER_INSTANCE, file="kernel.py", inputs=bindings_from({"x": ((256, 1024), "float32")}),
                options={"grid": (1,)})
    assert not [f for f in a.findings if f.rule == "thread-emulation"]
