"""CUDA idioms of public kernels (sweep 7: llm.c dev/cuda, cuda-samples, SGEMM_CUDA) read truly by the
CUDA facts and migration verdicts. Every snippet here is written for the test; each pins one fact
that was wrong on real public code."""

from __future__ import annotations

from evidence.static.cuda import parse_cuda
from evidence.static.cuda_items import cuda_items
from evidence.static.engine import analyze, bindings_from
from evidence.static.migration import migration_items


def _migration(cuda, port: str, entry: str, shape: tuple[int, int]) -> dict:
    """The migration items, by kind, of `port` (an NKI kernel of one fp32 input `x` of `shape`) against
    `cuda` (source text or a parsed file) and its `entry` kernel."""
    f = parse_cuda(cuda, "k.cu") if isinstance(cuda, str) else cuda
    a = analyze(port, file="kernel.py", inputs=bindings_from({"x": (shape, "float32")}))
    return {i.kind: i for i in migration_items(f, a, "cuda-static@1", entry)}


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


# A block reduction templated on its warp reduction (`block_reduce<warp_max>(v)`): the function
# passed as a template argument runs inside the kernel, so its shuffles are the kernel's; a call
# through the template parameter names no helper of its own; an argument defined in another file
# is named as such.
TEMPLATE_FUNCTION_ARGS = """
typedef float (*reducer_t)(float);
__device__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, o));
    return v;
}
template <reducer_t reduce>
__device__ float block_reduce(float v) {
    __shared__ float part[32];
    float w = reduce(v);
    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = w;
    __syncthreads();
    return reduce(threadIdx.x < blockDim.x / 32 ? part[threadIdx.x] : -1e30f);
}
__global__ void row_max(const float* x, float* out, int cols) {
    float m = x[blockIdx.x * cols + threadIdx.x];
    float r = block_reduce<warp_max>(m);
    float s = block_reduce<warp_sum_elsewhere>(m);
    if (threadIdx.x == 0) out[blockIdx.x] = reinterpret_cast<float4*>(out)[0].x + r + s;
}
"""


def test_functions_passed_as_template_arguments_are_reached():
    f = parse_cuda(TEMPLATE_FUNCTION_ARGS, "k.cu")
    assert f.reachable(["row_max"]) == {"row_max", "block_reduce", "warp_max"}
    idioms = _migration(f, ELEMENTWISE_PORT, "row_max", (128, 512))["migration.idioms"].labels
    assert idioms["idiom:warp_shuffle"] == "unhandled"  # warp_max's shuffle, reached through the template argument
    assert idioms["cuda_external_calls"] == "warp_sum_elsewhere"  # not `reduce`, not float4


ELEMENTWISE_PORT = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
@nki.jit
def row_max(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nl.square(t))
    return out
"""


# Register-tiled GEMMs keep the output tile in a local array and update it in a device helper
# through a pointer parameter: that is the kernel's accumulator. The same update through a pointer
# the caller does not own as registers (a global output) is a store, not a loop accumulator.
REGISTER_TILE_HELPER = """
template <int TM, int TN>
__device__ void fma_tile(const float* a, const float* b, float* acc, float* gout, int k) {
    for (int kk = 0; kk < k; ++kk)
        for (int m = 0; m < TM; ++m)
            for (int n = 0; n < TN; ++n) {
                acc[m * TN + n] += a[kk * TM + m] * b[kk * TN + n];
                gout[m * TN + n] += 1.0f;
            }
}
__global__ void gemm_regtile(const float* A, const float* B, float* C, float* hits, int K) {
    __shared__ float As[8 * 64];
    __shared__ float Bs[8 * 64];
    float acc[4 * 4] = {0.0f};
    for (int k0 = 0; k0 < K; k0 += 8) {
        __syncthreads();
        fma_tile<4, 4>(As, Bs, acc, hits, 8);
    }
    C[blockIdx.x * blockDim.x + threadIdx.x] = acc[0];
}
"""


def test_register_tile_updated_in_a_helper_is_the_accumulator():
    f = parse_cuda(REGISTER_TILE_HELPER, "k.cu")
    got = [(e.function, e.what, e.labels["accumulator_dtype"], e.labels["input_dtype"], e.labels.get("register_array_of"))
           for e in f.accumulators]
    assert got == [("fma_tile", "acc", "float32", "float32", "gemm_regtile")]


# Block sizes written as dim3, in the forms launchers use: with bare macro names (which C++ parses
# as a function declaration), with expressions, braced, and inline in the launch.
DIM3_LAUNCHES = """
#define TX 32
#define TY 8
__global__ void k1(float* y) { y[threadIdx.y * TX + threadIdx.x] = 0.0f; }
__global__ void k2(float* y) { y[threadIdx.x] = 1.0f; }
__global__ void k3(float* y) { y[threadIdx.x] = 2.0f; }
__global__ void k4(float* y) { y[threadIdx.x] = 3.0f; }
void run(float* y, int n) {
    dim3 grid(n / TX, n / TY), threads(TX, TY);
    k1<<<grid, threads>>>(y);
    dim3 blk = dim3(TX * 2, 2);
    k2<<<grid, blk>>>(y);
    dim3 b3{16, 4, 2};
    k3<<<1, b3>>>(y);
    k4<<<n, dim3(TX, TY)>>>(y);
}
"""


def test_dim3_block_sizes_are_folded():
    f = parse_cuda(DIM3_LAUNCHES, "k.cu")
    got = {i.labels["name"]: i.metrics.get("block_threads") for i in cuda_items(f, "cuda-static@1") if i.kind == "cuda.kernel"}
    assert got == {"k1": 256.0, "k2": 128.0, "k3": 128.0, "k4": 256.0}


# TF32 tensor-core GEMMs keep float storage but multiply tf32 operands (wmma::precision::tf32, or
# .tf32 in an mma.sync): the accumulation's input precision is tfloat32, not float32.
TF32_WMMA = """
#include <mma.h>
using namespace nvcuda;
__global__ void qk_tf32(const float* q, const float* k, float* s, int d) {
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> c;
    wmma::fill_fragment(c, 0.0f);
    for (int kk = 0; kk < d; kk += 8) {
        wmma::load_matrix_sync(a, q + kk, d);
        wmma::load_matrix_sync(b, k + kk, d);
        wmma::mma_sync(c, a, b, c);
    }
    wmma::store_matrix_sync(s, c, 16, wmma::mem_row_major);
}
__device__ void mma_tf32(float* d, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
"""


def test_tf32_tensor_core_inputs_are_tfloat32():
    f = parse_cuda(TF32_WMMA, "k.cu")
    got = {(e.function, e.labels["accumulator_dtype"], e.labels["input_dtype"]) for e in f.accumulators}
    assert got == {("qk_tf32", "float32", "tfloat32"), ("mma_tf32", "float32", "tfloat32")}


# A transpose: shared tiles sized by template parameters (unknown, not 0 B), nothing accumulated
# on either side (the accumulation aspect does not apply: not an uncertainty).
TRANSPOSE_CU = """
template <int TILE, int ROWS>
__global__ void transpose_tiled(const float* in, float* out, int w, int h) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * w + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x; y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) out[(y + j) * h + x] = tile[threadIdx.x][threadIdx.y + j];
}
"""
TRANSPOSE_PORT = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
@nki.jit
def transpose_tiled(x):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nl.transpose(t))
    return out
"""


def test_transpose_migration_has_nothing_to_accumulate_and_unsized_shared_tiles():
    got = _migration(TRANSPOSE_CU, TRANSPOSE_PORT, "transpose_tiled", (128, 128))
    acc = got["migration.accumulation"]
    assert (acc.labels["verdict"], acc.severity.value, acc.labels["nki"]) == ("not_needed", "info", "no accumulators or reductions")
    assert got["migration.tiling"].labels["cuda"].startswith("1 __shared__ array(s), size unknown;")


# A file-defined wrapper named like a primitive (`atomicAddX` for 16-bit types) is a helper call:
# its atomicAdd is counted once, inside it, not again at every call site as an atomic of its own.
ATOMIC_WRAPPER = """
__device__ void atomicAddHalf(float* addr, float v) { atomicAdd(addr, v); }
__global__ void scatter_grad(float* dw, const float* g, const int* idx, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAddHalf(&dw[idx[i]], g[i]);
}
"""


def test_file_defined_atomic_wrapper_is_not_an_atomic_primitive():
    f = parse_cuda(ATOMIC_WRAPPER, "k.cu")
    assert [(e.function, e.what) for e in f.atomics] == [("atomicAddHalf", "atomicAdd")]
    assert f.reachable(["scatter_grad"]) == {"scatter_grad", "atomicAddHalf"}


# llm.c names a kernel's host launcher after the kernel (C++ overloads): the launcher's calls and
# whatever host-side primitives it uses are not the kernel's.
SAME_NAME_LAUNCHER = """
__global__ void scale_rows(float* y, const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
void scale_rows(float* y, const float* x, int n, int block) {
    atomic_fetch_add(&launches, 1);
    scale_rows<<<div_up(n, block), block>>>(y, x, n);
}
"""


def test_launcher_named_like_its_kernel_lends_it_nothing():
    f = parse_cuda(SAME_NAME_LAUNCHER, "k.cu")
    assert f.atomics == [] and f.calls.get("scale_rows", set()) == set()
    got = {k: i.labels for k, i in _migration(f, ELEMENTWISE_PORT.replace("row_max", "scale_rows"), "scale_rows",
                                               (128, 512)).items()}
    assert got["migration.atomics"]["verdict"] == "not_needed"
    assert "cuda_external_calls" not in got["migration.idioms"]  # div_up is the launcher's


# Accumulating straight into global memory (`out[i] += a * v[i]` over a loop, llm.c's naive
# attention value kernel) keeps sums in memory rather than in a register accumulator: the
# accumulation aspect still applies, so "nothing to accumulate" (not_needed) must not be claimed.
MEMORY_ACCUMULATION = """
__global__ void weighted_rows(float* out, const float* att, const float* v, int T, int hs) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float* out_t = out + t * hs;
    for (int i = 0; i < hs; i++) out_t[i] = 0.0f;
    for (int t2 = 0; t2 <= t; t2++)
        for (int i = 0; i < hs; i++) out_t[i] += att[t * T + t2] * v[t2 * hs + i];
}
"""
COPY_PORT = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
@nki.jit
def weighted_rows(x):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nl.exp(t))
    return out
"""


def test_memory_accumulation_is_not_a_kernel_without_accumulation():
    f = parse_cuda(MEMORY_ACCUMULATION, "k.cu")
    assert [(e.function, e.what) for e in f.memory_updates] == [("weighted_rows", "out_t")]
    got = {k: i.labels for k, i in _migration(f, COPY_PORT, "weighted_rows", (128, 128)).items()}
    assert got["migration.accumulation"]["verdict"] == "unknown"
    assert got["migration.accumulation"]["cuda"] == "no loop accumulators found (sums kept in memory: out_t)"
    # ... and a port that matmuls accumulates in PSUM even without an explicit accumulator
    mm = TRANSPOSE_PORT.replace("nl.transpose(t)", "nl.matmul(t, t, transpose_x=True)")
    assert _migration(TRANSPOSE_CU, mm, "transpose_tiled", (128, 128))["migration.accumulation"].labels["verdict"] == "unknown"


# A sorting network's merge stages step geometrically like a tree reduction but combine nothing
# (a comparator swaps pairs): log_step, not tree_reduction. Shuffle and max rounds still reduce.
GEOMETRIC_LOOPS = """
__device__ void cswap(unsigned& a, unsigned& b, unsigned dir) { if ((a > b) == dir) { unsigned t = a; a = b; b = t; } }
__global__ void sort_pairs(unsigned* keys, unsigned n) {
    __shared__ unsigned s[1024];
    s[threadIdx.x] = keys[blockIdx.x * 1024 + threadIdx.x];
    for (unsigned size = 2; size <= n; size <<= 1)
        for (unsigned stride = size / 2; stride > 0; stride >>= 1) {
            __syncthreads();
            unsigned pos = 2 * threadIdx.x - (threadIdx.x & (stride - 1));
            cswap(s[pos], s[pos + stride], (threadIdx.x & (size / 2)) != 0);
        }
    keys[blockIdx.x * 1024 + threadIdx.x] = s[threadIdx.x];
}
__device__ float warp_max(float v) {
    for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v = v + __shfl_down_sync(0xffffffffu, v, o);
    return v;
}
__device__ void block_sum(float* sdata, unsigned tid) {
    for (unsigned s = 128; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] = sdata[tid] + sdata[tid + s];
        __syncthreads();
    }
}
"""


def test_sorting_network_stages_are_log_steps_not_reductions():
    f = parse_cuda(GEOMETRIC_LOOPS, "k.cu")
    assert [(e.function, e.labels["pattern"]) for e in f.loops] == [
        ("sort_pairs", "log_step"), ("sort_pairs", "log_step"), ("warp_max", "tree_reduction"),
        ("warp_sum", "tree_reduction"), ("block_sum", "tree_reduction")]


# Packed half2 arithmetic: a half2 value is float16 data two lanes wide (shared bytes count both
# lanes), `v = __hfma2(a, b, v)` accumulates like `v += a * b`, and `half2 v(0.f, 0.f)` declares
# v (not `f`). A dot product accumulated in half is the precision fact a port is judged against.
HALF2_DOT = """
__global__ void dot_h2(half2 const* const a, half2 const* const b, float* out, int n) {
    __shared__ half2 part[64];
    half2 v(0.f, 0.f);
    half2 w = __float2half2_rn(0.f);
    float s = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        v = __hfma2(a[i], b[i], v);
        w = a[i] * b[i] + w;
        s = fmaf(__low2float(a[i]), __high2float(b[i]), s);
    }
    part[threadIdx.x] = __hadd2(v, w);
    out[blockIdx.x] = s + __low2float(part[0]) + sizeof(float4);
}
"""


def test_half2_dot_product_accumulates_in_float16():
    f = parse_cuda(HALF2_DOT, "k.cu")
    got = {(e.what, e.labels["accumulator_dtype"], e.labels["input_dtype"]) for e in f.accumulators}
    assert got == {("v", "float16", "float16"), ("w", "float16", "float16"), ("s", "float32", "float16")}
    assert [(e.what, e.value) for e in f.shared] == [("part", 256.0)]
    from evidence.static.cuda_types import sizeof_bytes
    assert (sizeof_bytes("sizeof(float4)"), sizeof_bytes("sizeof(half2)"), sizeof_bytes("sizeof(half)")) == (16, 4, 2)


# One CUDA thread per row and no shared memory (llm.c's first attention softmax): a port on
# 128-partition tiles restructured no shared-memory tiling, there was none. A port on 1-partition
# tiles is still a surface port.
THREAD_PER_ROW = """
__global__ void row_softmax(float* att, const float* pre, int rows, int T) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float m = -1e30f, s = 0.0f;
    for (int j = 0; j < T; j++) m = fmaxf(m, pre[r * T + j]);
    for (int j = 0; j < T; j++) s += expf(pre[r * T + j] - m);
    for (int j = 0; j < T; j++) att[r * T + j] = expf(pre[r * T + j] - m) / s;
}
"""
ROW_PORT = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
@nki.jit
def row_softmax(x):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    e = nl.exp(nl.subtract(t, nl.max(t, axis=[1], keepdims=True)))
    nl.store(out, value=nl.divide(e, nl.sum(e, axis=[1], keepdims=True)))
    return out
"""


def test_no_shared_memory_means_no_tiling_to_restructure():
    got = _migration(THREAD_PER_ROW, ROW_PORT, "row_softmax", (128, 128))
    assert (got["migration.tiling"].labels["verdict"], got["migration.tiling"].severity.value) == ("not_needed", "info")
    one_row = ROW_PORT.replace("t = nl.load(x)", "t = nl.load(x[0:1, :])")
    got1 = _migration(THREAD_PER_ROW, one_row, "row_softmax", (128, 128))
    assert got1["migration.tiling"].labels["verdict"] == "surface"


# A cooperative-groups grid-stride loop (`i += grid.size()`) strides the grid like `gridDim.x *
# blockDim.x`; such kernels must be launched with cudaLaunchCooperativeKernel, not <<<...>>>.
CG_GRID = """
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void grid_sum(const float* x, float* partial, float* out, unsigned n) {
    cg::grid_group g = cg::this_grid();
    float acc = 0.0f;
    for (unsigned i = g.thread_rank(); i < n; i += g.size()) acc += x[i];
    partial[g.thread_rank()] = acc;
    g.sync();
    if (g.thread_rank() == 0) for (unsigned j = 1; j < g.size(); j++) out[0] += partial[j];
}
void run(const float* x, float* partial, float* out, unsigned n) {
    void* args[] = {(void*)&x, (void*)&partial, (void*)&out, (void*)&n};
    cudaLaunchCooperativeKernel((void*)grid_sum, dim3(64), dim3(256), args, 0, 0);
}
"""


def test_cooperative_grid_stride_and_cooperative_launch():
    f = parse_cuda(CG_GRID, "k.cu")
    assert [e.labels["pattern"] for e in f.loops] == ["grid_stride", "serial"]
    assert "grid_sync" in [e.what for e in f.other_idioms]
    kernel = next(i for i in cuda_items(f, "cuda-static@1") if i.kind == "cuda.kernel")
    assert (kernel.labels["grid"], kernel.labels["block"], kernel.metrics["block_threads"]) == ("dim3(64)", "dim3(256)", 256.0)
