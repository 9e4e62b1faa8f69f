"""Simulation cost per instruction as kernels grow: each workload is simulated at size n and 4n, and the
CPU seconds per instruction of the larger run are printed as a ratio to the smaller one's, measured in
the same run (so a shared, noisy machine moves both sides alike).

Why: the simulator's bookkeeping keeps per-tensor structures (placed tiles, written boxes, per-block
precision, HBM write stamps, view caches). A scan over one of them on every instruction turns a linear
simulation quadratic, and nothing else notices until a real kernel times out in the sandbox. Twice that
happened to the simulator: `overlapping_placement` comparing each new tile with every live one (a public
pipelined attention went from 27 s to over the 120 s limit) and the per-input precision tracker scanning
every block of an allocation on each read (7-13x on block-dimension tensors). A linear simulator prints
ratios near 1.0; a quadratic term shows as 2-4x. Target: every ratio <= 1.5 (`--check` exits 1 otherwise).

Each workload is a kernel written here that leans on one structure, at sizes where it still applies
(e.g. a modulo allocation shares each tile among at most 64 blocks, beyond which placement is not checked).
`--only NAME` runs one workload; `--repeat N` takes the best of N runs per size (default 3).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evidence.nki import load_kernel, simulate  # noqa: E402

TARGET = 1.5

BETA_HEADER = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import neuronxcc.nki.compiler as ncc
from neuronxcc.nki.language import par_dim
'''

# Blocks loaded one by one into a modulo allocation of one SBUF tile per 16 blocks, each summed before its tile
# comes round again (legal double buffering): every read checks the writes of the 16 blocks sharing its bytes,
# and every new tile is placed among all the live ones (the count that grows with n).
SBUF_ROTATION = BETA_HEADER + '''

@nki.jit
def rotate(x):
    n, P, F = x.shape
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    buf = nl.ndarray((n, par_dim(P), F), dtype=nl.float32,
                     buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(n // 16,)))
    acc = nl.ndarray((par_dim(P), F), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=n // 16 * F * 4))
    acc[...] = nl.zeros((P, F), dtype=nl.float32)
    for i in nl.sequential_range(n):
        buf[i] = nl.load(x[i])
        acc[...] = nl.add(acc, buf[i])
    nl.store(out, value=acc)
    return out
'''

# One matmul per block into a PSUM modulo allocation over 8 banks, copied out and summed: PSUM placement,
# matmul dispatch and the copy out of PSUM.
PSUM_ROTATION = BETA_HEADER + '''

@nki.jit
def rotate(a, b):
    n, K, M = a.shape
    _, N = b.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    b_t = nl.ndarray((par_dim(K), N), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))
    a_t = nl.ndarray((n, par_dim(K), M), dtype=nl.float32,
                     buffer=ncc.sbuf.mod_alloc(base_addr=N * 4, num_free_tiles=(2,)))
    acc = nl.ndarray((par_dim(M), N), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=(N + 2 * M) * 4))
    ps = nl.ndarray((n, par_dim(M), N), dtype=nl.float32, buffer=ncc.psum.mod_alloc(base_bank=0, num_bank_tiles=(8,)))
    b_t[...] = nl.load(b)
    acc[...] = nl.zeros((M, N), dtype=nl.float32)
    for i in nl.sequential_range(n):
        a_t[i] = nl.load(a[i])
        ps[i] = nisa.nc_matmul(a_t[i], b_t)
        acc[...] = nl.add(acc, ps[i])
    nl.store(out, value=acc)
    return out
'''

# A block-dimension SBUF tensor filled block by block, then read back block by block through a bf16 copy:
# per-block written boxes, page-pool storage and the per-input precision tracker's block lookups.
BLOCK_TENSOR = BETA_HEADER + '''

@nki.jit
def blocks(x):
    n, P, F = x.shape
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    buf = nl.ndarray((n, par_dim(P), F), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(n):
        buf[i] = nl.load(x[i])
    acc = nl.zeros((par_dim(P), F), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.sequential_range(n):
        acc[...] = nl.add(acc, nl.copy(buf[i], dtype=nl.bfloat16))
    nl.store(out, value=acc)
    return out
'''

# Compiler-style indices (every index an `arange + offset` expression) and lazily initialised PSUM groups of
# four matmuls each, copied into a block tensor and stored row-block by row-block: the strided-view caches,
# product batches and HBM write stamps.
COMPILER_GROUPS = BETA_HEADER + '''

@nki.jit
def groups(a, b):
    K, M = a.shape
    _, N = b.shape
    MT, KT = M // 128, K // 128
    out = nl.ndarray((M, N), dtype=np.float32, buffer=nl.shared_hbm)
    at = nl.ndarray((KT, MT, par_dim(128), 128), dtype=np.float32, buffer=nl.sbuf)
    bt = nl.ndarray((KT, par_dim(128), N), dtype=np.float32, buffer=nl.sbuf)
    res = nl.ndarray((MT, par_dim(128), N), dtype=np.float32, buffer=nl.sbuf)
    for k in nl.affine_range(KT):
        bt[k, nl.arange(128)[:, None], nl.arange(N)[None, :]] = nl.load(
            b[k * 128 + nl.arange(128)[:, None], nl.arange(N)[None, :]])
        for m in nl.affine_range(MT):
            at[k, m, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nl.load(
                a[k * 128 + nl.arange(128)[:, None], m * 128 + nl.arange(128)[None, :]])
    for m in nl.affine_range(MT):
        ps = nl.zeros((par_dim(128), N), dtype=np.float32, buffer=nl.psum, lazy_initialization=True)
        for k in nl.affine_range(KT):
            ps[nl.arange(128)[:, None], nl.arange(N)[None, :]] += nisa.nc_matmul(
                at[k, m, nl.arange(128)[:, None], nl.arange(128)[None, :]],
                bt[k, nl.arange(128)[:, None], nl.arange(N)[None, :]])
        res[m, nl.arange(128)[:, None], nl.arange(N)[None, :]] = nl.copy(
            ps[nl.arange(128)[:, None], nl.arange(N)[None, :]], dtype=np.float32)
        nl.store(out[m * 128 + nl.arange(128)[:, None], nl.arange(N)[None, :]],
                 value=res[m, nl.arange(128)[:, None], nl.arange(N)[None, :]])
    return out
'''

# nki 0.3+: dst-first ISA calls on buffers allocated per iteration, slices instead of masks, one small
# store per row tile into the same output (many stored boxes on one HBM tensor).
STANDALONE_STREAM = '''
import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def stream(x, y):
    n, F = x.shape
    out = nl.ndarray((n, F), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range(n // 32):
        xt = nl.ndarray((32, F), dtype=x.dtype, buffer=nl.sbuf)
        yt = nl.ndarray((32, F), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[t * 32:(t + 1) * 32, :])
        nisa.dma_copy(dst=yt, src=y[t * 32:(t + 1) * 32, :])
        res = nl.ndarray((32, F), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=res, data1=xt, data2=yt, op=nl.multiply)
        nisa.dma_copy(dst=out[t * 32:(t + 1) * 32, :], src=res)
    return out
'''


@dataclass(frozen=True)
class Workload:
    name: str
    source: str
    entry: str
    make_args: object  # size -> tuple of numpy arrays
    small: int
    expected: object  # the arrays -> what the kernel returns, in numpy


RNG = np.random.default_rng(7)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


WORKLOADS = [
    Workload("sbuf modulo rotation (placement)", SBUF_ROTATION, "rotate", lambda n: (_f32(n, 128, 64),), 128,
             lambda x: x.sum(0)),
    Workload("psum modulo rotation (placement, matmul)", PSUM_ROTATION, "rotate",
             lambda n: (_f32(n, 128, 128), _f32(128, 128)), 128,
             lambda a, b: np.einsum("nkm,kf->mf", a, b)),
    Workload("block-dimension tensor (boxes, precision)", BLOCK_TENSOR, "blocks", lambda n: (_f32(n, 128, 32),), 1024,
             lambda x: x.sum(0)),
    Workload("compiler-style PSUM groups (views, batches)", COMPILER_GROUPS, "groups",
             lambda n: (_f32(512, n * 128), _f32(512, 256)), 16,
             lambda a, b: a.T @ b),
    Workload("nki 0.3+ row stream (dst-first ops, HBM stamps)", STANDALONE_STREAM, "stream",
             lambda n: (_f32(n * 32, 256), _f32(n * 32, 256)), 128,
             lambda x, y: x * y),
]


def cost_per_instruction(kernel, args, repeat: int) -> tuple[float, int]:
    """Best CPU seconds per instruction over `repeat` runs (all threads: workers run products)."""
    best, count = float("inf"), 0
    for _ in range(repeat):
        c0 = time.process_time()
        sim = simulate(kernel, *args, keep_trace=False)
        elapsed = time.process_time() - c0
        count = sim.report.instructions
        best = min(best, elapsed / count)
    return best, count


def main(argv: list[str]) -> int:
    repeat = int(argv[argv.index("--repeat") + 1]) if "--repeat" in argv else 3
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    worst = 0.0
    for w in WORKLOADS:
        if only and only not in w.name:
            continue
        kernel = getattr(load_kernel(w.source, display=f"{w.entry}.py"), w.entry)
        small, n_small = cost_per_instruction(kernel, w.make_args(w.small), repeat)
        large, n_large = cost_per_instruction(kernel, w.make_args(4 * w.small), repeat)
        ratio = large / small
        worst = max(worst, ratio)
        print(f"{w.name}: n={w.small} {n_small} instr {small * 1e6:.0f} us/instr, "
              f"n={4 * w.small} {n_large} instr {large * 1e6:.0f} us/instr: ratio {ratio:.2f}x", flush=True)
    print(f"worst ratio {worst:.2f}x (target <= {TARGET}x: cost per instruction independent of kernel size)")
    return 1 if "--check" in argv and worst > TARGET else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
