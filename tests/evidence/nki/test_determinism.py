"""The simulator gives the same bytes in separate processes, whatever their hash seeds.

Within one process a dict or set order can look stable and still depend on PYTHONHASHSEED; two
interpreters with different seeds expose it. The script prints a digest of the outputs and of the
report (findings, trace statistics, per-line statistics) of a corpus kernel with random inputs.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # two interpreters start and simulate

SCRIPT = """
import hashlib, json, numpy as np
from evidence.nki import load_kernel, simulate
kernel = load_kernel("tests/corpus/nki/softmax_ragged.py")
fn = next(getattr(kernel, n) for n in dir(kernel) if n.endswith("_kernel") and callable(getattr(kernel, n)))
x = np.random.default_rng(7).standard_normal((300, 256)).astype(np.float32)
sim = simulate(fn, x)
h = hashlib.sha256()
for out in sim.outputs:
    h.update(np.ascontiguousarray(out).tobytes())
report = sim.report.model_dump(mode="json") if hasattr(sim.report, "model_dump") else vars(sim.report)
h.update(json.dumps(report, sort_keys=True, default=repr).encode())
print(h.hexdigest())
"""


def _digest(seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def test_simulation_is_identical_across_processes_and_hash_seeds():
    assert _digest("1") == _digest("4242")
