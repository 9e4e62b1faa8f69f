"""Fail closed: with no usable sandbox the simulator never runs submitted code and says why and how to fix it."""

from __future__ import annotations

import os

import pytest

from evidence.nki.collector import SimulationCollector
from evidence.sandbox.bwrap import sandbox_status
from evidence.sandbox.config import SandboxConfig
from evidence.submission import Manifest, Submission

KERNEL = """import numpy as np
import neuronxcc.nki.language as nl
open({marker!r}, "w").write("ran")

def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(a))
    return out
"""


def submission(marker) -> Submission:
    manifest = Manifest.model_validate({
        "task": {"id": "t", "title": "t"}, "kernel": {"file": "kernel.py", "entry": "kernel"},
        "inputs": [{"name": "a", "shape": [128, 8]}], "reference": {"file": "ref.py", "entry": "ref"}})
    return Submission(manifest=manifest, files={"kernel.py": KERNEL.format(marker=str(marker)),
                                                "ref.py": "def ref(a):\n    return a\n"})


def test_missing_bubblewrap_means_sim_incomplete_and_the_code_never_runs(tmp_path):
    marker = tmp_path / "marker"
    config = SandboxConfig(bwrap=str(tmp_path / "no-such-bwrap"), import_policy=False)
    items = SimulationCollector(sandbox=config).collect(submission(marker))
    assert [i.kind for i in items] == ["sim.incomplete"]
    assert items[0].labels["code"] == "sandbox_unavailable"
    assert items[0].labels["message"].startswith("sandbox unavailable: bubblewrap not found")
    assert "apt-get install bubblewrap" in items[0].labels["message"]
    assert items[0].location.start_line == 5  # the kernel's def
    assert not marker.exists()
    # the control: the operator's opt-out runs the same code (so the check above could fail)
    SimulationCollector(sandbox=SandboxConfig(mode="off", import_policy=False), timeout_s=30).collect(submission(marker))
    assert marker.read_text() == "ran"


def test_a_bubblewrap_that_cannot_create_namespaces_names_the_sysctl(tmp_path):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    status = sandbox_status(SandboxConfig(bwrap=str(fake)))
    assert not status.available and status.detail.endswith("No permissions to create new namespace")
    assert "kernel.unprivileged_userns_clone=1" in status.fix and "GRADER_SANDBOX=off" in status.fix


@pytest.mark.skipif(os.geteuid() != 0, reason="RLIMIT_NPROC binds unprivileged graders; the cgroup is root's bound")
def test_root_without_a_pids_cgroup_is_unavailable(tmp_path):
    status = sandbox_status(SandboxConfig(pids_cgroup=str(tmp_path / "no-cgroup")))
    assert not status.available and "RLIMIT_NPROC does not bind" in status.detail
    assert "GRADER_SANDBOX_PIDS_CGROUP" in status.fix
