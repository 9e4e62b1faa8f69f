"""Print the README's validation table: the cost model's estimates of our four matmul-tutorial stages
against the latencies the NKI tutorial published for trn1 (REFERENCE §5.2)."""

from __future__ import annotations

from pathlib import Path

from evidence.nki import load_kernel, simulate
from evidence.nki.shim import language as nl
from evidence.nki.shim import typing as nt
from evidence.perf import estimate

KERNELS = Path(__file__).resolve().parents[1] / "tests" / "evidence" / "perf" / "kernels" / "matmul_tutorial.py"
PUBLISHED_MS = {"tiled": 51.80, "hoisted": 42.96, "blocked_free": 22.07, "fully_optimised": 6.97}


def main() -> None:
    mod = load_kernel(KERNELS)
    args = nt.tensor[[8192, 4096], nl.bfloat16], nt.tensor[[8192, 8192], nl.bfloat16]
    print("| stage | published (ms) | estimated (ms) | ratio | bottleneck | MFU | DMA busy |")
    print("|---|---|---|---|---|---|---|")
    for name, pub in PUBLISHED_MS.items():
        est = estimate(simulate(getattr(mod, name), *args, target="trn1", trace_only=True))
        ms = est.time_s * 1e3
        print(f"| {name} | {pub:.2f} | {ms:.2f} | {ms / pub:.2f} | {est.bottleneck} | {est.mfu:.0%} | "
              f"{est.engine_utilisation['dma']:.0%} |")


if __name__ == "__main__":
    main()
