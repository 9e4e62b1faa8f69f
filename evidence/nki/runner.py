"""What a sandboxed child runs: the kernel under the simulator, or the reference on plain numpy.

Called by `evidence.sandbox.child` after it has set up the limits and the monitor. The kernel
child and the reference child are separate processes with separately generated (identical)
inputs, so neither can touch what the other computes; both return a `ChildResult` plus the arrays
to save (low precision widened to float32 exactly, and the kernel's written-element masks).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from evidence.nki import EvidenceError, KernelLoadError, load_kernel, simulate
from evidence.numerics.inputs import generate_inputs
from evidence.sandbox.monitor import Monitor, OutputLimit
from evidence.sandbox.protocol import ChildError, ChildJob, ChildResult, OutputMeta

_LOW_PRECISION = ("bfloat16", "float8_e4m3", "float8_e5m2", "float16", "float8_e4m3fn", "float8_e8m0fnu")


def widen(a) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind in "fV" or a.dtype.name in _LOW_PRECISION:
        return a.astype(np.float32) if a.dtype != np.float64 else a
    return a


def submission_site(exc: BaseException, src: Path) -> tuple[str | None, int]:
    """(relative file, line) of the innermost traceback frame in a submission file."""
    root = str(src).rstrip("/") + "/"
    where: tuple[str | None, int] = (None, 0)
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name.startswith(root):
            where = (name[len(root):], tb.tb_lineno)
        tb = tb.tb_next
    return where


def _error(code: str, message: str, site: tuple[str | None, int]) -> ChildError:
    return ChildError(code=code, message=message[:2000], file=site[0], line=site[1])


def _fatal(exc: BaseException, src: Path, what: str) -> ChildError:
    """The error for an exception that is not the simulator's own (limits, exits, Python errors)."""
    site = submission_site(exc, src)
    if isinstance(exc, MemoryError):
        return _error("memory_limit", f"{what} ran out of memory (memory limit reached)", site)
    if isinstance(exc, OutputLimit):
        return _error("output_limit", str(exc), site)
    return _error("python_error", f"{type(exc).__name__}: {exc}", site)


def run(job: ChildJob, src: Path, monitor: Monitor) -> tuple[ChildResult, dict[str, np.ndarray]]:
    if str(src) not in sys.path:
        sys.path.insert(0, str(src))  # sibling helper modules of the submission
    inputs = _placeholders(job.inputs) if job.trace_only else generate_inputs(job.inputs, job.seed)
    return (_run_kernel if job.role == "kernel" else _run_reference)(job, src, monitor, inputs)


def _placeholders(specs) -> list:
    """Shape/dtype placeholders for a trace-only run (the cost model's); plain values pass through."""
    from evidence.nki.shim.typing import TensorSpec

    return [TensorSpec(s.shape, s.dtype) if s.is_tensor else s.value for s in specs]


def _perf(sim, request: dict) -> dict:
    """The cost model's summary of the trace (evidence.perf.analysis); its failure is reported, not raised."""
    from evidence.perf.analysis import analyse

    try:
        return analyse(sim, request)
    except Exception as exc:  # the perf part's own boundary: the simulation result still goes back
        return {"error": f"{type(exc).__name__}: {exc}"[:500]}


def _run_kernel(job: ChildJob, src: Path, monitor: Monitor, inputs: list):
    arrays: dict[str, np.ndarray] = {}
    outputs: list[OutputMeta] = []
    entry_line = 0
    try:
        # root: a kernel in a subfolder (nkilib-style packages) imports the submission's other folders
        module = load_kernel(src / job.file, display=job.file, target=job.target, root=src, neuron_sdk=job.neuron_sdk)
        entry = getattr(module, job.entry, None)
        if entry is None:
            raise KernelLoadError("missing_entry", f"kernel entry {job.entry!r} not found in {job.file}", job.file, 1)
        entry_line = getattr(getattr(getattr(entry, "func", entry), "__code__", None), "co_firstlineno", 0)
        sim = simulate(entry, *inputs, grid=job.grid or None, target=job.target, neuron_sdk=job.neuron_sdk,
                       trace_only=job.trace_only,
                       keep_trace=job.perf is not None, affine_order=job.affine_order)
    except EvidenceError as exc:
        status = "unsupported_dialect" if exc.code == "unsupported_dialect" else "error"
        error = ChildError(code=exc.code, message=exc.message[:2000], file=exc.file, line=exc.line)
        return ChildResult(role="kernel", status=status, error=error, report=exc.report, entry_line=entry_line), {}
    except BaseException as exc:  # limits, sys.exit, KeyboardInterrupt: the child's own boundary
        return ChildResult(role="kernel", status="error", error=_fatal(exc, src, "the simulation"),
                           entry_line=entry_line), {}
    finally:
        monitor.after_run((job.file, entry_line))
    for i, out in enumerate(sim.outputs):
        arrays[f"out{i}"] = widen(out)
        written = sim.written[i] if i < len(sim.written) else None
        if written is not None:
            arrays[f"wr{i}"] = np.asarray(written, dtype=bool)
        outputs.append(OutputMeta(array=f"out{i}", dtype=np.asarray(out).dtype.name, shape=np.shape(out),
                                  written=f"wr{i}" if written is not None else None))
    perf = _perf(sim, job.perf) if job.perf is not None else None
    return ChildResult(role="kernel", status="ok", report=sim.report, outputs=tuple(outputs),
                       entry_line=entry_line, perf=perf), arrays


def _run_reference(job: ChildJob, src: Path, monitor: Monitor, inputs: list):
    entry_line = 0
    try:
        module = load_kernel(src / job.file, display=job.file)
        fn = getattr(module, job.entry, None)
        if fn is None:
            raise KernelLoadError("missing_entry", f"reference entry {job.entry!r} not found in {job.file}", job.file, 1)
        entry_line = getattr(getattr(fn, "__code__", None), "co_firstlineno", 0)
        ref = fn(*inputs)
        refs = ref if isinstance(ref, (tuple, list)) else (ref,)
        arrays, outputs = {}, []
        for i, r in enumerate(refs):
            a = np.asarray(r)
            if a.dtype.kind not in "biuf" and a.dtype.name not in _LOW_PRECISION:
                raise TypeError(f"the reference returned a {type(r).__name__} ({a.dtype}) as output {i}, not numbers")
            arrays[f"ref{i}"] = widen(a)
            outputs.append(OutputMeta(array=f"ref{i}", dtype=a.dtype.name, shape=a.shape))
        variants = _reference_variants(fn, inputs, job, arrays, outputs) if job.reference_variants else {}
    except KernelLoadError as exc:
        error = ChildError(code=exc.code, message=exc.message[:2000], file=exc.file, line=exc.line)
        return ChildResult(role="reference", status="error", error=error, entry_line=entry_line), {}
    except BaseException as exc:
        return ChildResult(role="reference", status="error", error=_fatal(exc, src, "the reference"),
                           entry_line=entry_line), {}
    finally:
        monitor.after_run((job.file, entry_line))
    return ChildResult(role="reference", status="ok", outputs=tuple(outputs), entry_line=entry_line,
                       variants=variants), arrays


def _is_float(a) -> bool:
    return isinstance(a, np.ndarray) and (a.dtype.kind == "f" or a.dtype.name.startswith(("bfloat16", "float8")))


def _reference_variants(fn, inputs, job: ChildJob, arrays: dict, outputs: list) -> dict[str, str]:
    """The error model's references (evidence.numerics.errormodel): `f64` (inputs widened to float64),
    `dev` (each float input rounded to its job.device_dtypes entry, computed in float32) and `abs` (float64 on
    |inputs|), and `pert` (evidence.numerics.conditioning: the response to seeded relative perturbations, after
    `f64`). Arrays `<variant>ref<i>` in float64, their metadata with the dtype the reference returned; a variant
    the reference cannot compute is reported, not raised."""
    from evidence.nki import dtypes

    dev = [dtypes.resolve(d) if d else None for d in job.device_dtypes]
    dev += [None] * (len(inputs) - len(dev))
    made = {
        "f64": lambda: [x.astype(np.float64) if _is_float(x) else x for x in inputs],
        "dev": lambda: [_round_regions((dtypes.cast(x.astype(np.float32), d) if d is not None else x).astype(
                            np.float32), i, job.device_regions) if _is_float(x) else x
                        for i, (x, d) in enumerate(zip(inputs, dev))],
        "abs": lambda: [np.abs(x.astype(np.float64)) if _is_float(x) else x for x in inputs],
    }
    status = {}
    start, calls = time.monotonic(), 0
    for name in job.reference_variants:
        if name == "pert":
            # each pattern is one more call: only as many as a quarter of the child's time allows at the pace so far
            per_call = (time.monotonic() - start) / calls if calls else 0.0
            status[name] = _perturbation_responses(fn, made["f64"], arrays, outputs,
                                                   int(job.timeout_s / 4 / per_call) if per_call > 0 else None)
            continue
        calls += 1
        try:
            ref = fn(*made[name]())
            refs = ref if isinstance(ref, (tuple, list)) else (ref,)
            for i, r in enumerate(refs):
                produced = np.asarray(r)
                a = np.asarray(produced, dtype=np.float64)
                arrays[f"{name}ref{i}"] = a
                # the dtype the reference returned: float16 from float64 inputs means it rounds its own result
                outputs.append(OutputMeta(array=f"{name}ref{i}", dtype=produced.dtype.name, shape=a.shape))
            status[name] = "ok"
        except Exception as exc:  # e.g. a reference that only works in its declared dtypes
            status[name] = f"{type(exc).__name__}: {exc}"[:200]
    return status


def _perturbation_responses(fn, f64_inputs, arrays: dict, outputs: list, most: int | None = None) -> str:
    """`pertref<i>`: per sign pattern, the float64 reference's relative change per unit relative perturbation of
    its float inputs (evidence.numerics.conditioning), for each output the `f64` variant produced; at most `most`
    patterns (a slow reference), none below one."""
    from evidence.numerics import conditioning

    if "f64ref0" not in arrays:
        return "no f64 reference"
    patterns = conditioning.PATTERNS if most is None else min(conditioning.PATTERNS, most)
    if patterns < 1:
        return "skipped: the reference is too slow for more calls"
    found: dict[int, list[float]] = {}
    try:
        for j in range(patterns):
            ref = fn(*conditioning.perturbed(f64_inputs(), j, _is_float))
            refs = ref if isinstance(ref, (tuple, list)) else (ref,)
            for i, r in enumerate(refs):
                if f"f64ref{i}" in arrays:
                    found.setdefault(i, []).append(conditioning.response(arrays[f"f64ref{i}"], r))
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"[:200]
    for i, values in found.items():
        if len(values) == patterns:
            arrays[f"pertref{i}"] = np.asarray(values, np.float64)
            outputs.append(OutputMeta(array=f"pertref{i}", dtype="float64", shape=(len(values),)))
    return "ok"


def _round_regions(x: np.ndarray, index: int, regions) -> np.ndarray:
    """`x` (float32) with each box the kernel computes input `index` in a lower precision rounded to it."""
    from evidence.nki import dtypes

    for i, name, lo, hi in regions:
        if i != index:
            continue
        if len(lo) != x.ndim:  # not a box of this array's axes: the whole input
            x = dtypes.cast(x, dtypes.resolve(name)).astype(np.float32)
            continue
        box = tuple(slice(a, b) for a, b in zip(lo, hi))
        x[box] = dtypes.cast(x[box], dtypes.resolve(name)).astype(np.float32)
    return x
