"""CUDA idioms of public kernels (templates, cooperative groups, host reference code, macros under
#if, several kernels per file) read truly by the CUDA facts. Every snippet here is written for the
test; each pins one fact that was wrong on real public code."""

from __future__ import annotations

from evidence.static.cuda import parse_cuda
from evidence.static.cuda_items import cuda_items

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


# Loop patterns read from the loop's update (and, for while loops, the step in the body), not from
# any builtin named in the header: a halving stride that starts at blockDim.x is a tree reduction,
# a loop bounded by blockDim.x that one thread walks serially is serial, and a while loop that steps
# by a gridDim-derived stride is a grid-stride loop.
LOOPS = """
__global__ void block_sum(const float* in, float* out, unsigned n) {
    extern __shared__ float buf[];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    unsigned step = blockDim.x * gridDim.x;
    float v = 0.0f;
    while (i < n) {
        v += in[i];
        i += step;
    }
    buf[tid] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2;
         s > 0;
         s >>= 1) {
        if (tid < s) buf[tid] += buf[tid + s];
        __syncthreads();
    }
    for (unsigned s = 1; s < blockDim.x; s *= 2) {
        __syncthreads();
    }
    if (tid == 0) {
        float t = 0.0f;
        for (unsigned k = 0; k < blockDim.x; k += 32) t += buf[k];
        out[blockIdx.x] = t;
    }
    if (blockIdx.x == 0) {
        unsigned j = tid;
        float w = 0.0f;
        while (j < gridDim.x) {
            w += out[j];
            j += 256;
        }
        buf[tid] = w;
    }
}
"""


def test_loop_patterns_follow_the_update_not_the_header_builtins():
    f = parse_cuda(LOOPS, "k.cu")
    got = [(e.line, e.labels["pattern"]) for e in f.loops]
    # (the doubling loop at line 20 only waits at a barrier: geometric steps that combine nothing)
    assert got == [(8, "grid_stride"), (14, "tree_reduction"), (20, "log_step"), (25, "serial"),
                   (31, "thread_stride")]


# Cooperative groups: cg::sync(block) is a block barrier as much as __syncthreads(); tile syncs
# and tile shuffles are warp-level; cg::reduce is a warp/tile reduction; a grid group's sync is a
# grid-wide barrier, whatever the variable is called.
COOP = """
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
__global__ void coop(const float* x, float* out, int n) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    cg::grid_group everyone = cg::this_grid();
    float v = x[block.thread_rank()];
    cg::sync(block);
    v += warp.shfl_xor(v, 16);
    warp.sync();
    float s = cg::reduce(warp, v, cg::plus<float>());
    everyone.sync();
    out[0] = s;
}
"""


def test_cooperative_groups_barriers_and_warp_collectives():
    f = parse_cuda(COOP, "k.cu")
    assert [(e.what, e.line, e.labels["scope"]) for e in f.syncs] == [
        ("cg::sync", 10, "block"), ("warp.sync", 12, "warp")]
    assert [(e.what, e.line) for e in f.warp] == [("warp.shfl_xor", 11), ("cg::reduce", 13)]
    assert ("grid_sync", 14) in [(e.what, e.line) for e in f.other_idioms]


# Templated kernels are launched as `kern<T, 256><<<...>>>`; block sizes are often macro
# expressions; a macro defined differently in the two branches of an #if has no single value.
TEMPLATES = """
#define WARPS 4
#define THREADS (WARPS * 32)
#if USE_WIDE
#define TILE 64
#else
#define TILE 32
#endif
template <typename T, int BLOCK>
__global__ void scale(const T* x, T* y, int n) {
    __shared__ float stage[TILE];
    __shared__ float warp_part[THREADS / 32];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) y[i] = x[i];
}
void run(const float* x, float* y, int n) {
    scale<float, THREADS><<<(n + THREADS - 1) / THREADS, THREADS>>>(x, y, n);
}
"""


def test_template_launch_macro_expressions_and_ambiguous_macros():
    f = parse_cuda(TEMPLATES, "k.cu")
    items = {i.kind + ":" + i.labels.get("name", ""): i for i in cuda_items(f, "cuda-static@1")}
    k = items["cuda.kernel:scale"]
    assert k.labels["launch_line"] == "17" and k.metrics["block_threads"] == 128
    assert items["cuda.shared_memory:warp_part"].metrics["bytes"] == 16
    stage = items["cuda.shared_memory:stage"]
    assert stage.labels["dims"] == "?" and "bytes" not in stage.metrics  # TILE is 32 or 64


# One .cu file often holds several kernels (forward and backward, kernel1..kernelN): the migration
# verdicts compare the port with the manifest's cuda_entry and the device functions it calls, not
# with atomics, shared arrays and launches of the file's other kernels.
TWO_KERNELS = """
#define FWD_THREADS 128
__device__ float square(float v) { return v * v; }
__global__ void fwd(const float* x, float* y, int cols) {
    float acc = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += square(x[blockIdx.x * cols + c]);
    y[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
__global__ void bwd(const float* dy, float* dx, int cols) {
    __shared__ float grad[1024];
    grad[threadIdx.x] = dy[threadIdx.x];
    __syncthreads();
    atomicAdd(&dx[blockIdx.x], grad[threadIdx.x]);
}
void run(const float* x, float* y, float* dx, int rows, int cols) {
    bwd<<<rows, 1024>>>(y, dx, cols);
    fwd<<<rows, FWD_THREADS>>>(x, y, cols);
}
"""
ELEMENTWISE_PORT = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
@nki.jit
def fwd(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nl.square(t))
    return out
"""


def test_migration_verdicts_look_at_the_entry_kernel_only():
    from evidence.static.engine import analyze, bindings_from
    from evidence.static.migration import migration_items

    a = analyze(ELEMENTWISE_PORT, file="kernel.py", inputs=bindings_from({"x": ((128, 512), "float32")}))
    got = {i.kind: i for i in migration_items(parse_cuda(TWO_KERNELS, "k.cu"), a, "cuda-static@1", "fwd")}
    assert got["migration.atomics"].labels["verdict"] == "not_needed"  # the atomicAdd is bwd's
    tiling = got["migration.tiling"].labels["cuda"]
    assert tiling.startswith("0 __shared__ array(s), 0 B; block of 128 threads"), tiling
    assert got["migration.idioms"].labels["verdict"] == "none"  # fwd has no barrier
    assert "fwd" in got["migration.accumulation"].labels["cuda_scope"]
    assert "square" in got["migration.accumulation"].labels["cuda_scope"]


# The input dtype of an accumulator is that of the function it sits in (and of the kernel that
# calls a helper), not of the first kernel of the file; benchmark kernels often take non-const
# `float* inp` pointers.
MIXED_DTYPES = """
__global__ void sum_half(const __half* x, float* out, int n) {
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) acc += __half2float(x[i]);
    out[threadIdx.x] = acc;
}
__device__ float dot(const float* a, const float* b, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}
__global__ void sum_float(float* out, float* inp, int n) {
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) acc += inp[i];
    out[threadIdx.x] = acc + dot(inp, inp, n);
}
"""


def test_accumulator_input_dtype_is_its_own_functions():
    f = parse_cuda(MIXED_DTYPES, "k.cu")
    got = {(e.function, e.what): e.labels["input_dtype"] for e in f.accumulators}
    assert got == {("sum_half", "acc"): "float16", ("dot", "s"): "float32", ("sum_float", "acc"): "float32"}


# A file tree-sitter cannot fully parse (a kernel defined through a macro, a truncated upload) must
# say so: absence-based facts ("no atomics", "no CUDA-only idioms") are not evidence then.
UNPARSABLE = """
#define DEFINE_SCALE(name) __global__ void name(float* y) { atomicAdd(y, 1.0f); }
DEFINE_SCALE(scale_a)
__global__ void scale_b(float* y, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) { y[i] *= 2.0f;
"""


def test_parse_errors_are_reported_and_absence_verdicts_become_unknown():
    from evidence.static.engine import analyze, bindings_from
    from evidence.static.migration import migration_items

    f = parse_cuda(UNPARSABLE, "k.cu")
    assert f.parse_errors
    (err,) = [i for i in cuda_items(f, "cuda-static@1") if i.kind == "cuda.parse_error"]
    assert err.location.start_line >= 3 and "did not parse" in err.title
    a = analyze(ELEMENTWISE_PORT, file="kernel.py", inputs=bindings_from({"x": ((128, 512), "float32")}))
    got = {i.kind: i.labels for i in migration_items(f, a, "cuda-static@1")}
    assert got["migration.atomics"]["verdict"] == "unknown"
    assert got["migration.idioms"]["verdict"] == "unknown"
    assert "did not fully parse" in got["migration.atomics"]["cuda"]


# Tensor-core GEMMs accumulate in wmma accumulator fragments, not in a `+=` variable: the
# fragment's element type is the kernel's accumulation dtype, the matrix_a fragment's its input.
WMMA = """
#include <mma.h>
using namespace nvcuda;
__global__ void hgemm(half* a, half* b, float* c, int K) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a_frag;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b_frag;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2];
    wmma::fill_fragment(acc[0], 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a_frag, a + k, K);
        wmma::load_matrix_sync(b_frag, b + k, K);
        wmma::mma_sync(acc[0], a_frag, b_frag, acc[0]);
    }
    wmma::store_matrix_sync(c, acc[0], 16, wmma::mem_row_major);
}
"""


def test_wmma_accumulator_fragment_is_the_accumulation_dtype():
    f = parse_cuda(WMMA, "k.cu")
    assert [(e.what, e.line, e.labels["accumulator_dtype"], e.labels["input_dtype"]) for e in f.accumulators] == [
        ("acc", 12, "float32", "float16")]


# Templated kernels reach dynamic shared memory through a helper struct whose conversion operator
# declares the `extern __shared__` array: the kernel that constructs the struct uses that memory.
SHARED_STRUCT = """
template <class T>
struct Smem {
    __device__ inline operator T *() {
        extern __shared__ int raw[];
        return (T *)raw;
    }
};
template <class T>
__global__ void tree_sum(const T* in, T* out) {
    T *buf = Smem<T>();
    buf[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = buf[0];
}
__global__ void other(float* y) { y[threadIdx.x] = 0.0f; }
"""


def test_dynamic_shared_memory_behind_a_helper_struct_belongs_to_the_kernel():
    from evidence.static.engine import analyze, bindings_from
    from evidence.static.migration import migration_items

    f = parse_cuda(SHARED_STRUCT, "k.cu")
    (raw,) = f.shared
    assert raw.function == "Smem::operator T *()" and raw.labels["dynamic"] == "true"
    assert raw.function in f.reachable(["tree_sum"]) and raw.function not in f.reachable(["other"])
    a = analyze(ELEMENTWISE_PORT, file="kernel.py", inputs=bindings_from({"x": ((128, 512), "float32")}))
    got = {i.kind: i.labels for i in migration_items(f, a, "cuda-static@1", "tree_sum")}
    assert got["migration.tiling"]["cuda"].startswith("0 static __shared__ array(s), 0 B, dynamic shared memory")


# A register-tiled GEMM accumulates into a local array (`float acc[4][4]`), and a grid-stride
# kernel computes its start index as blockIdx * blockDim + threadIdx before striding by the grid:
# its indexing pattern is grid_stride, not one element per thread.
REGISTER_TILE = """
__global__ void tile_gemm(const float* a, const float* b, float* c, int K) {
    float acc[4][4] = {};
    __shared__ float staged[64];
    int row = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
    for (int k = 0; k < K; k++) {
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) acc[i][j] += a[(row + i) * K + k] * b[k * 4 + j];
    }
    staged[threadIdx.x] += acc[0][0];
    c[row] = staged[threadIdx.x];
}
__global__ void add_one(float* y, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = blockDim.x * gridDim.x;
    for (int i = idx; i < n; i += stride) y[i] += 1.0f;
}
"""


def test_register_array_accumulator_and_grid_stride_indexing():
    f = parse_cuda(REGISTER_TILE, "k.cu")
    assert [(e.function, e.what, e.labels["accumulator_dtype"]) for e in f.accumulators] == [
        ("tile_gemm", "acc", "float32")]  # not the __shared__ staging array, not the output pointer
    patterns = {i.location.start_line: i.labels["pattern"] for i in cuda_items(f, "cuda-static@1")
                if i.kind == "cuda.thread_indexing"}
    assert patterns == {2: "global_index", 13: "grid_stride"}


def test_uint_and_bool_shared_arrays_have_sizes():
    f = parse_cuda("__global__ void h(uint* out) { __shared__ uint bins[256]; __shared__ bool last; "
                   "bins[threadIdx.x] = 0; last = false; }", "k.cu")
    assert {e.what: (e.labels["dtype"], e.value) for e in f.shared} == {"bins": ("uint32", 1024), "last": ("bool", 1)}


# llm.c kernels call warp reductions from a header (common.h) that is not part of the submission:
# the verdicts cannot see shuffles there, and say which helpers they could not read.
EXTERNAL_HELPER = """
#include "common.h"
__global__ void row_mean(const float* x, float* out, int C) {
    float s = 0.0f;
    for (int i = threadIdx.x; i < C; i += blockDim.x) s += x[blockIdx.x * C + i];
    s = warpReduceSum(s);
    if (threadIdx.x == 0) out[blockIdx.x] = sqrtf(s) / C + __expf(0.0f);
}
"""


def test_migration_names_helpers_defined_outside_the_file():
    from evidence.static.engine import analyze, bindings_from
    from evidence.static.migration import migration_items

    a = analyze(ELEMENTWISE_PORT, file="kernel.py", inputs=bindings_from({"x": ((128, 512), "float32")}))
    got = {i.kind: i.labels for i in migration_items(parse_cuda(EXTERNAL_HELPER, "k.cu"), a, "cuda-static@1")}
    assert got["migration.idioms"]["cuda_external_calls"] == "warpReduceSum"
    assert "not defined in k.cu: warpReduceSum" in got["migration.idioms"]["cuda"]


# The two branches of an #if may both define the kernel (an sm_80 path and a fallback): both are
# read and their facts merged, and the kernel item says so rather than presenting one body.
BRANCHES = """
#if __CUDA_ARCH__ >= 800
__global__ void accumulate(float* y) { atomicAdd(y, 1.0f); }
#else
__global__ void accumulate(float* y) { __syncthreads(); y[threadIdx.x] += 1.0f; }
#endif
"""


def test_kernel_defined_in_both_preprocessor_branches_is_flagged():
    f = parse_cuda(BRANCHES, "k.cu")
    (k,) = [i for i in cuda_items(f, "cuda-static@1") if i.kind == "cuda.kernel"]
    assert k.labels["definitions"] == "2" and "2 definitions" in k.title


# `A += row * K;` on a `float *A` parameter moves a pointer; it accumulates nothing.
POINTER_BUMP = """
__global__ void gemm_rows(int K, float *A, const float *B, float *C) {
    A += blockIdx.y * 64 * K;
    float *out = C + blockIdx.x;
    out += threadIdx.x;
    float acc = 0.0f;
    for (int k = 0; k < K; k++) acc += A[k] * B[k];
    *out = acc;
}
"""


def test_pointer_arithmetic_is_not_an_accumulator():
    f = parse_cuda(POINTER_BUMP, "k.cu")
    assert [e.what for e in f.accumulators] == ["acc"]


# Hand-tuned kernels (flash-attention style) issue tensor-core MMAs, barriers, shuffles and atomics
# as inline PTX: the asm text is read for them, and an mma's accumulator/input types come from
# its PTX type suffixes.
INLINE_PTX = r"""
__device__ void mma_bf16(float* d, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__global__ void attn(const unsigned* q, const unsigned* k, float* o) {
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    mma_bf16(acc, q, k);
    asm volatile("bar.sync 0;");
    o[threadIdx.x] = acc[0];
}
"""


def test_inline_ptx_mma_barrier_is_seen():
    f = parse_cuda(INLINE_PTX, "k.cu")
    assert [(e.what, e.function) for e in f.tensor_core] == [("asm:mma.sync", "mma_bf16")]
    assert [(e.what, e.labels["scope"]) for e in f.syncs] == [("asm:bar.sync", "block")]
    (acc,) = f.accumulators
    assert (acc.function, acc.labels["accumulator_dtype"], acc.labels["input_dtype"]) == ("mma_bf16", "float32", "bfloat16")


# An element-wise update of a variable declared inside the loop body (`float p = w[i]; p -= lr * g;`)
# is not carried across iterations: it accumulates nothing. A sum declared before the loop does.
PER_ITERATION = """
__global__ void sgd(float* w, const float* g, float lr, int n) {
    float total = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float p = w[i];
        p -= lr * g[i];
        w[i] = p;
        total += g[i];
    }
    w[n + threadIdx.x] = total;
}
"""


def test_per_iteration_update_is_not_an_accumulator():
    f = parse_cuda(PER_ITERATION, "k.cu")
    assert [e.what for e in f.accumulators] == ["total"]


def test_macro_sizes_that_grow_past_64_bits_or_nest_too_deep_are_unknown_not_folded():
    # submitted text is untrusted: a macro chain squaring itself must not be folded into an unbounded
    # integer (each step doubles its digits), and deep nesting must not escape the reader
    chain = "#define A0 (1<<62)\n" + "".join(f"#define A{i} (A{i - 1}*A{i - 1})\n" for i in range(1, 13))
    deep = "#define D " + "+".join(["1"] * 20000) + "\n"  # too deep a tree for Python's parser
    src = chain + deep + "#define OK (4*32)\n__global__ void k(float* x) {\n" \
        "  __shared__ float s[A12];\n  __shared__ float d[D];\n  __shared__ float t[OK];\n  x[0] = s[0] + d[0] + t[0];\n}\n"
    f = parse_cuda(src, "k.cu")
    dims = {e.what: e.labels["dims"] for e in f.shared}
    assert dims == {"s": "?", "d": "?", "t": "128"}
