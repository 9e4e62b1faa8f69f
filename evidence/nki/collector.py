"""The simulation evidence collector ("nki-simulator").

For a submission with a reference and inputs, it runs the kernel and then the reference in a child
process (`python -m evidence.nki.runner`) with address-space/CPU/file-size rlimits and a scrubbed
environment; the kernel phase has `timeout_s`, the reference phase (after the kernel's result is
checkpointed) `reference_timeout_s`, so a failing reference is `sim.reference_error` (label `code`)
and the kernel's trace and findings are kept. The outcome becomes evidence items: one `sim.output`
per output (numbers and tolerance policy from evidence.numerics.compare, unwritten elements from the
simulator's write tracking), `sim.error`, `sim.incomplete`, `sim.finding`, one `sim.trace`,
`sim.unsupported_dialect`, `sim.reference_error`. Full sandboxing is a later issue (DESIGN §7).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path, PurePosixPath

import numpy as np

from evidence.collector import Collector
from evidence.model import EvidenceItem, Location, Severity, make_id
from evidence.numerics.compare import coarser_dtype, compare
from evidence.submission import Submission

_REPO_ROOT = Path(__file__).resolve().parents[2]
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")
FINDING_SEVERITY = {
    "err_unexpected_output_dependencies": Severity.high,
    "uninitialized_read": Severity.high,
    "err_tensor_output_not_written_to": Severity.high,
    "output_not_fully_written": Severity.high,
    "sbuf_capacity_exceeded": Severity.medium,
    "psum_capacity_exceeded": Severity.medium,
    "matmul_mixed_fp32_dtypes": Severity.medium,
    "partition_start_rule": Severity.medium,
    "block_dimensions_deprecated": Severity.low,
    "benchmark_no_timing": Severity.info,
}


def scrubbed_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not any(w in k.upper() for w in _SECRET_WORDS)}
    env.update(PYTHONPATH=str(_REPO_ROOT), PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0",
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return env


def _safe_rel(rel: str) -> PurePosixPath:
    p = PurePosixPath(rel)
    if p.is_absolute() or ".." in p.parts:
        raise ValueError(f"submission file path {rel!r} escapes the submission")
    return p


# Error codes that say the simulator could not judge the kernel, not that the kernel is wrong.
SIMULATOR_LIMIT_CODES = frozenset({"unsupported_op", "import_error", "timeout", "memory_limit", "cpu_limit", "crashed"})


def _headline(prefix: str, code: str, message: str) -> str:
    """A title a reviewer can read in a list: the code plus the first line of the message."""
    first = (message.strip().splitlines() or [""])[0]
    return f"{prefix}: {code}" + (f" — {first[:160]}" if first else "")


def _rest(message: str) -> str:
    """The message beyond what its headline already shows (empty for a short one-line message)."""
    lines = message.strip().splitlines()
    if len(lines) == 1 and len(lines[0]) <= 160:
        return ""
    return message.strip()


class SimulationCollector(Collector):
    name = "nki-simulator"
    version = "1"
    kinds = {
        "sim.output": "one kernel output compared with the reference (rel_l2, max errors, mismatch fraction)",
        "sim.error": "the simulation stopped on a defect of the kernel: constraint violation or Python error",
        "sim.incomplete": "the simulation could not finish for a reason that is not a kernel defect: an op the "
                          "simulator lacks, a module it cannot import, a time, memory or CPU limit, a crash",
        "sim.finding": "non-fatal simulator finding (output dependency, uninitialised read, capacity, ...)",
        "sim.trace": "instruction-trace summary: HBM traffic, DMAs, engine instruction counts, FLOPs, peaks",
        "sim.unsupported_dialect": "kernel is in the standalone nki 0.3+ dialect, which is not simulated",
        "sim.reference_error": "the submission's reference function failed",
    }
    timeout_s: float = 120.0  # the kernel phase
    reference_timeout_s: float = 60.0  # the reference phase, which starts when the kernel's result is saved
    memory_limit_bytes: int = 6 * 2**30
    cpu_limit_s: int = 300
    seed: int = 0

    def applies(self, submission: Submission) -> bool:
        m = submission.manifest
        return m.reference is not None and bool(m.inputs) and m.kernel.file in submission.files

    # --- running the child -------------------------------------------------------------------
    def _limits(self) -> None:
        mem, cpu = self.memory_limit_bytes, self.cpu_limit_s
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
        resource.setrlimit(resource.RLIMIT_FSIZE, (2**31, 2**31))
        os.setsid()

    def run_child(self, submission: Submission) -> tuple[dict, dict[str, np.ndarray]]:
        m = submission.manifest
        with tempfile.TemporaryDirectory(prefix="nki-sim-") as tmp:
            job_dir = Path(tmp)
            for rel, text in submission.files.items():
                dest = job_dir / "src" / _safe_rel(rel)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_text(text)
            job = {
                "kernel_file": m.kernel.file, "entry": m.kernel.entry, "grid": list(m.kernel.grid),
                "target": m.task.target, "inputs": [s.model_dump() for s in m.inputs], "seed": self.seed,
                "reference_file": m.reference.file if m.reference else None,
                "reference_entry": m.reference.entry if m.reference else None,
                "reference_timeout_s": self.reference_timeout_s,
            }
            (job_dir / "job.json").write_text(json.dumps(job))
            stderr_path = job_dir / "stderr.txt"
            with open(stderr_path, "wb") as err_file:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "evidence.nki.runner", str(job_dir)], cwd=job_dir, env=scrubbed_env(),
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err_file, preexec_fn=self._limits,
                )
                timed_out = self._wait(proc, job_dir / "result.json")
            with open(stderr_path, "rb") as f:
                f.seek(max(0, stderr_path.stat().st_size - 20000))
                stderr = f.read()
            result_path = job_dir / "result.json"
            if not result_path.exists():  # the child died in the kernel phase
                if timed_out:
                    return {"status": "error", "error": {"code": "timeout", "message": f"the simulation did not finish "
                            f"within {self.timeout_s:g} s", "file": None, "line": 0}}, {}
                rc = proc.returncode
                code = "cpu_limit" if rc in (-signal.SIGXCPU, -signal.SIGKILL) else "memory_limit" if (
                    b"MemoryError" in stderr) else "crashed"
                tail = stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
                return {"status": "error", "error": {"code": code, "message": f"simulator process ended with code "
                        f"{rc} {tail[0][:300]}".strip(), "file": None, "line": 0}}, {}
            result = json.loads(result_path.read_text())
            if result.get("phase") == "reference":  # the kernel's checkpoint: the reference never finished
                result["reference"] = self._reference_death(proc.returncode, timed_out, stderr)
            arrays: dict[str, np.ndarray] = {}
            npz = job_dir / "outputs.npz"
            if npz.exists():
                with np.load(npz, allow_pickle=False) as data:
                    arrays = {k: data[k] for k in data.files}
            return result, arrays

    def _wait(self, proc: subprocess.Popen, checkpoint: Path) -> bool:
        """Wait for the child: `timeout_s` for the kernel phase, then `reference_timeout_s` (+ grace for
        the child's own alarm) from the moment the kernel's checkpoint appears. True when it was killed."""
        start = time.monotonic()
        ref_start = None
        delay = 0.005
        while True:
            try:
                proc.wait(timeout=delay)
                return False
            except subprocess.TimeoutExpired:
                pass
            delay = min(delay * 2, 0.1)
            now = time.monotonic()
            if ref_start is None and checkpoint.exists():
                ref_start = now
            deadline = start + self.timeout_s if ref_start is None else ref_start + self.reference_timeout_s + 2.0
            if now > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return True

    def _reference_death(self, rc: int | None, timed_out: bool, stderr: bytes) -> dict:
        if timed_out:
            return {"ok": False, "code": "timeout", "line": 0,
                    "message": f"the reference did not finish within {self.reference_timeout_s:g} s"}
        if b"MemoryError" in stderr:
            code = "memory_limit"
        else:
            code = "cpu_limit" if rc in (-signal.SIGXCPU, -signal.SIGKILL) else "crashed"
        return {"ok": False, "code": code, "line": 0, "message": f"the process running the reference ended with code {rc}"}

    # --- turning the outcome into evidence -------------------------------------------------------
    def collect(self, submission: Submission) -> list[EvidenceItem]:
        result, arrays = self.run_child(submission)
        return self.items(submission, result, arrays)

    def _item(self, kind: str, ident: tuple, severity: Severity, title: str, *, location=None,
              detail: str = "", metrics=None, labels=None) -> EvidenceItem:
        return EvidenceItem(id=make_id(kind, *ident), kind=kind, analyzer=self.analyzer, severity=severity, title=title,
                            detail=detail, location=location, metrics=metrics or {}, labels=labels or {})

    def _loc(self, submission: Submission, file: str | None, line: int) -> Location | None:
        file = file or submission.manifest.kernel.file
        if file not in submission.files or line < 1:
            return None
        return Location(file=file, start_line=line, end_line=line)

    @staticmethod
    def _def_line(submission: Submission, rel: str) -> int:
        """Line of the reference entry's `def` (where a failure with no line of its own is located), or 0."""
        entry = submission.manifest.reference.entry if submission.manifest.reference else ""
        for n, text in enumerate(submission.files.get(rel, "").splitlines(), 1):
            if text.lstrip().startswith(f"def {entry}("):
                return n
        return 0

    def items(self, submission: Submission, result: dict, arrays: dict[str, np.ndarray]) -> list[EvidenceItem]:
        m = submission.manifest
        kfile = m.kernel.file
        entry_loc = self._loc(submission, kfile, int(result.get("entry_line") or 0))
        out: list[EvidenceItem] = []
        err = result.get("error") or {}
        status = result.get("status")
        if status == "unsupported_dialect":
            out.append(self._item(
                "sim.unsupported_dialect", (err.get("file") or kfile, err.get("line", 0)), Severity.medium,
                "Kernel uses the standalone nki 0.3+ dialect; not simulated",
                location=self._loc(submission, err.get("file"), int(err.get("line") or 0)),
                detail=err.get("message", ""), labels={"message": err.get("message", "")[:500]}))
            return out
        ref = result.get("reference")
        if ref is not None and not ref.get("ok"):
            rfile = m.reference.file if m.reference else kfile
            rcode = ref.get("code", "python_error")
            out.append(self._item(
                "sim.reference_error", (rfile,), Severity.high,
                "The reference function failed" + ("" if rcode == "python_error" else f" ({rcode})"),
                location=self._loc(submission, rfile, int(ref.get("line") or 0) or self._def_line(submission, rfile)),
                detail=ref.get("message", ""), labels={"code": rcode, "message": ref.get("message", "")[:500]}))
        if status == "error":
            code = err.get("code", "error")
            # A limit of the simulator or of its resources is not evidence against the kernel.
            kind, severity, prefix = (("sim.incomplete", Severity.medium, "Simulation incomplete")
                                      if code in SIMULATOR_LIMIT_CODES else ("sim.error", Severity.critical, "Simulation stopped"))
            out.append(self._item(
                kind, (code,), severity, _headline(prefix, code, err.get("message", "")),
                location=self._loc(submission, err.get("file"), int(err.get("line") or 0)) or entry_loc,
                detail=_rest(err.get("message", "")), labels={"code": code, "message": err.get("message", "")[:500]}))
        report = result.get("report")
        if report:
            for f in report.get("findings", []):
                code = f["code"]
                out.append(self._item(
                    "sim.finding", (code, f.get("file"), f.get("line") or None), FINDING_SEVERITY.get(code, Severity.medium),
                    _headline("Simulator finding", code, f.get("message", "")),
                    location=self._loc(submission, f.get("file"), int(f.get("line") or 0)) or entry_loc,
                    detail=_rest(f.get("message", "")), labels={"code": code, "message": f.get("message", "")[:500]}))
        if status == "ok" and report:
            out.append(self._trace_item(submission, report, entry_loc))
            if ref is not None and ref.get("ok"):
                out.extend(self._output_items(submission, result, arrays, ref, entry_loc))
        return out

    def _trace_item(self, submission, r: dict, loc) -> EvidenceItem:
        instr = r["instr_by_engine"]
        metrics = {
            "hbm_read_bytes": r["hbm_read_bytes"], "hbm_write_bytes": r["hbm_write_bytes"], "dma_count": r["dma_count"],
            "dma_bytes_mean": r["dma_bytes_mean"], "dma_small_count": r["dma_small_count"],
            "redundant_hbm_read_bytes": r["redundant_hbm_read_bytes"], "matmul_flops": r["matmul_flops"],
            "instr_total": r["instructions"], "instr_tensor": instr.get("tensor", 0), "instr_vector": instr.get("vector", 0),
            "instr_scalar": instr.get("scalar", 0), "instr_gpsimd": instr.get("gpsimd", 0), "instr_dma": instr.get("dma", 0),
            "partition_utilisation": r["partition_utilisation"],
            "sbuf_peak_bytes_per_partition": r["sbuf_peak_bytes_per_partition"], "psum_peak_banks": r["psum_peak_banks"],
        }
        return self._item(
            "sim.trace", (submission.manifest.kernel.file,), Severity.info,
            f"Simulation trace: {r['instructions']} instructions, {r['dma_count']} DMAs",
            location=loc,
            metrics={k: float(v) for k, v in metrics.items()}, labels={"target": r["target"]})

    def _output_items(self, submission, result: dict, arrays, ref: dict, loc) -> list[EvidenceItem]:
        task = submission.manifest.task
        outs = result.get("outputs", [])
        n = max(len(outs), int(ref.get("count", 0)))
        k = self._reduction_length(result.get("report") or {}, outs)
        items = []
        for i in range(n):
            got, exp = arrays.get(f"out{i}"), arrays.get(f"ref{i}")
            meta = outs[i] if i < len(outs) else {"dtype": "missing", "shape": []}
            ref_dtype = ref.get("dtypes", [])[i] if i < len(ref.get("dtypes", [])) else "missing"
            labels = {"dtype": meta["dtype"], "shape": "x".join(map(str, meta["shape"])) or "scalar",
                      "reference_dtype": ref_dtype}
            if got is None or exp is None:
                c = compare(np.zeros(1), np.zeros(2))  # a shape mismatch by construction
            else:
                # A low-precision reference cannot judge an output more finely than its own dtype.
                c = compare(got, exp, task.rtol, task.atol, dtype_name=coarser_dtype(meta["dtype"], ref_dtype),
                            written=arrays.get(f"wr{i}"), reduction_length=k)
            labels["tolerance"] = "task" if c.task_tolerance else "dtype_default"
            severity = Severity.info if c.matches else (
                Severity.critical if (not c.shape_ok or c.nan_count or c.inf_count) else Severity.high)
            title = (f"Output {i} matches the reference" if c.matches else
                     f"Output {i} does not match the reference" + ("" if c.shape_ok else " (shape differs)"))
            special = ", ".join(f"{n} {what}" for n, what in ((c.nan_count, "NaN"), (c.inf_count, "Inf")) if n)
            detail = (f"{c.mismatch_fraction:.2%} of {c.elements} elements outside rtol={c.rtol:g} atol={c.atol:.3g}"
                      + (" (atol scaled by the reference RMS)" if task.atol is None else "")
                      + (f"; {c.unwritten_count} elements never written" if c.unwritten_count else "")
                      + (f" ({special} where the reference is finite)" if special else "")
                      + f"; over the finite elements{' it wrote' if c.unwritten_count else ''}: rel L2 {c.rel_l2:.3g}"
                      + (f" (above the bound {c.rel_l2_bound:.3g})" if c.shape_ok and c.rel_l2_exceeded else "")
                      + f", max abs {c.max_abs_err:.3g}")
            items.append(self._item("sim.output", (i,), severity, title,
                                    location=loc, detail=detail, metrics=c.metrics(), labels=labels))
        return items

    @staticmethod
    def _reduction_length(report: dict, outs: list[dict]) -> float | None:
        """Mean contraction length K of the kernel's matmuls per output element (2 flops per MAC), or None."""
        flops = float(report.get("matmul_flops") or 0)
        elements = sum(int(np.prod(o.get("shape") or [1])) for o in outs)
        return flops / (2.0 * elements) if flops > 0 and elements > 0 else None
