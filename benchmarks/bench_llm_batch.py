"""Calibration-sized batch through the LLM drafter: 50 submissions x 10 criteria, 200 ms per reply.

Runs the real litellm + instructor path against the loopback fake OpenAI server with simulated
latency, all drafts in one event loop sharing the drafter's concurrency bound. Prints total time,
the achieved maximum number of requests in flight, and the ratio against a serial baseline
estimated from a few calls measured in the same run with concurrency 1.

    .venv/bin/python benchmarks/bench_llm_batch.py [--submissions 50] [--concurrency 32] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evidence.model import EvidenceBundle, EvidenceItem, Location, Severity, sort_items  # noqa: E402
from evidence.submission import Submission  # noqa: E402
from grader.drafting.llm import LLMDrafter  # noqa: E402
from grader.rubric import Rubric  # noqa: E402
from grader.settings import Settings  # noqa: E402
from tests.fakes import llm_case as case  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer, Reply, verdict  # noqa: E402

CRITERIA_IDS = tuple(f"criterion_{n}" for n in range(1, 11))  # ten criteria; their ids do not matter


def make_rubric() -> Rubric:
    levels = {str(n): f"level {n}" for n in range(1, 6)}
    return Rubric.model_validate({
        "id": "bench", "version": "1", "title": "bench", "content_hash": "sha256:bench",
        "criteria": [{"id": c, "title": c, "description": f"criterion {c}", "evidence_kinds": ["nki.*", "sim.output"],
                      "basis": ["nki.kernel"], "levels": levels} for c in CRITERIA_IDS],
    })


def make_case(n: int) -> tuple[Submission, EvidenceBundle]:
    base = case.submission()
    files = dict(base.files)
    files["kernel.py"] = files["kernel.py"].replace("one 128-row tile", f"one 128-row tile (variant {n})")
    sub = base.model_copy(update={"files": files})
    items = [
        EvidenceItem(id="nki.kernel:kernel.py:6", kind="nki.kernel", analyzer="static@1", title="Kernel add_kernel",
                     location=Location(file="kernel.py", start_line=6, end_line=14)),
        EvidenceItem(id="sim.output:out", kind="sim.output", analyzer="sim@1", severity=Severity.medium,
                     title=f"variant {n}", metrics={"matches": 1.0, "max_rel_err": 1e-3 * n}),
    ]
    return sub, EvidenceBundle(submission_hash=sub.content_hash, items=sort_items(items))


def responder(latency: float):
    def reply(body: dict) -> Reply:
        r = verdict(4, "nki.kernel:kernel.py:6", rationale=f"{case.criterion_of(body)}: the kernel evidence supports 4.")
        r.delay_s = latency
        return r

    return reply


async def run_batch(drafter: LLMDrafter, cases, rubric) -> list:
    return await asyncio.gather(*(drafter.adraft(sub, bundle, rubric) for sub, bundle in cases))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--submissions", type=int, default=50)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--latency", type=float, default=0.2)
    args = ap.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-fake-key-for-loopback")
    rubric = make_rubric()
    cases = [make_case(n) for n in range(args.submissions)]
    with FakeOpenAIServer(default=responder(args.latency)) as server, tempfile.TemporaryDirectory() as tmp:
        def settings(concurrency: int) -> Settings:
            return Settings(model="openai/fake-judge", api_base=server.base_url, max_concurrency=concurrency,
                            use_cache=False, cache_dir=Path(tmp), timeout_s=10)

        # Warm-up (imports, tokenizer) outside the timings.
        LLMDrafter(settings(1)).draft(*cases[0], rubric.model_copy(update={"criteria": rubric.criteria[:1]}))

        # Serial baseline: one submission's 10 criteria at concurrency 1, extrapolated per call.
        server.reset()
        server.default = responder(args.latency)
        t0 = time.perf_counter()
        LLMDrafter(settings(1)).draft(*cases[0], rubric)
        per_call = (time.perf_counter() - t0) / len(server.requests)
        assert server.max_in_flight == 1

        server.reset()
        server.default = responder(args.latency)
        drafter = LLMDrafter(settings(args.concurrency))
        t0 = time.perf_counter()
        drafts = asyncio.run(run_batch(drafter, cases, rubric))
        total = time.perf_counter() - t0
        calls = len(server.requests)
        scored = sum(c.status == "scored" for d in drafts for c in d.criteria)

    serial = per_call * calls
    print(f"batch: {args.submissions} submissions x {len(rubric.criteria)} criteria = {calls} model calls, "
          f"{args.latency * 1000:.0f} ms simulated latency")
    print(f"scored criteria: {scored}/{args.submissions * len(rubric.criteria)}")
    print(f"total time: {total:.2f} s ({total / calls * 1000:.1f} ms per call amortised)")
    print(f"concurrency bound: {args.concurrency}; achieved max in flight: {server.max_in_flight}")
    print(f"serial baseline estimate: {serial:.1f} s ({per_call * 1000:.0f} ms per call measured at concurrency 1)")
    print(f"speed-up vs serial: {serial / total:.1f}x")


if __name__ == "__main__":
    main()
