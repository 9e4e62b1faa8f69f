"""The "perf" collector: the cost model's estimate, roofline, bottleneck and what-ifs, and benchmark
claims checked against the kernel's own bytes, FLOPs and estimate.

It runs the kernel trace-only (shape placeholders, no arithmetic, no reference) in a sandboxed child
(evidence.nki.child_runs: the simulator's gate, jobs, sandbox and limits); the child schedules the
trace and sends back only the summary (evidence.perf.analysis). The static rules' findings on the
kernel and the helper-module code it reaches are passed in as what-if hints, with their file. Claims with other shapes than the task's, and a baseline
kernel named by a speedup claim, get their own trace-only runs.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import ClassVar

from evidence.collector import Collector
from evidence.memo import memoized
from evidence.model import EvidenceItem, Location, Severity, make_id
from evidence.nki.child_runs import ChildRuns
from evidence.perf.analysis import PerfResult
from evidence.perf.claim_checks import CLAIM_CHECK_KINDS, ClaimContext, claim_items
from evidence.perf.claims import ClaimsFormatError, parse_claims
from evidence.perf.items import PERF_KINDS, perf_items
from evidence.perf.spec import SpecError
from evidence.sandbox.config import SandboxConfig
from evidence.submission import Submission

_HINT_RULES = ("hoistable-load", "sequential-without-dependency", "psum-accumulate-not-inplace",
               "matmul-implicit-transpose", "load-transpose-in-loop")


def static_hints(submission: Submission) -> list[tuple[str, int, int, str]]:
    """(rule id, first line, last line, file) of the static findings the what-ifs know how to apply, in the
    kernel file and in the helper modules it reaches. (A sequential loop is matched by line alone, so a
    helper module's sequential-without-dependency finding is not passed.)"""
    from evidence.static.collectors import submission_analyses

    try:
        analysis, helpers = submission_analyses(submission)
    except Exception:  # a kernel the static analyser cannot read still gets an estimate
        return []
    hints = [(f.rule, f.start, f.end, analysis.file) for f in analysis.findings if f.rule in _HINT_RULES]
    return hints + [(f.rule, f.start, f.end, h.file) for h in helpers for f in h.findings
                    if f.rule in _HINT_RULES and f.rule != "sequential-without-dependency"]


class PerfCollector(Collector):
    name = "perf"
    version = "3"
    kinds: ClassVar[dict[str, str]] = {**PERF_KINDS, **CLAIM_CHECK_KINDS}
    timeout_s: float = 120.0
    reference_timeout_s: float = 60.0  # unused (no reference runs here); accepted with the simulator's options
    memory_limit_bytes: int = 6 * 2**30
    sandbox: SandboxConfig = SandboxConfig()
    spec_override: str | None = None  # a TOML file overriding the hardware table (evidence.perf.spec)
    whatif_limit: int = 3

    def applies(self, submission: Submission) -> bool:
        m = submission.manifest
        return m.kernel.file.endswith(".py") and m.kernel.file in submission.files and bool(m.inputs)

    def _override(self) -> dict | None:
        if not self.spec_override:
            return None
        try:
            return tomllib.loads(Path(self.spec_override).read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise SpecError("spec_invalid", f"{self.spec_override}: cannot read the hardware-table override: {exc}") from exc

    def run(self, submission: Submission, hints=()) -> tuple[PerfResult | None, int]:
        """Trace-only run of the submission's kernel with the cost model in the sandboxed child:
        (the result, or None when the kernel did not run or the model failed; the kernel's def line)."""
        perf, line = self._run(submission, hints)
        return (PerfResult.model_validate(perf) if perf and "estimate" in perf else None), line

    def _run(self, submission: Submission, hints=()) -> tuple[dict | None, int]:
        """The child's perf summary (or its `error`), None when the kernel did not run; the kernel's def line."""
        runs = ChildRuns(submission, timeout_s=self.timeout_s, reference_timeout_s=self.reference_timeout_s,
                         memory_limit_bytes=self.memory_limit_bytes, sandbox=self.sandbox)
        if runs.refused:
            return None, 0
        request = {"hints": [list(h) for h in hints], "whatif_limit": self.whatif_limit,
                   "spec_override": self._override()}
        kernel, _ = runs.jobs(trace_only=True, perf=request)
        outcome = runs.run(kernel, "perf")
        if outcome.result.status != "ok":
            return None, outcome.result.entry_line
        return outcome.result.perf or {}, outcome.result.entry_line

    def collect(self, submission: Submission) -> list[EvidenceItem]:
        key = (self.name, self.version, submission.content_hash, repr(self._override()), tuple(sorted(
            (k, repr(v)) for k, v in vars(self).items())))
        return memoized(key, lambda: self._collect(submission))

    def _collect(self, submission: Submission) -> list[EvidenceItem]:
        m = submission.manifest
        raw, line = self._run(submission, static_hints(submission))
        if raw is None:
            return []  # the simulator collector reports why the kernel did not run
        kernel_loc = Location(file=m.kernel.file, start_line=line, end_line=line) if line >= 1 else None
        if "estimate" not in raw:  # the kernel ran; the cost model could not price it: say why
            return [EvidenceItem(
                id=make_id("perf.unavailable", m.kernel.file), kind="perf.unavailable", analyzer=self.analyzer,
                severity=Severity.low, location=kernel_loc, title="No cost-model estimate",
                detail=str(raw.get("error") or "the cost model returned no estimate"),
                labels={"target": m.task.target})]
        perf = PerfResult.model_validate(raw)
        items = perf_items(perf, self.analyzer, submission.files, kernel_loc)
        if m.claims is not None and m.claims.file in submission.files:
            try:
                claims = parse_claims(submission.files[m.claims.file], m.claims.file)
            except ClaimsFormatError:
                return items  # the claims collector reports the format error
            ctx = ClaimContext(submission=submission, perf=perf, run=lambda sub: self.run(sub)[0])
            items += claim_items(claims, ctx, self.analyzer)
        return items
