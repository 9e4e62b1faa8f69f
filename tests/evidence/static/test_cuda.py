"""CUDA facts from tree-sitter: kernels, launches, shared memory, barriers, atomics, warp and
tensor-core primitives, accumulator dtypes, loop patterns and thread indexing."""

from __future__ import annotations

from pathlib import Path

from evidence.static.cuda import parse_cuda
from evidence.static.cuda_items import cuda_items

CORPUS_CU = Path(__file__).resolve().parents[2] / "corpus" / "cuda" / "softmax_rows.cu"

SRC = """
#include <mma.h>
#define TILE 16
using namespace nvcuda;
__global__ void hist(const int* __restrict__ x, float* out, int n) {
    extern __shared__ float dyn[];
    __shared__ float tile[TILE][TILE + 1];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int j = i; j < n; j += gridDim.x * blockDim.x) {
        atomicAdd(&out[x[j]], 1.0f);
    }
    unsigned m = __ballot_sync(0xffffffffu, i < n);
    wmma::mma_sync(c, a, b, c);
    __syncwarp();
    printf("done %d", i);
}
void run(const int* x, float* out, int n) { hist<<<(n + 255) / 256, 256, 1024>>>(x, out, n); }
"""


def test_corpus_softmax_facts():
    f = parse_cuda(CORPUS_CU.read_text(), "softmax_rows.cu")
    (k,) = f.kernels
    assert k.name == "softmax_rows_kernel" and k.input_dtypes == ("float16",)
    assert f.launches[0].labels["block"] == "BLOCK_THREADS" and f.launches[0].value == 256
    shared = {e.what: e.value for e in f.shared}
    assert shared == {"warp_partial": 32, "row_stat": 4}  # 256/32 floats, one float
    assert len(f.syncs) == 4 and {e.what for e in f.warp} == {"__shfl_down_sync"}
    acc = {(e.function, e.what): e.labels for e in f.accumulators}
    assert acc[("softmax_rows_kernel", "local_sum")]["accumulator_dtype"] == "float32"
    assert acc[("softmax_rows_kernel", "local_sum")]["input_dtype"] == "float16"
    patterns = [e.labels["pattern"] for e in f.loops]
    assert patterns.count("tree_reduction") == 2 and patterns.count("thread_stride") == 3
    assert k.builtins["threadIdx.x"] == 1 and k.builtins["blockIdx.x"] == 1


def test_synthetic_primitives():
    f = parse_cuda(SRC, "hist.cu")
    (k,) = f.kernels
    assert k.global_index
    assert [e.what for e in f.atomics] == ["atomicAdd"]
    assert {e.what for e in f.warp} == {"__ballot_sync"}
    assert [e.what for e in f.tensor_core] == ["wmma::mma_sync"]
    assert [e.what for e in f.syncs] == ["__syncwarp"]
    assert [e.what for e in f.other_idioms] == ["printf"]
    tile = next(e for e in f.shared if e.what == "tile")
    assert tile.value == 16 * 17 * 4 and tile.labels["dims"] == "16x17"
    dyn = next(e for e in f.shared if e.what == "dyn")
    assert dyn.labels["dynamic"] == "true" and dyn.value is None
    assert f.loops[0].labels["pattern"] == "grid_stride"
    assert f.launches[0].value == 256 and f.launches[0].labels["shared_bytes"] == "1024"


def test_cuda_items_have_stable_ids_and_kinds():
    f = parse_cuda(CORPUS_CU.read_text(), "softmax_rows.cu")
    items = cuda_items(f, "cuda-static@1")
    again = cuda_items(parse_cuda(CORPUS_CU.read_text(), "softmax_rows.cu"), "cuda-static@1")
    assert [i.id for i in items] == [i.id for i in again]
    assert len({i.id for i in items}) == len(items)
    kinds = {i.kind for i in items}
    assert {"cuda.kernel", "cuda.shared_memory", "cuda.sync", "cuda.warp_primitive", "cuda.accumulator",
            "cuda.loop", "cuda.thread_indexing"} <= kinds
    assert all(i.location and i.location.file == "softmax_rows.cu" for i in items)
