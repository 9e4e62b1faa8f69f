"""The simulation evidence collector ("nki-simulator").

Without a reference or inputs the kernel is not run: one `sim.not_run` item says so. For a submission with a
reference and inputs: the static import policy first (a high finding and
the submission is not executed: `sim.refused`); then the sandbox's status (unavailable: the code is
never run, `sim.incomplete` "sandbox unavailable: ..."); then two sandboxed children at once, one
simulating the kernel (`timeout_s`), one running the reference (`reference_timeout_s`), each on its
own generated inputs and without the other's file. Their outputs are compared here, in the
grader's process (`sim_evidence.SimEvidence`), so submitted code never touches what it is compared
with. A failing reference is `sim.reference_error` and the kernel's trace and findings are kept.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from evidence.collector import Collector
from evidence.model import EvidenceItem, Location, Severity, make_id
from evidence.nki.sim_evidence import SimEvidence
from evidence.nki.trace_items import TRACE_FACT_KINDS
from evidence.sandbox.bwrap import sandbox_status
from evidence.sandbox.config import SandboxConfig
from evidence.sandbox.jobs import run_job
from evidence.sandbox.kinds import SECURITY_KINDS
from evidence.sandbox.policy_collector import policy_of
from evidence.sandbox.protocol import ChildError, ChildJob
from evidence.submission import Submission

SIM_KINDS = {
    "sim.output": "one kernel output compared with the reference (rel_l2, max errors, mismatch fraction)",
    "sim.error": "the simulation stopped on a defect of the kernel: constraint violation or Python error",
    "sim.incomplete": "the simulation could not finish for a reason that is not a kernel defect: an op the "
                      "simulator lacks, a module it cannot import, a time, memory, CPU or output limit, a crash, "
                      "no sandbox to run it in",
    "sim.finding": "non-fatal simulator finding (output dependency, uninitialised read, capacity, ...)",
    "sim.trace": "instruction-trace summary: HBM traffic, DMAs, engine instruction counts, FLOPs, peaks",
    "sim.unsupported_dialect": "kernel is in an NKI dialect the simulator does not run (none today: beta and "
                               "standalone nki 0.3+ are both simulated; kept for bundles made before)",
    "sim.reference_error": "the submission's reference function failed",
    "sim.refused": "the submission was not executed: its code reaches the system or the interpreter's internals "
                   "(see the security items)",
    "sim.not_run": "the kernel was not simulated because the submission gives nothing to run it against (labels: "
                   "reason = no_reference | no_inputs): nothing it does on the device was observed",
    **TRACE_FACT_KINDS,
}


# input dtypes numpy stores, and so computes in, below fp32 (tfloat32 inputs are fp32 arrays): a reference on them
# rounds as it goes
_LOW_PRECISION_INPUTS = frozenset({"bfloat16", "float16", "float8_e4m3", "float8_e5m2"})


class SimulationCollector(Collector):
    name = "nki-simulator"
    version = "4"  # 4: a submission without a reference or inputs gets one sim.not_run item (3: a run stopped only by
    # the checks of its returned outputs keeps its trace facts)
    kinds = {**SIM_KINDS, **{k: v for k, v in SECURITY_KINDS.items() if k != "security.stand_in"}}
    timeout_s: float = 120.0  # the kernel child
    reference_timeout_s: float = 60.0  # the reference child
    memory_limit_bytes: int = 6 * 2**30
    cpu_limit_s: int = 300
    seed: int = 0
    sandbox: SandboxConfig = SandboxConfig()

    def applies(self, submission: Submission) -> bool:
        return submission.manifest.kernel.file in submission.files

    def collect(self, submission: Submission) -> list[EvidenceItem]:
        self.sandbox = SandboxConfig.model_validate(self.sandbox)  # options may give it as a plain dict
        evidence = SimEvidence(submission, self.analyzer)
        if submission.manifest.reference is None or not submission.manifest.inputs:
            return [self._not_run(submission, evidence)]
        blocking = policy_of(submission).blocking
        if self.sandbox.import_policy and blocking:
            return [self._refused(blocking)]
        status = sandbox_status(self.sandbox)
        if not status.available:
            message = f"sandbox unavailable: {status.detail}; fix: {status.fix}"
            line = evidence.def_line(submission.manifest.kernel.file, submission.manifest.kernel.entry)
            return [evidence.kernel_error(ChildError(code="sandbox_unavailable", message=message), evidence.loc(None, line))]
        kernel_job, reference_job = self.jobs(submission)
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="nki-sim") as pool:
            runs = [pool.submit(run_job, job, submission.files, self.sandbox, status)
                    for job in (kernel_job, reference_job)]
            kernel, reference = (r.result() for r in runs)
        start = time.perf_counter()
        items = evidence.items(kernel, reference)
        # the two children run side by side; the comparison runs here once both are back
        self.timings = {"kernel": kernel.wall_s, "reference": reference.wall_s, "compare": time.perf_counter() - start}
        return items

    def jobs(self, submission: Submission) -> tuple[ChildJob, ChildJob]:
        m = submission.manifest
        limits = self.sandbox.limits.model_copy(update={"memory_bytes": self.memory_limit_bytes,
                                                        "cpu_s": self.cpu_limit_s})
        common = dict(inputs=m.inputs, seed=self.seed, limits=limits, import_policy=self.sandbox.import_policy)
        separate = m.reference.file != m.kernel.file
        kernel = ChildJob(role="kernel", file=m.kernel.file, entry=m.kernel.entry, grid=m.kernel.grid,
                          target=m.task.target, neuron_sdk=m.task.neuron_sdk, timeout_s=self.timeout_s,
                          withheld=(m.reference.file,) if separate else (), **common)
        # with low-precision float inputs the reference also runs on them widened to float64: numpy on bf16/fp16
        # arrays computes in that precision, and `sim.output` must not blame the kernel for the reference's rounding
        low = any(s.is_tensor and s.dtype in _LOW_PRECISION_INPUTS for s in m.inputs)
        reference = ChildJob(role="reference", file=m.reference.file, entry=m.reference.entry,
                             timeout_s=self.reference_timeout_s, withheld=(m.kernel.file,) if separate else (),
                             reference_variants=("f64",) if low else (), **common)
        return kernel, reference

    def _not_run(self, submission: Submission, evidence: SimEvidence) -> EvidenceItem:
        """Without a reference (or inputs) the kernel is never simulated: one item says so, so the criteria the
        simulation informs are read as judged on the source alone, not as observed (a trace-only cost estimate
        may still run: it is no simulation of the kernel's values or constraints)."""
        m = submission.manifest
        reason = "no_reference" if m.reference is None else "no_inputs"
        what = "no reference to compare with" if m.reference is None else "no inputs to run it on"
        return EvidenceItem(
            id=make_id("sim.not_run", m.kernel.file), kind="sim.not_run", analyzer=self.analyzer, severity=Severity.info,
            title=f"Not simulated: the submission has {what}",
            detail="The kernel was not run by the simulator: its outputs, tiles, transfers, dtypes on the device and "
                   "the simulator's checks of the compiler's constraints were not observed.",
            location=evidence.loc(None, evidence.def_line(m.kernel.file, m.kernel.entry)), labels={"reason": reason})

    def _refused(self, blocking) -> EvidenceItem:
        first = blocking[0]
        where = ", ".join(f"{f.what} at {f.file}:{f.line}" for f in blocking[:5])
        more = f" and {len(blocking) - 5} more" if len(blocking) > 5 else ""
        return EvidenceItem(
            id=make_id("sim.refused", first.file, first.line), kind="sim.refused", analyzer=self.analyzer,
            severity=Severity.critical, title=f"Not executed: {first.what} at {first.file}:{first.line}",
            detail=f"The submission reaches the system or the interpreter's internals ({where}{more}), so the "
                   "grader did not run it; see the security items.",
            location=Location(file=first.file, start_line=first.line, end_line=first.line),
            labels={"code": "refused", "what": first.what}, metrics={"blocking": float(len(blocking))})
