"""`simulate(kernel, *args, ...)`: run a kernel (all SPMD instances) on numpy and report.

Arguments are wrapped as HBM tensors without copying (inputs stay immutable unless annotated
`nt.mutable_tensor`; old-style output arguments are written in place). Outputs are the
kernel's returned tensors, or, when it returns nothing, the arguments it wrote.
"""

from __future__ import annotations

import inspect
import os
import sys
from dataclasses import dataclass, field

import numpy as np

from evidence.nki import dtypes, import_failure, overwrites
from evidence.nki import state as _state
from evidence.nki.coverage import Coverage
from evidence.nki.errors import EvidenceError, KernelError, SimulationError
from evidence.nki.host_access import InputDigests, check_outputs
from evidence.nki.dialect import BETA, STANDALONE, mixing_allowed
from evidence.nki.loader import LOADED_FILES, shim_imports
from evidence.nki.malloc import reuse_freed_memory
from evidence.nki.ops import OPS
from evidence.nki.pipeline import default_workers, prompt_gil_handoff, single_threaded_blas
from evidence.nki.report import Report, build_report
from evidence.nki.shim.typing import TensorSpec, mutable_tensor
from evidence.nki.alloc import Alloc
from evidence.nki.tensor import Tensor
from evidence.nki.write_records import materialise_stamps, written_count
from evidence.nki.trace import Recorder, TraceEvent


@dataclass
class Simulation:
    outputs: tuple  # numpy arrays (empty in trace-only mode)
    report: Report
    returned: object = None  # what the kernel returned, as numpy (single array, tuple or None)
    output_shapes: tuple = ()  # ((shape, dtype name), ...) also in trace-only mode
    trace: list[TraceEvent] = field(default_factory=list, repr=False)
    # per output: bool array, True where the kernel wrote a kernel-created HBM output; None when every
    # element counts as written (output arguments keep their caller's values) or in trace-only mode
    written: tuple = ()
    # the trace's side tables (forwards, allocation sizes and releases, loop marks), when the trace is kept
    recorder: Recorder | None = field(default=None, repr=False)


def _wrap(st: _state.State, a, index: int, mutable: bool):
    if isinstance(a, TensorSpec):
        if not st.trace_only:
            raise SimulationError("err_placeholder_needs_trace_only", f"argument {index} is a shape placeholder {a!r}; use trace_only=True")
        alloc = Alloc(st, "shared_hbm", a.shape, a.dtype, None)
    elif isinstance(a, np.ndarray) or (hasattr(a, "__array__") and not np.isscalar(a)):
        arr = np.asarray(a)
        dt = dtypes.resolve(arr.dtype)
        if dtypes.storage(dt) != arr.dtype:
            arr = arr.astype(dtypes.storage(dt))  # fp64/int64 narrowed to what NKI has
        alloc = Alloc(st, "shared_hbm", arr.shape, dt, arr if not st.trace_only else None)
    else:
        return a
    alloc.param = index
    alloc.mutable = mutable or getattr(a, "mutable", False)
    alloc.name = f"argument {index}"
    alloc.lmask = st.pages.zeros(alloc.shape, bool)  # painted only when a load is not a box (Coverage)
    alloc.lcov = Coverage(0, alloc.lmask, lazy=True)
    return Tensor.whole(alloc)


def _is_tensor(x) -> bool:
    return isinstance(x, Tensor)


def _mutable_params(func) -> set[str]:
    try:
        ann = inspect.get_annotations(func)
    except Exception:
        return set()
    return {k for k, v in ann.items() if v is mutable_tensor or getattr(v, "mutable", False)
            or (isinstance(v, str) and "mutable_tensor" in v)}


def _kernel_line(exc: BaseException, files: dict[str, str]) -> tuple[str | None, int]:
    """The innermost kernel-file line of the traceback. A failed assertion inside an assertion helper
    (nki-library's `kernel_assert(cond, msg)`, `assert_shape`, ...) is placed at the helper's caller: the
    helper's own `assert` line says nothing about which check of the kernel failed."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name in files:
            frames.append((files[name], tb.tb_lineno, tb.tb_frame.f_code.co_name))
        tb = tb.tb_next
    if not frames:
        return None, 0
    if isinstance(exc, AssertionError):
        while len(frames) > 1 and "assert" in frames[-1][2].lower():
            frames.pop()
    return frames[-1][0], frames[-1][1]


def _inner_site(exc: BaseException, files: dict[str, str]) -> str:
    """Where the exception was raised when that is simulator code, to tell simulator gaps from kernel bugs."""
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    if last is None or last.tb_frame.f_code.co_filename in files:
        return ""
    name = last.tb_frame.f_code.co_filename
    marker = os.sep + "evidence" + os.sep + "nki" + os.sep
    if marker not in name:
        return ""
    return f" (raised in simulator code evidence/nki/{name.split(marker, 1)[1]}:{last.tb_lineno})"


def _called_by(files: dict[str, str]) -> bool:
    """Is code of a kernel file (submitted code) on the stack of this call?"""
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_filename in files:
            return True
        f = f.f_back
    return False


def _as_numpy(x):
    if isinstance(x, Tensor):
        return x.alloc.data if x.adv is None and x.data is x.alloc.data else np.array(x.read())
    if isinstance(x, (tuple, list)):
        return tuple(_as_numpy(v) for v in x)
    return x


def simulate(kernel, *args, grid=None, target: str = "trn2", trace_only: bool = False, keep_trace: bool = True,
             affine_order: str = "program", neuron_sdk: str | None = None, **kwargs) -> Simulation:
    """Run `kernel` (an nki.jit object or plain function) on numpy arrays / plain values.

    `neuron_sdk`: the task's Neuron SDK (default: the one the kernel's file was loaded for, `load_kernel`); a
    kernel mixing the dialects, which SDKs before 2.30 allow, runs with both dialects' names and a
    `mixed_nki_dialects` finding.

    Raises SimulationError (constraint violations, with kernel file:line) or KernelError
    (`python_error`: the kernel's own code raised); `exc.report` holds the partial report.
    """
    func = getattr(kernel, "func", kernel)  # an nki.jit Kernel (evidence.nki.kernel) or a plain function
    timing = getattr(kernel, "timing", None)
    grid = tuple(int(g) for g in (grid if grid is not None else getattr(kernel, "grid", ())))
    if isinstance(grid, tuple) and len(grid) == 0:
        grid = ()
    fname = func.__code__.co_filename
    files = dict(LOADED_FILES)
    files.setdefault(fname, func.__globals__.get("__nki_display__") or os.path.basename(fname))
    st = _state.State(target, trace_only, files, OPS, keep_trace, default_workers())
    st.affine_reversed = affine_order == "reversed"  # "reversed": affine_range iterations last to first
    st.kernel_codes = {func.__code__}
    st.jit_depth = 1 if func is not kernel else 0
    st.nested_shared_hbm_ok = _state.skips_nested_shared_hbm_check(kernel)
    st.dialect = func.__globals__.get("__nki_dialect__", BETA)  # set by load_kernel from the file's imports
    st.neuron_sdk = neuron_sdk if neuron_sdk is not None else func.__globals__.get("__nki_neuron_sdk__")
    for file, line, note in func.__globals__.get("__nki_mixed__", ()):
        st.finding("mixed_nki_dialects", note, "low", at=(file, line))
    mutable = _mutable_params(func)
    names = list(inspect.signature(func).parameters)
    wrapped = [_wrap(st, a, i, i < len(names) and names[i] in mutable) for i, a in enumerate(args)]
    wkw = {n: _wrap(st, a, len(args) + j, n in mutable) for j, (n, a) in enumerate(kwargs.items())}
    params = wrapped + list(wkw.values())
    digests = InputDigests(params, _is_tensor, st.pipeline.parallel)
    site = (files[fname], func.__code__.co_firstlineno)
    prev = _state.set_current(st)
    ret = None
    try:
        # NaN/Inf are data here, not warnings; BLAS single-threaded, the pipeline's workers run in parallel
        # freed tile buffers stay in the process for the next instruction (evidence.nki.malloc)
        with shim_imports(st.dialect, func.__globals__.get("__nki_modules__"), mixing_allowed(st.neuron_sdk)), \
                np.errstate(all="ignore"), \
                single_threaded_blas(), reuse_freed_memory(not _called_by(files)), \
                prompt_gil_handoff(st.pipeline.workers):
            try:
                for pid in (np.ndindex(*grid) if grid else [()]):
                    st.program_id, st.grid, st.shared_next = tuple(int(p) for p in pid), grid, 0
                    st.reset_path()
                    overwrites.new_instance(st)
                    ret = func(*wrapped, **wkw)
                    st.sample_peaks()
                digests.take_after(params, st.params_written, st.pipeline.parallel)  # on the workers too
            finally:
                st.pipeline.close()  # joins the worker threads: none outlives the call
                st.pages.release()  # the run's lazily mapped memory goes with its last tensor, not with the state
                st.tiles.release()
        st.body_completed = True  # every instance ran to its end and every instruction executed; checks follow
        returned = ret if isinstance(ret, (tuple, list)) else (ret,) if ret is not None else ()
        check_outputs(st, returned, params, _is_tensor, site)
        digests.check(st, params, st.params_written, site)
        _post_checks(st, ret, wrapped, wkw)
    except EvidenceError as exc:
        exc.report = build_report(st)
        raise
    except MemoryError:
        raise
    except Exception as exc:
        file, line = _kernel_line(exc, files)
        # an import in the kernel's body: whose it is, as at load time (evidence.nki.import_failure)
        blamed = import_failure.in_run(exc, func.__globals__) if isinstance(exc, ImportError) else None
        code, message = blamed or ("python_error", f"{type(exc).__name__}: {exc}{_inner_site(exc, files)}")
        err = KernelError(code, message, file, line)
        err.report = build_report(st)
        raise err from exc
    finally:
        _state.set_current(prev)
    if timing:
        st.findings[("timing",)] = _state.Finding(
            "benchmark_no_timing", f"kernel is decorated with nki.{timing}: simulation has no timing model, "
            "so no latency was measured", files.get(fname), func.__code__.co_firstlineno, "info")
    outputs, returned, shapes, written = _outputs(st, ret, wrapped + list(wkw.values()))
    return Simulation(outputs, build_report(st), returned, shapes, st.recorder.events, written, st.recorder)


def _post_checks(st, ret, wrapped, wkw) -> None:
    returned = ret if isinstance(ret, (tuple, list)) else (ret,) if ret is not None else ()
    if returned and st.dialect == BETA:  # nki 0.3+ kernels may write and return their arguments
        allp = wrapped + list(wkw.values())
        for idx, (file, line) in sorted(st.param_writes.items()):
            t = allp[idx] if idx < len(allp) else None
            if isinstance(t, Tensor) and not t.alloc.mutable:
                raise SimulationError(
                    "err_cannot_update_immutable_parameter",
                    f"the kernel stores into input {idx} ({list(t.shape)}); annotate it nt.mutable_tensor or copy it",
                    file, line,
                )
    for r in returned:
        if isinstance(r, Tensor):
            if r.alloc.buffer not in ("shared_hbm", "private_hbm", "hbm"):
                raise st.error("err_unsupported_memory", f"kernel outputs must be HBM tensors, got {r.alloc.buffer}")
            if st.dialect == STANDALONE and r.alloc.buffer != "shared_hbm":
                raise SimulationError("err_unsupported_memory", f"returned output {list(r.shape)} is in "
                                      f"{r.alloc.buffer}: nki 0.3+ requires returned outputs in nl.shared_hbm",
                                      *r.alloc.site)
            stamp = r.alloc.stamp
            if stamp is not None:
                written = written_count(r.alloc)
                if written is None:
                    written = np.count_nonzero(stamp >= 0)
                if written == 0:
                    st.findings[("unwritten", id(r.alloc))] = _state.Finding(
                        "err_tensor_output_not_written_to", f"output {list(r.shape)} is never written", *r.alloc.site, "high")
                elif written < stamp.size:
                    st.findings[("partial", id(r.alloc))] = _state.Finding(
                        "output_not_fully_written",
                        f"only {written} of {stamp.size} elements of output {list(r.shape)} are written "
                        "(the rest is garbage on hardware)", *r.alloc.site, "high")


def _outputs(st, ret, params):
    if ret is None:
        outs = tuple(params[i] for i in sorted(st.param_writes) if i < len(params) and isinstance(params[i], Tensor))
        returned = None
    else:
        outs = tuple(ret) if isinstance(ret, (tuple, list)) else (ret,)
        returned = _as_numpy(ret)
    shapes = tuple((tuple(t.shape), dtypes.name(t.dtype)) for t in outs if isinstance(t, Tensor))
    if st.trace_only:
        return (), None, shapes, ()
    return tuple(_as_numpy(t) for t in outs), returned, shapes, tuple(_written(t) for t in outs)


def _written(t):
    """Which elements of a kernel-created output the kernel wrote (None: all, or not tracked)."""
    if not isinstance(t, Tensor) or t.stamp is None or t.alloc.param >= 0 or t.adv is not None:
        return None
    known = written_count(t.alloc)
    if known == t.alloc.stamp.size:
        return None
    if known == 0:
        return np.zeros(np.shape(t.stamp), dtype=bool)
    materialise_stamps(t.alloc)
    mask = np.asarray(t.stamp) >= 0
    return None if mask.all() else np.array(mask, dtype=bool)
