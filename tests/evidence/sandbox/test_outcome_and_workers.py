"""The parent trusts nothing in out/, and runs at most `workers` sandboxed children at once."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from evidence.nki.collector import SimulationCollector
from evidence.sandbox import launcher
from evidence.sandbox.config import Limits, SandboxConfig
from evidence.sandbox.launcher import Capture, ChildRun
from evidence.sandbox.outcome import read_outcome
from evidence.sandbox.protocol import ChildJob
from evidence.submission import InputSpec, Manifest, Submission

JOB = ChildJob(role="kernel", file="kernel.py", entry="k", inputs=(InputSpec(name="a", shape=(2, 2)),),
               timeout_s=5, limits=Limits(result_bytes=2**20, file_bytes=2**20))
RESULT = {"role": "kernel", "status": "ok", "outputs": [{"array": "out0", "dtype": "float32", "shape": [2, 2]}]}


def _run(rc: int = 0, stderr: bytes = b"", **kw) -> ChildRun:
    err = Capture(100)
    err.add(stderr)
    return ChildRun(rc, kw.get("timed_out", False), kw.get("flood", False), Capture(100), err, 0.1)


def _out(tmp_path: Path, result: dict | bytes | None, arrays: dict) -> Path:
    out = tmp_path / "out"
    out.mkdir()
    if result is not None:
        (out / "result.json").write_bytes(result if isinstance(result, bytes) else json.dumps(result).encode())
    for name, a in arrays.items():
        np.save(out / f"{name}.npy", a, allow_pickle=True)
    return tmp_path


@pytest.mark.parametrize("result, arrays, says", [
    (RESULT, {"out0": np.array([["a", "b"], ["c", "d"]], dtype=object)}, "cannot be loaded when allow_pickle=False"),
    (RESULT, {"out0": np.zeros((3, 3), np.float32)}, "not numbers of shape [2, 2]"),
    (RESULT, {}, "out0.npy is missing"),
    ({**RESULT, "role": "reference"}, {"out0": np.zeros((2, 2), np.float32)}, "a reference result from the kernel child"),
    (b"{not json", {}, "do not follow the protocol"),
    (RESULT, {"out0": np.zeros((700, 700), np.float32)}, "over the limit"),
])
def test_results_that_break_the_protocol_are_a_bad_result(tmp_path, result, arrays, says):
    outcome = read_outcome(JOB, _out(tmp_path, result, arrays), _run(), "/job/src/")
    assert outcome.result.error.code == "bad_result" and says in outcome.result.error.message and outcome.arrays == {}


def test_a_child_that_died_is_described_from_what_it_left(tmp_path):
    out = _out(tmp_path, None, {})
    (out / "out" / "fault.log").write_text('Timeout (0:00:05)!\nThread 0x1 (most recent call first):\n'
                                           '  File "/usr/lib/numpy/x.py", line 3 in f\n  File "/job/src/kernel.py", line 12 in k\n')
    died = read_outcome(JOB, out, _run(-9), "/job/src/").result.error
    assert (died.code, died.file, died.line) == ("timeout", "kernel.py", 12)
    (out / "out" / "fault.log").unlink()
    assert read_outcome(JOB, out, _run(1, b"...\nMemoryError\n"), "/job/src/").result.error.code == "memory_limit"
    assert read_outcome(JOB, out, _run(-9, flood=True), "/job/src/").result.error.code == "output_limit"
    assert "exited without reporting a result" in read_outcome(JOB, out, _run(0), "/job/src/").result.error.message


def test_a_flooding_child_is_an_output_limit_even_when_it_wrote_a_result(tmp_path):
    """The parent stops reading and kills a child that floods stdout; the child may still report the
    BrokenPipeError it then met, as if the kernel itself had failed."""
    error = {"role": "kernel", "status": "error",
             "error": {"code": "python_error", "message": "BrokenPipeError: [Errno 32] Broken pipe"}}
    out = _out(tmp_path, error, {})
    assert read_outcome(JOB, out, _run(-9, flood=True), "/job/src/").result.error.code == "output_limit"
    assert read_outcome(JOB, out, _run(0), "/job/src/").result.error.code == "python_error"


def test_parallel_simulations_are_bounded_by_workers():
    kernel = ("import time\nimport neuronxcc.nki.language as nl\n\ndef kernel(a):\n    time.sleep(0.6)\n"
              "    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n    nl.store(out, value=nl.load(a))\n"
              "    return out\n")
    manifest = Manifest.model_validate({"task": {"id": "t", "title": "t"}, "kernel": {"file": "k.py", "entry": "kernel"},
                                        "inputs": [{"name": "a", "shape": [128, 4]}],
                                        "reference": {"file": "r.py", "entry": "ref"}})
    sub = Submission(manifest=manifest, files={"k.py": kernel, "r.py": "def ref(a):\n    return a\n"})
    launcher._running["peak"] = 0
    collector = SimulationCollector(sandbox=SandboxConfig(workers=3), timeout_s=30)
    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(lambda _: collector.collect(sub), range(4)))  # 8 children
    assert all(any(i.kind == "sim.output" and i.metrics["matches"] == 1.0 for i in items) for items in outcomes)
    assert launcher.running() == {"now": 0, "peak": 3}


def test_job_folders_removed_in_the_background_are_all_gone_when_the_process_exits(tmp_path):
    """Removal waits on the kernel's teardown of the child's mount namespace, so it runs on a background thread;
    a process that exits right after queueing removals still leaves nothing behind."""
    import subprocess
    import sys

    script = (
        "import pathlib, tempfile\n"
        "from evidence.sandbox.jobs import remove_later\n"
        "for n in range(3):\n"
        "    d = pathlib.Path(tempfile.mkdtemp(prefix='nki-job-kernel-'))\n"
        "    for i in range(3000):\n"
        "        (d / f'{i}.npy').write_bytes(b'x')\n"
        "    remove_later(d)\n"
    )
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path), "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=120)
    assert list(tmp_path.glob("nki-job-*")) == []
