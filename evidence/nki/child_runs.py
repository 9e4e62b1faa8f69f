"""Sandboxed kernel and reference runs for collectors other than the simulator's own (the cost model's
trace-only run, the error model's trials), through the same gate, jobs and sandbox as `nki-simulator`.

A submission the import policy refuses, or one that no sandbox can run, is not executed: `ChildRuns`
then says why (`refused`) and the collectors emit nothing (the simulator collector reports it).
"""

from __future__ import annotations

from evidence.nki.collector import SimulationCollector
from evidence.sandbox.bwrap import sandbox_status
from evidence.sandbox.config import SandboxConfig
from evidence.sandbox.jobs import run_job
from evidence.sandbox.outcome import ChildOutcome
from evidence.sandbox.policy_collector import policy_of
from evidence.sandbox.protocol import ChildJob
from evidence.submission import Submission


class ChildRuns:
    def __init__(self, submission: Submission, *, timeout_s: float, reference_timeout_s: float,
                 memory_limit_bytes: int, sandbox: SandboxConfig) -> None:
        self.submission = submission
        self.sandbox = sandbox
        self.sim = SimulationCollector(timeout_s=timeout_s, reference_timeout_s=reference_timeout_s,
                                       memory_limit_bytes=memory_limit_bytes, sandbox=sandbox)
        self.refused = ""
        if sandbox.import_policy and policy_of(submission).blocking:
            self.refused = "the import policy refuses the submission"
        self.status = sandbox_status(sandbox)
        if not self.refused and not self.status.available:
            self.refused = f"sandbox unavailable: {self.status.detail}"

    def jobs(self, **changes) -> tuple[ChildJob, ChildJob | None]:
        """The simulator's kernel and reference jobs with `changes` applied to both (e.g. seed, inputs)."""
        kernel, reference = self.sim.jobs(self.submission) if self.submission.manifest.reference else (
            self._kernel_only(), None)
        kernel = kernel.model_copy(update=changes)
        return kernel, (reference.model_copy(update=changes) if reference is not None else None)

    def _kernel_only(self) -> ChildJob:
        m = self.submission.manifest
        limits = self.sandbox.limits.model_copy(update={"memory_bytes": self.sim.memory_limit_bytes,
                                                        "cpu_s": self.sim.cpu_limit_s})
        return ChildJob(role="kernel", file=m.kernel.file, entry=m.kernel.entry, grid=m.kernel.grid,
                        target=m.task.target, neuron_sdk=m.task.neuron_sdk, timeout_s=self.sim.timeout_s, inputs=m.inputs, limits=limits,
                        import_policy=self.sandbox.import_policy)

    def run(self, job: ChildJob, label: str = "") -> ChildOutcome:
        if self.refused:
            raise RuntimeError(self.refused)
        return run_job(job, self.submission.files, self.sandbox, self.status, label)
