"""Threads after the run: a thread still there is reported, one that has just ended is not."""

from __future__ import annotations

import json
import os
import threading

from evidence.sandbox.monitor import Monitor


def _monitor(tmp_path) -> tuple[Monitor, int]:
    fd = os.open(tmp_path / "events.jsonl", os.O_WRONLY | os.O_CREAT)
    monitor = Monitor(str(tmp_path / "src"), fd, block=False, read_roots=[], write_roots=[], withheld=())
    monitor.snapshot()
    return monitor, fd


def _events(tmp_path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]


def test_a_thread_ending_as_the_call_returns_is_not_left_running(tmp_path):
    # the simulator joins its workers before returning, but a joined thread stays listed in
    # /proc/self/task for a moment (this capped correct matmul kernels at 1 now and then)
    monitor, fd = _monitor(tmp_path)
    done = threading.Event()
    worker = threading.Thread(target=done.wait, args=(0.05,))
    worker.start()
    monitor.after_run(("kernel.py", 3))
    os.close(fd)
    worker.join()
    assert _events(tmp_path) == []


def test_a_thread_that_outlives_the_call_is_reported_at_the_entry_line(tmp_path):
    monitor, fd = _monitor(tmp_path)
    release = threading.Event()
    sleeper = threading.Thread(target=release.wait, args=(30,))
    sleeper.start()
    try:
        monitor.after_run(("kernel.py", 3))
    finally:
        release.set()
        sleeper.join()
        os.close(fd)
    [event] = _events(tmp_path)
    assert (event["what"], event["file"], event["line"]) == ("threads left running", "kernel.py", 3)
    assert event["detail"].startswith("1 thread(s)")
