"""CUDA idioms of public kernels (sweep 7: llm.c dev/cuda, cuda-samples, SGEMM_CUDA) read truly by the
CUDA facts and migration verdicts. Every snippet here is written for the test; each pins one fact
that was wrong on real public code."""

from __future__ import annotations

from evidence.static.cuda import parse_cuda
from evidence.static.cuda_items import cuda_items

# Element types given by a template parameter or a typedef the reader cannot resolve, next to an
# integer index array: the accumulation's input dtype is unknown, not the float32 of the output
# pointer nor the int32 of the index array.
UNKNOWN_INPUTS = """
template <typename T>
__global__ void sumsq(float* out, const T* x, int n) {
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        acc += (float)x[i] * (float)x[i];
    atomicAdd(out, acc);
}

__device__ float row_max(const elem_t* row, int V) {
    float m = -1e30f;
    for (int j = threadIdx.x; j < V; j += blockDim.x) m = fmaxf(m, (float)row[j]);
    return m;
}

__global__ void nll(float* loss, const int* labels, const elem_t* logits, int V) {
    float m = row_max(logits + blockIdx.x * V, V);
    if (threadIdx.x == 0) loss[blockIdx.x] = m - (float)logits[blockIdx.x * V + labels[blockIdx.x]];
}

__global__ void gather_sum(float* out, const int* idx, const float* table, int n) {
    float acc = 0.0f;
    for (int i = 0; i < n; i++) acc += table[idx[i]];
    out[blockIdx.x] = acc;
}
"""


def test_template_and_typedef_inputs_are_unknown_and_index_arrays_are_not_inputs():
    f = parse_cuda(UNKNOWN_INPUTS, "k.cu")
    inputs = {e.function: e.labels["input_dtype"] for e in f.accumulators}
    assert inputs == {"sumsq": "unknown", "row_max": "unknown", "gather_sum": "float32"}
    kernels = {i.labels["name"]: i.labels["inputs"] for i in cuda_items(f, "cuda-static@1") if i.kind == "cuda.kernel"}
    assert kernels == {"sumsq": "?", "nll": "int32,?", "gather_sum": "int32,float32"}
