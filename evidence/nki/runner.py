"""Child-process entry point: `python -m evidence.nki.runner JOB_DIR`.

Reads JOB_DIR/job.json (written by the collector, with the submission files under JOB_DIR/src),
generates the inputs from the manifest specs, runs the reference and then the kernel, and writes
JOB_DIR/result.json plus JOB_DIR/outputs.npz (kernel outputs `out<i>`, reference outputs
`ref<i>`, low precision widened to float32 exactly). The parent sets the rlimits and timeout.
"""

from __future__ import annotations

import json
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


def run(job_dir: Path) -> dict:
    from evidence.nki import EvidenceError, KernelLoadError, load_kernel, simulate
    from evidence.nki.loader import innermost_line
    from evidence.numerics.inputs import generate_inputs
    from evidence.submission import InputSpec

    job = json.loads((job_dir / "job.json").read_text())
    src = job_dir / "src"
    specs = [InputSpec(**s) for s in job["inputs"]]
    inputs = generate_inputs(specs, job.get("seed", 0))
    result: dict = {"status": "ok", "error": None, "report": None, "outputs": [], "reference": None, "entry_line": 0}
    arrays: dict[str, np.ndarray] = {}

    modules: dict[str, object] = {}

    def module(rel: str):
        if rel not in modules:
            modules[rel] = load_kernel(src / rel, display=rel)
        return modules[rel]

    if job.get("reference_file"):
        rel = job["reference_file"]
        try:
            ref_fn = getattr(module(rel), job["reference_entry"])
            ref = ref_fn(*[np.array(x) if isinstance(x, np.ndarray) else x for x in inputs])
            refs = ref if isinstance(ref, (tuple, list)) else (ref,)
            for i, r in enumerate(refs):
                arrays[f"ref{i}"] = _widen(r)
            result["reference"] = {"ok": True, "count": len(refs), "dtypes": [_dtype_name(r) for r in refs]}
        except MemoryError:
            raise
        except Exception as exc:
            file = str((src / rel).resolve())
            line = getattr(exc, "line", 0) or innermost_line(exc, file)
            result["reference"] = {"ok": False, "message": f"{type(exc).__name__}: {exc}"[:500], "line": line}

    rel = job["kernel_file"]
    try:
        kernel_mod = module(rel)
        entry = getattr(kernel_mod, job["entry"], None)
        if entry is None:
            raise KernelLoadError("missing_entry", f"kernel entry {job['entry']!r} not found in {rel}", rel, 1)
        func = getattr(entry, "func", entry)
        result["entry_line"] = getattr(getattr(func, "__code__", None), "co_firstlineno", 0)
        sim = simulate(entry, *inputs, grid=tuple(job.get("grid") or ()) or None, target=job.get("target", "trn2"),
                       keep_trace=False)
        result["report"] = sim.report.model_dump(mode="json")
        for i, out in enumerate(sim.outputs):
            arrays[f"out{i}"] = _widen(out)
            result["outputs"].append({"dtype": _dtype_name(out), "shape": list(np.shape(out))})
    except EvidenceError as exc:
        result["status"] = "unsupported_dialect" if exc.code == "unsupported_dialect" else "error"
        result["error"] = exc.to_dict()
        if exc.report is not None:
            result["report"] = exc.report.model_dump(mode="json")
    np.savez(job_dir / "outputs.npz", **arrays)
    return result


def main(argv: list[str]) -> int:
    job_dir = Path(argv[1])
    try:
        result = run(job_dir)
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
