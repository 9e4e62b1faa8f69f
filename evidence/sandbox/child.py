"""Child entry point: `python -m evidence.sandbox.child JOB` (inside bubblewrap, JOB is /job).

Order matters: everything the child trusts is set up before the first line of submitted code runs.
1. read `job.json`; capture the result writer (`npy`) and the real `os._exit`;
2. faulthandler: tracebacks to `out/fault.log` at a fatal signal, and (armed last, so the budget
   is the submitted code's) at the job's deadline, then exit: the parent learns where it was stuck;
3. import the simulator, then set the rlimits;
4. serve framework stand-ins, cap stdout/stderr, install the audit hook;
5. run (evidence.nki.runner), write the arrays and `result.json`, and `_exit` at once (atexit
   handlers registered by submitted code never run).
"""

from __future__ import annotations

import faulthandler
import os
import posix
import sys
from pathlib import Path

from evidence.sandbox import npy

_real_exit = os._exit


class CappedStream:
    """stdout/stderr for submitted code: passes writes through until `cap` bytes, then OutputLimit."""

    def __init__(self, stream, cap: int, error) -> None:
        self.stream, self.cap, self.total, self.error = stream, cap, 0, error

    def write(self, text: str) -> int:
        self.total += len(text)
        if self.total > self.cap:
            raise self.error(f"more than {self.cap} bytes written to stdout/stderr")
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name):
        return getattr(self.stream, name)


def main(job_root: str) -> None:
    from evidence.sandbox.protocol import ChildJob

    root = Path(job_root)
    out = root / "out"
    job = ChildJob.model_validate_json((root / "job.json").read_bytes())
    fault = open(out / "fault.log", "w")  # noqa: SIM115 - faulthandler keeps the file for the child's life
    faulthandler.enable(fault, all_threads=True)
    events_fd = os.open(out / "events.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    from evidence.nki import runner
    from evidence.sandbox import rlimits, standins
    from evidence.sandbox.monitor import Monitor, OutputLimit

    rlimits.apply(job.limits)
    scratch = "/tmp" if job_root == "/job" else str(root / "scratch")
    os.makedirs(scratch, exist_ok=True)
    os.chdir(scratch)
    src = root / "src"
    read_roots = sorted({sys.base_prefix, sys.prefix, os.path.dirname(os.path.dirname(runner.__file__)), str(src),
                         *([sys.pycache_prefix] if sys.pycache_prefix else [])})  # bytecode of modules imported late
    monitor = Monitor(str(src), events_fd, block=job.import_policy, read_roots=read_roots, write_roots=[scratch],
                      withheld=job.withheld)
    finder = standins.install()
    cap = job.limits.output_limit_bytes // 2
    sys.stdout = CappedStream(sys.stdout, cap, OutputLimit)
    sys.stderr = CappedStream(sys.stderr, cap, OutputLimit)
    os._exit = posix._exit = monitor.exit_wrapper(_real_exit)
    faulthandler.dump_traceback_later(job.timeout_s, exit=True, file=fault)  # the budget of the submitted code
    monitor.snapshot()  # after the watchdog thread exists: threads beyond these are the submission's
    sys.addaudithook(monitor.hook)

    result, arrays = runner.run(job, src, monitor)
    for name, array in arrays.items():
        npy.write_array(str(out / f"{name}.npy"), array)
    result = result.model_copy(update={"stand_ins": tuple(sorted(finder.served))})
    npy.write_bytes(str(out / "result.json"), result.model_dump_json().encode())


if __name__ == "__main__":
    try:
        main(sys.argv[1])
        code = 0
    except BaseException:  # noqa: BLE001 - the child's outermost boundary: the parent reads no result
        import traceback

        traceback.print_exc(file=sys.__stderr__)
        code = 3
    for stream in (sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    _real_exit(code)
