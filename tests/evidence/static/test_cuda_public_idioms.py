"""CUDA idioms of public kernels (templates, cooperative groups, host reference code, macros under
#if, several kernels per file) read truly by the CUDA facts. Every snippet here is written for the
test; each pins one fact that was wrong on real public code."""

from __future__ import annotations

from evidence.static.cuda import cuda_items, parse_cuda

# A CPU reference next to the kernel, as benchmark files keep it: its loops and sums are host code,
# not the kernel's structure or its accumulation dtype.
HOST_REFERENCE = """
void sum_rows_cpu(const __half* x, float* out, int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        float acc = 0.0f;
        for (int c = 0; c < cols; c++) acc += __half2float(x[r * cols + c]);
        out[r] = acc;
    }
}
__global__ void sum_rows(const __half* x, __half* out, int cols) {
    __half acc = 0;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += x[blockIdx.x * cols + c];
    out[blockIdx.x] = acc;
}
"""


def test_host_reference_loops_and_sums_are_not_kernel_facts():
    f = parse_cuda(HOST_REFERENCE, "k.cu")
    assert [(e.function, e.what, e.labels["accumulator_dtype"]) for e in f.accumulators] == [
        ("sum_rows", "acc", "float16")]
    assert [e.function for e in f.loops] == ["sum_rows"]
    kinds = {(i.kind, i.labels.get("function")) for i in cuda_items(f, "cuda-static@1")}
    assert ("cuda.accumulator", "sum_rows_cpu") not in kinds and ("cuda.loop", "sum_rows_cpu") not in kinds
