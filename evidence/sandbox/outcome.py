"""Reading what a child left in `out/`: size-checked, validated, and a verdict when it left nothing.

Nothing in `out/` is trusted: every file is size-checked before it is parsed, `result.json` must
follow the protocol, arrays are loaded with `allow_pickle=False` and must be plain numbers of the
declared shape, and unreadable event lines are dropped. A child that died without a result gets a
`ChildError` from what is known: the output flood, its own watchdog's timeout traceback, the
signal that ended it, a MemoryError on stderr.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pydantic import ValidationError

from evidence.sandbox.launcher import ChildRun
from evidence.sandbox.protocol import ChildError, ChildJob, ChildResult, RuntimeEvent

MAX_RESULT_JSON = 64 * 2**20
MAX_LOG = 2**20
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


@dataclass
class ChildOutcome:
    result: ChildResult
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    events: list[RuntimeEvent] = field(default_factory=list)
    stderr: str = ""
    wall_s: float = 0.0


def _read_capped(path: Path, cap: int) -> bytes | None:
    if not path.is_file() or path.is_symlink():
        return None
    with open(path, "rb") as f:
        return f.read(cap)


def events_of(out: Path) -> list[RuntimeEvent]:
    data = _read_capped(out / "events.jsonl", MAX_LOG) or b""
    events = []
    for line in data.splitlines():
        try:
            events.append(RuntimeEvent.model_validate_json(line))
        except ValidationError:
            continue  # a line the submitted code wrote itself, or one cut by the cap
    return events


def stuck_at(out: Path, src_prefix: str) -> tuple[str | None, int, bool]:
    """(file, line, timed out) from faulthandler's log: the innermost submission frame it names."""
    text = (_read_capped(out / "fault.log", MAX_LOG) or b"").decode(errors="replace")
    for file, line in _FRAME.findall(text):
        if file.startswith(src_prefix):
            return file[len(src_prefix):], int(line), text.startswith("Timeout")
    return None, 0, text.startswith("Timeout")


def _died(job: ChildJob, run: ChildRun, out: Path, src_prefix: str, events: list[RuntimeEvent]) -> ChildError:
    file, line, watchdog = stuck_at(out, src_prefix)
    if file is None and events:  # the last thing it was seen doing
        file, line = events[-1].file, events[-1].line
    who = "the simulation" if job.role == "kernel" else "the reference"
    rc = run.returncode
    stderr = run.stderr.text()
    if run.output_flood:
        code, message = "output_limit", f"{who} wrote more than {job.limits.output_limit_bytes} bytes to stdout/stderr"
    elif watchdog or run.timed_out:
        code, message = "timeout", f"{who} did not finish within {job.timeout_s:g} s"
    elif "MemoryError" in stderr:
        code, message = "memory_limit", f"{who} ran out of memory (memory limit reached)"
    elif _signal_of(rc) == signal.SIGXCPU:
        code, message = "cpu_limit", f"{who} used up its {job.limits.cpu_s} s of CPU time"
    else:
        tail = (stderr.strip().splitlines() or [""])[-1][:300]
        sig = _signal_of(rc)
        ended = ("exited without reporting a result" if rc == 0 else
                 f"was killed by {signal.Signals(sig).name}" if sig in signal.valid_signals() else f"ended with code {rc}")
        code, message = "crashed", f"the process running {who} {ended}" + (f": {tail}" if tail else "")
    return ChildError(code=code, message=message, file=file, line=line)


def _signal_of(rc: int | None) -> int | None:
    """The signal that ended the child: -N from subprocess, or 128+N as bubblewrap reports its child's death."""
    if rc is None:
        return None
    return -rc if rc < 0 else rc - 128 if 128 < rc < 160 else None


def read_outcome(job: ChildJob, job_dir: Path, run: ChildRun, src_prefix: str) -> ChildOutcome:
    out = job_dir / "out"
    events = events_of(out)
    stderr = run.stderr.text()
    total = sum(p.stat().st_size for p in out.iterdir() if p.is_file() and not p.is_symlink())
    raw = _read_capped(out / "result.json", MAX_RESULT_JSON + 1)
    # A flooding child was killed for it: a result it wrote meanwhile (e.g. a BrokenPipeError it caught
    # once the parent stopped reading) describes the flood's aftermath, not the run.
    if raw is None or run.output_flood:
        error = _died(job, run, out, src_prefix, events)
        return ChildOutcome(ChildResult(role=job.role, status="error", error=error), {}, events, stderr, run.wall_s)
    try:
        if total > job.limits.result_bytes or len(raw) > MAX_RESULT_JSON:
            raise ValueError(f"the child's results take {total} bytes, over the limit of {job.limits.result_bytes}")
        result = ChildResult.model_validate_json(raw)
        if result.role != job.role:
            raise ValueError(f"a {result.role} result from the {job.role} child")
        arrays = _arrays(out, result, job)
    except (ValueError, OSError) as exc:  # ValidationError is a ValueError
        message = f"the {job.role} child's results do not follow the protocol: {str(exc).splitlines()[0][:300]}"
        result = ChildResult(role=job.role, status="error", error=ChildError(code="bad_result", message=message))
        return ChildOutcome(result, {}, events, stderr, run.wall_s)
    return ChildOutcome(result, arrays, events, stderr, run.wall_s)


def _arrays(out: Path, result: ChildResult, job: ChildJob) -> dict[str, np.ndarray]:
    arrays = {}
    for meta in result.outputs:
        for name, shape, kinds in ((meta.array, meta.shape, "biuf"), (meta.written, meta.shape, "b")):
            if name is None:
                continue
            path = out / f"{name}.npy"
            if not path.is_file() or path.is_symlink() or path.stat().st_size > job.limits.file_bytes:
                raise ValueError(f"{name}.npy is missing or too large")
            a = np.load(path, allow_pickle=False)
            if a.dtype.kind not in kinds or tuple(a.shape) != tuple(shape):
                raise ValueError(f"{name}.npy holds {a.dtype} {list(a.shape)}, not numbers of shape {list(shape)}")
            arrays[name] = a
    return arrays
