"""Launches written through macros, kernel qualifiers from a header the submission includes, and `__device__`
lambdas handed to a templated kernel: the shapes PyTorch's ATen kernels, llm.c-style benchmarks and
flash-attention launchers use. Every snippet is written for these tests."""

from __future__ import annotations

from evidence.static.collectors import CudaStaticCollector
from evidence.static.cuda import parse_cuda
from evidence.submission import KernelSpec, Manifest, MigrationSpec, Submission, TaskSpec

# A launch macro at file scope (variadic, with an error check) and one defined inside the launcher for a
# switch over a template integer, the way dispatching launchers spell one launch per head size.
MACRO_LAUNCHES = """
#define CHECK_LAUNCH() do { cudaError_t e = cudaGetLastError(); if (e != cudaSuccess) abort(); } while (0)
#define LAUNCH(kern, grid, block, ...) do { kern<<<grid, block>>>(__VA_ARGS__); CHECK_LAUNCH(); } while (0)
#define THREADS 256

__global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}

template <int D>
__global__ void rownorm(const float* x, float* out) {
  float s = 0.f;
  for (int k = threadIdx.x; k < D; k += blockDim.x) s += x[blockIdx.x * D + k] * x[blockIdx.x * D + k];
  atomicAdd(out + blockIdx.x, s);
}

void run_axpy(float a, const float* x, float* y, int n) {
  LAUNCH(axpy, (n + THREADS - 1) / THREADS, THREADS, a, x, y, n);
}

void run_rownorm(const float* x, float* out, int rows, int d) {
  const dim3 block(128);
#define LAUNCH_D(D) rownorm<D><<<rows, block>>>(x, out)
  switch (d) {
    case 64: LAUNCH_D(64); break;
    case 128: LAUNCH_D(128); break;
  }
#undef LAUNCH_D
}
"""


def test_launches_written_through_macros_are_launches():
    f = parse_cuda(MACRO_LAUNCHES, "k.cu")
    lines = MACRO_LAUNCHES.splitlines()
    axpy = [e for e in f.launches if e.what == "axpy"]
    assert [(e.line, e.function, e.value) for e in axpy] == [
        (next(i for i, t in enumerate(lines, 1) if "LAUNCH(axpy" in t), "run_axpy", 256)]
    norms = [e for e in f.launches if e.what == "rownorm"]
    assert sorted(e.labels["template_args"] for e in norms) == ["<128>", "<64>"]
    assert {e.value for e in norms} == {128} and {e.function for e in norms} == {"run_rownorm"}
    assert f.parse_errors == []
    # a function-like macro without a launch in it stays a call: CHECK_LAUNCH gives no launch
    assert {e.what for e in f.launches} == {"axpy", "rownorm"}


COMMON_H = """#pragma once
#define DEVICE_FN __device__ __forceinline__
#define KERNEL_FN __global__ __launch_bounds__(256)
#define TILE 128
"""

HEADER_QUALIFIERS = """#include <cuda_runtime.h>
#include "../include/common.cuh"

DEVICE_FN float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
  return v;
}

KERNEL_FN void row_sum(const float* x, float* out, int cols) {
  float acc = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += x[blockIdx.x * cols + c];
  acc = warp_sum(acc);
  if (threadIdx.x == 0) out[blockIdx.x] = acc;
}

void launch(const float* x, float* out, int rows, int cols) { row_sum<<<rows, TILE>>>(x, out, cols); }
"""


def test_qualifiers_from_a_header_the_submission_includes():
    f = parse_cuda(HEADER_QUALIFIERS, "src/row_sum.cu", {"include/common.cuh": COMMON_H})
    quals = {fn.name: fn.qualifier for fn in f.functions}
    assert quals == {"warp_sum": "device", "row_sum": "global", "launch": "host"}
    assert f.parse_errors == []
    assert [e.value for e in f.launches] == [128]  # TILE from the header
    assert [e.function for e in f.warp] == ["warp_sum"] and "warp_sum" in f.reachable(["row_sum"])
    # a header the submission lacks is not read: the same file then has no kernel (as before)
    alone = parse_cuda(HEADER_QUALIFIERS, "src/row_sum.cu")
    assert {fn.name: fn.qualifier for fn in alone.functions}["row_sum"] == "host"


def test_the_collector_reads_the_manifests_cuda_headers():
    manifest = Manifest(task=TaskSpec(id="row-sum", title="Row sum"),
                        kernel=KernelSpec(file="kernel.py", entry="row_sum"),
                        migration=MigrationSpec(cuda_file="src/row_sum.cu", cuda_entry="row_sum",
                                                cuda_headers=("include/common.cuh",)))
    files = {"kernel.py": "def row_sum(x):\n    return x\n", "src/row_sum.cu": HEADER_QUALIFIERS,
             "include/common.cuh": COMMON_H}
    items = CudaStaticCollector().collect(Submission(manifest=manifest, files=files))
    kinds = {i.kind for i in items}
    assert "cuda.parse_error" not in kinds
    assert any(i.kind == "cuda.kernel" and "row_sum" in i.title for i in items)


DEVICE_LAMBDAS = """#define GPU_LAMBDA __host__ __device__

template <typename F>
__global__ void for_each(int n, F f) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) f(i);
}

__global__ void clamp_all(float* x, int n) {
  auto clampf = [] __device__ (float v) { return v < 0.f ? 0.f : v; };
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = clampf(x[i]);
}

void scale(float* out, const float* a, int n) {
  auto twice = [=] __device__ (int i) { out[i] = 2.0f * a[i]; };
  for_each<<<(n + 255) / 256, 256>>>(n, twice);
  for_each<<<(n + 255) / 256, 256>>>(n, [=] __device__ (int i) { atomicAdd(out, a[i]); });
  auto window = [=] GPU_LAMBDA (int i) {
    float s = 0.f;
    for (int k = 0; k < 4; ++k) s += a[i + k];
    out[i] = s;
  };
  for_each<<<(n + 255) / 256, 256>>>(n, window);
  auto host_only = [=](int i) { return a[i] + 1.0f; };
}
"""


def test_device_lambdas_are_device_code_reached_from_the_kernel_they_are_passed_to():
    f = parse_cuda(DEVICE_LAMBDAS, "k.cu")
    lines = DEVICE_LAMBDAS.splitlines()
    at = {name: next(i for i, t in enumerate(lines, 1) if name in t) for name in ("auto twice", "atomicAdd", "auto window")}
    assert f.parse_errors == []
    lambdas = {fn.name: fn.qualifier for fn in f.functions if ".lambda@" in fn.name}
    assert lambdas == {f"scale.lambda@{at['auto twice']}": "device", f"scale.lambda@{at['atomicAdd']}": "device",
                       f"scale.lambda@{at['auto window']}": "device"}  # the host-only lambda is host code
    # their atomics and sums are device facts, reached from the kernel the launches pass them to
    assert [(e.what, e.function) for e in f.atomics] == [("atomicAdd", f"scale.lambda@{at['atomicAdd']}")]
    acc = [e for e in f.accumulators if e.what == "s"]
    assert [(e.function, e.labels["input_dtype"]) for e in acc] == [(f"scale.lambda@{at['auto window']}", "float32")]
    assert set(lambdas) <= f.reachable(["for_each"])
    # `f(i)` calls what the launches pass, not a helper the file fails to define
    assert "f" not in f.calls["for_each"]
    # a lambda inside a kernel is that kernel's code, not a function of its own
    assert not any(fn.name.startswith("clamp_all.") for fn in f.functions)
