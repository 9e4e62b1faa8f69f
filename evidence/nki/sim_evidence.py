"""Evidence items from the outcomes of the kernel child and the reference child.

The comparison of outputs with the reference happens here, in the grader's process: the children
only report arrays. Kinds: `sim.output` (one per output), `sim.trace`, `sim.finding`, `sim.error`,
`sim.incomplete`, `sim.unsupported_dialect`, `sim.reference_error`, and run-time `security.*` items
(the children's monitor events and the simulator's host-compute and input-mutation findings).
"""

from __future__ import annotations

import numpy as np

from evidence.model import EvidenceItem, Location, Severity, make_id
from evidence.nki.host_access import HOST_COMPUTE, INPUT_MUTATION
from evidence.nki.report import Report
from evidence.nki.trace_items import trace_fact_items
from evidence.numerics.compare import coarser_dtype, compare
from evidence.sandbox.kinds import security_item
from evidence.sandbox.outcome import ChildOutcome
from evidence.sandbox.protocol import ChildError, RuntimeEvent
from evidence.submission import Submission

SECURITY_FINDINGS = {HOST_COMPUTE: "host_compute", INPUT_MUTATION: "input_mutation"}
# Error codes that say the simulator could not judge the kernel, not that the kernel is wrong.
SIMULATOR_LIMIT_CODES = frozenset({"unsupported_op", "import_error", "timeout", "memory_limit", "cpu_limit", "crashed",
                                   "output_limit", "sandbox_unavailable"})


def headline(prefix: str, code: str, message: str) -> str:
    """A title a reviewer can read in a list: the code plus the first line of the message."""
    first = (message.strip().splitlines() or [""])[0]
    return f"{prefix}: {code}" + (f" — {first[:160]}" if first else "")


def rest(message: str) -> str:
    """The message beyond what its headline already shows (empty for a short one-line message)."""
    lines = message.strip().splitlines()
    if len(lines) == 1 and len(lines[0]) <= 160:
        return ""
    return message.strip()


def reduction_length(report: Report | None, shapes: list[tuple[int, ...]]) -> float | None:
    """Mean contraction length K of the kernel's matmuls per output element (2 flops per MAC), or None."""
    flops = float(report.matmul_flops) if report else 0.0
    elements = sum(int(np.prod(s or (1,))) for s in shapes)
    return flops / (2.0 * elements) if flops > 0 and elements > 0 else None


class SimEvidence:
    """Builds the items of one simulation run; `analyzer` is the collector's name@version."""

    def __init__(self, submission: Submission, analyzer: str) -> None:
        self.sub = submission
        self.analyzer = analyzer
        self.kfile = submission.manifest.kernel.file
        ref = submission.manifest.reference
        self.rfile = ref.file if ref else self.kfile

    def item(self, kind: str, ident: tuple, severity: Severity, title: str, *, location=None, detail: str = "",
             metrics=None, labels=None) -> EvidenceItem:
        return EvidenceItem(id=make_id(kind, *ident), kind=kind, analyzer=self.analyzer, severity=severity, title=title,
                            detail=detail, location=location, metrics=metrics or {}, labels=labels or {})

    def loc(self, file: str | None, line: int, fallback: str | None = None) -> Location | None:
        file = file or fallback or self.kfile
        if file not in self.sub.files or line < 1:
            return None
        return Location(file=file, start_line=line, end_line=line)

    def def_line(self, rel: str, entry: str) -> int:
        """Line of `def entry(` in `rel` (where a failure with no line of its own is located), or 0."""
        for n, text in enumerate(self.sub.files.get(rel, "").splitlines(), 1):
            if text.lstrip().startswith(f"def {entry}("):
                return n
        return 0

    # --- the whole run -------------------------------------------------------------------------
    def items(self, kernel: ChildOutcome, reference: ChildOutcome) -> list[EvidenceItem]:
        m = self.sub.manifest
        k = kernel.result
        entry_loc = self.loc(self.kfile, k.entry_line or self.def_line(self.kfile, m.kernel.entry))
        out = [self.event_item(e) for e in kernel.events + reference.events]
        if k.status == "unsupported_dialect" and k.error:
            err = k.error
            out.append(self.item(
                "sim.unsupported_dialect", (err.file or self.kfile, err.line), Severity.medium,
                "Kernel uses the standalone nki 0.3+ dialect; not simulated", location=self.loc(err.file, err.line),
                detail=err.message, labels={"message": err.message[:500]}))
            return out
        r = reference.result
        if r.status != "ok" and r.error:
            out.append(self.reference_error(r.error, m.reference.entry if m.reference else ""))
        if k.status == "error" and k.error:
            out.append(self.kernel_error(k.error, entry_loc))
        report = k.report
        if report is not None:
            out += [self.finding_item(f, entry_loc) for f in report.findings]
        if report is not None and (k.status == "ok" or report.body_completed):
            # a run stopped only by the checks of its returned outputs traced every instruction: its facts stand
            out.append(self.trace_item(report, entry_loc))
            out += trace_fact_items(report, self.kfile, self.analyzer, entry_loc, lambda file, line: self.loc(file, line))
            if k.status == "ok" and r.status == "ok":
                out += self.output_items(kernel, reference, entry_loc)
        return out

    def kernel_error(self, err: ChildError, entry_loc) -> EvidenceItem:
        # A limit of the simulator or of its resources is not evidence against the kernel.
        kind, severity, prefix = (("sim.incomplete", Severity.medium, "Simulation incomplete")
                                  if err.code in SIMULATOR_LIMIT_CODES else ("sim.error", Severity.critical,
                                                                             "Simulation stopped"))
        return self.item(kind, (err.code,), severity, headline(prefix, err.code, err.message),
                         location=self.loc(err.file, err.line) or entry_loc, detail=rest(err.message),
                         labels={"code": err.code, "message": err.message[:500]})

    def reference_error(self, err: ChildError, entry: str) -> EvidenceItem:
        return self.item(
            "sim.reference_error", (self.rfile,), Severity.high,
            "The reference function failed" + ("" if err.code == "python_error" else f" ({err.code})"),
            location=self.loc(err.file or self.rfile, err.line) or self.loc(self.rfile, self.def_line(self.rfile, entry)),
            detail=err.message, labels={"code": err.code, "message": err.message[:500]})

    def event_item(self, e: RuntimeEvent) -> EvidenceItem:
        detail = (f"{e.what}{': ' + e.detail if e.detail else ''} "
                  f"({'blocked by the sandbox' if e.blocked else 'contained by the sandbox'})")
        return security_item(self.analyzer, e.kind, Severity.high, e.what, detail,
                             self.loc(e.file, e.line), "runtime", blocked="yes" if e.blocked else "no")

    def finding_item(self, f, entry_loc) -> EvidenceItem:
        where = self.loc(f.file, f.line) or entry_loc
        if f.code in SECURITY_FINDINGS:
            return security_item(self.analyzer, SECURITY_FINDINGS[f.code], Severity.high, f.message.split(";")[0][:120],
                                 f.message, where, "runtime")
        return self.item(
            "sim.finding", (f.code, f.file, f.line or None),
            Severity(f.severity),  # the simulator's, where it raises the finding: the one source of severities
            headline("Simulator finding", f.code, f.message), location=where, detail=rest(f.message),
            labels={"code": f.code, "message": f.message[:500]})

    def trace_item(self, r: Report, loc) -> EvidenceItem:
        instr = r.instr_by_engine
        metrics = {
            "hbm_read_bytes": r.hbm_read_bytes, "hbm_write_bytes": r.hbm_write_bytes, "dma_count": r.dma_count,
            "dma_bytes_mean": r.dma_bytes_mean, "dma_small_count": r.dma_small_count,
            "redundant_hbm_read_bytes": r.redundant_hbm_read_bytes, "matmul_flops": r.matmul_flops,
            "instr_total": r.instructions, "instr_tensor": instr.get("tensor", 0), "instr_vector": instr.get("vector", 0),
            "instr_scalar": instr.get("scalar", 0), "instr_gpsimd": instr.get("gpsimd", 0), "instr_dma": instr.get("dma", 0),
            "partition_utilisation": r.partition_utilisation,
            "sbuf_peak_bytes_per_partition": r.sbuf_peak_bytes_per_partition, "psum_peak_banks": r.psum_peak_banks,
        }
        return self.item("sim.trace", (self.kfile,), Severity.info,
                         f"Simulation trace: {r.instructions} instructions, {r.dma_count} DMAs", location=loc,
                         metrics={k: float(v) for k, v in metrics.items()},
                         labels={"target": r.target, "dialect": r.dialect})

    def output_items(self, kernel: ChildOutcome, reference: ChildOutcome, loc) -> list[EvidenceItem]:
        task = self.sub.manifest.task
        outs = kernel.result.outputs
        refs = [o for o in reference.result.outputs if o.array.startswith("ref")]  # not the f64ref<i> variants
        k = reduction_length(kernel.result.report, [o.shape for o in outs])
        items = []
        for i in range(max(len(outs), len(refs))):
            meta = outs[i] if i < len(outs) else None
            rmeta = refs[i] if i < len(refs) else None
            got = kernel.arrays.get(meta.array) if meta else None
            exp = reference.arrays.get(rmeta.array) if rmeta else None
            dtype, ref_dtype = (meta.dtype if meta else "missing"), (rmeta.dtype if rmeta else "missing")
            labels = {"dtype": dtype, "shape": "x".join(map(str, meta.shape if meta else ())) or "scalar",
                      "reference_dtype": ref_dtype}
            own = None  # the comparison with the reference evaluated in its inputs' own precision, when set aside
            if got is None or exp is None:
                c = compare(np.zeros(1), np.zeros(2))  # a shape mismatch by construction
            else:
                written = kernel.arrays.get(meta.written) if meta.written else None
                # A low-precision reference cannot judge an output more finely than its own dtype.
                c = compare(got, exp, task.rtol, task.atol, dtype_name=coarser_dtype(dtype, ref_dtype),
                            written=written, reduction_length=k)
                exact = reference.arrays.get(f"f64ref{i}")
                if not c.matches and c.shape_ok and exact is not None and exact.shape == got.shape:
                    # numpy computed the reference in the precision of its bf16/fp16 inputs; if the kernel matches
                    # the same reference on those inputs widened to float64, the mismatch is the reference's rounding
                    c64 = compare(got, exact, task.rtol, task.atol, dtype_name=dtype, written=written,
                                  reduction_length=k)
                    if c64.matches:
                        own, c = c, c64
                        labels["reference_evaluation"] = "float64"
            items.append(self._output_item(i, c, labels, loc, own))
        return items

    def _output_item(self, i: int, c, labels: dict, loc, own=None) -> EvidenceItem:
        task = self.sub.manifest.task
        labels["tolerance"] = "task" if c.task_tolerance else "dtype_default"
        severity = Severity.info if c.matches else (
            Severity.critical if (not c.shape_ok or c.nan_count or c.inf_count) else Severity.high)
        title = (f"Output {i} matches the reference" if c.matches else
                 f"Output {i} does not match the reference" + ("" if c.shape_ok else " (shape differs)"))
        if own is not None:
            title = f"Output {i} matches the reference evaluated on float64 inputs"
            labels["reference_own_rel_l2"] = f"{own.rel_l2:.3g}"  # a label: metrics keep one comparison's numbers
        special = ", ".join(f"{n} {what}" for n, what in ((c.nan_count, "NaN"), (c.inf_count, "Inf")) if n)
        detail = (f"{c.mismatch_fraction:.2%} of {c.elements} elements outside rtol={c.rtol:g} atol={c.atol:.3g}"
                  + (" (atol scaled by the reference RMS)" if task.atol is None else "")
                  + (f"; {c.unwritten_count} elements never written" if c.unwritten_count else "")
                  + (f" ({special} where the reference is finite)" if special else "")
                  + (f"; {c.coded_count} NaN/Inf codes in the last-axis positions where the reference itself holds "
                     "NaN/Inf codes (bytes of another dtype packed into the output), compared as codes"
                     if c.coded_count else "")
                  + f"; over the finite elements{' it wrote' if c.unwritten_count else ''}: rel L2 {c.rel_l2:.3g}"
                  + (f" (above the bound {c.rel_l2_bound:.3g})" if c.shape_ok and c.rel_l2_exceeded else "")
                  + f", max abs {c.max_abs_err:.3g}")
        if own is not None:
            detail += (f". The reference run on the declared low-precision inputs (numpy computes in their precision)"
                       f" differs from the kernel by rel L2 {own.rel_l2:.3g}, {own.mismatch_fraction:.2%} of the elements"
                       " outside the tolerance: that is the reference's rounding, not the kernel's")
        return self.item("sim.output", (i,), severity, title, location=loc, detail=detail, metrics=c.metrics(),
                         labels=labels)
