"""Child-process entry point: `python -m evidence.nki.runner JOB_DIR`.

Reads JOB_DIR/job.json (written by the collector, with the submission files under JOB_DIR/src),
generates the inputs from the manifest specs, runs the kernel and then the reference, and writes
JOB_DIR/result.json plus JOB_DIR/outputs.npz (kernel outputs `out<i>`, the kernel's written-element
masks `wr<i>` where some elements were never written, reference outputs `ref<i>`; low precision
widened to float32 exactly). The kernel's result is written (``"phase": "reference"``) before the
reference starts, so the parent can keep it when the reference hangs or dies; the reference gets
`reference_timeout_s` (SIGALRM) and the parent kills it when it is stuck in C code. The parent sets
the rlimits and the timeouts.
"""

from __future__ import annotations

import json
import signal
import sys
import traceback
from pathlib import Path

import numpy as np


def _widen(a) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind in "fV" or a.dtype.name in ("bfloat16", "float8_e4m3", "float8_e5m2", "float16"):
        return a.astype(np.float32) if a.dtype != np.float64 else a
    return a


def _dtype_name(a) -> str:
    return np.asarray(a).dtype.name


class _ReferenceTimeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise _ReferenceTimeout()


def write_result(job_dir: Path, result: dict, arrays: dict[str, np.ndarray]) -> None:
    """Outputs first, then result.json by rename: the parent never reads a half-written result."""
    with open(job_dir / "outputs.tmp.npz", "wb") as f:
        np.savez(f, **arrays)
    (job_dir / "outputs.tmp.npz").replace(job_dir / "outputs.npz")
    tmp = job_dir / "result.json.tmp"
    tmp.write_text(json.dumps(result))
    tmp.replace(job_dir / "result.json")


def run(job_dir: Path) -> dict:
    from evidence.nki import EvidenceError, KernelLoadError, load_kernel, simulate
    from evidence.nki.loader import innermost_line
    from evidence.numerics.inputs import generate_inputs
    from evidence.submission import InputSpec

    job = json.loads((job_dir / "job.json").read_text())
    src = job_dir / "src"
    specs = [InputSpec(**s) for s in job["inputs"]]
    inputs = generate_inputs(specs, job.get("seed", 0))
    result: dict = {"status": "ok", "error": None, "report": None, "outputs": [], "reference": None, "entry_line": 0,
                    "phase": "kernel"}
    arrays: dict[str, np.ndarray] = {}

    modules: dict[str, object] = {}

    def module(rel: str):
        if rel not in modules:
            modules[rel] = load_kernel(src / rel, display=rel)
        return modules[rel]

    # The kernel runs first (on copies: it may write into its arguments) and its result is saved
    # before the reference starts, so a reference that hangs, crashes or exhausts memory is blamed
    # on the reference (sim.reference_error) and the kernel's trace and findings survive.
    rel = job["kernel_file"]
    try:
        kernel_mod = module(rel)
        entry = getattr(kernel_mod, job["entry"], None)
        if entry is None:
            raise KernelLoadError("missing_entry", f"kernel entry {job['entry']!r} not found in {rel}", rel, 1)
        func = getattr(entry, "func", entry)
        result["entry_line"] = getattr(getattr(func, "__code__", None), "co_firstlineno", 0)
        sim = simulate(entry, *[x.copy() if isinstance(x, np.ndarray) else x for x in inputs],
                       grid=tuple(job.get("grid") or ()) or None, target=job.get("target", "trn2"), keep_trace=False)
        result["report"] = sim.report.model_dump(mode="json")
        for i, out in enumerate(sim.outputs):
            arrays[f"out{i}"] = _widen(out)
            written = sim.written[i] if i < len(sim.written) else None
            if written is not None:
                arrays[f"wr{i}"] = written
            result["outputs"].append({"dtype": _dtype_name(out), "shape": list(np.shape(out))})
        del sim
    except EvidenceError as exc:
        result["status"] = "unsupported_dialect" if exc.code == "unsupported_dialect" else "error"
        result["error"] = exc.to_dict()
        if exc.report is not None:
            result["report"] = exc.report.model_dump(mode="json")
    except MemoryError:
        raise

    if job.get("reference_file"):
        result["phase"] = "reference"
        write_result(job_dir, result, arrays)  # the checkpoint the parent falls back on
        result["reference"] = _run_reference(job, src, module, inputs, arrays, innermost_line)
    result["phase"] = "done"
    write_result(job_dir, result, arrays)
    return result


def _run_reference(job: dict, src: Path, module, inputs, arrays: dict, innermost_line) -> dict:
    rel = job["reference_file"]
    timeout = float(job.get("reference_timeout_s") or 0)
    old = signal.signal(signal.SIGALRM, _on_alarm) if timeout > 0 else None
    if timeout > 0:
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        ref_fn = getattr(module(rel), job["reference_entry"])
        ref = ref_fn(*inputs)
        refs = ref if isinstance(ref, (tuple, list)) else (ref,)
        for i, r in enumerate(refs):
            arrays[f"ref{i}"] = _widen(r)
        return {"ok": True, "count": len(refs), "dtypes": [_dtype_name(r) for r in refs]}
    except _ReferenceTimeout:
        return {"ok": False, "code": "timeout", "line": 0,
                "message": f"the reference did not finish within {timeout:g} s"}
    except MemoryError:
        for k in [k for k in arrays if k.startswith("ref")]:
            del arrays[k]
        return {"ok": False, "code": "memory_limit", "line": 0,
                "message": "the reference ran out of memory (memory limit reached)"}
    except Exception as exc:
        file = str((src / rel).resolve())
        line = getattr(exc, "line", 0) or innermost_line(exc, file)
        return {"ok": False, "code": "python_error", "message": f"{type(exc).__name__}: {exc}"[:500], "line": line}
    finally:
        if timeout > 0:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)


def main(argv: list[str]) -> int:
    job_dir = Path(argv[1])
    try:
        run(job_dir)  # writes result.json itself
        return 0
    except MemoryError:
        result = {"status": "error", "error": {"code": "memory_limit", "message": "the simulation ran out of memory "
                  "(memory limit reached)", "file": None, "line": 0}}
    except Exception as exc:  # the child's own boundary: report, never hang the parent
        result = {"status": "error", "error": {"code": "runner_error", "message": f"{type(exc).__name__}: {exc}",
                  "file": None, "line": 0}, "traceback": traceback.format_exc()[-2000:]}
    (job_dir / "result.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
