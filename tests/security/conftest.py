"""The hostile suite's harness: every case through the real service (API + worker threads), at once.

One batch per mode: with the import policy (the default) and with it off (bubblewrap and the
rlimits alone). Before a batch: secrets in the grader's environment, a sentinel tree and a secret
file outside every job, digests of files the grader relies on. The cases are queued through
POST /v1/evaluations, three worker threads run them (the sandbox runs `GRADER_SIM_WORKERS`
children at once), and each finished evaluation is fetched through the API. After the batch: the
digests, leftover processes, pids cgroups and listening sockets are checked, and the service must
still answer and grade a clean submission.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import psutil
import pytest
from fastapi.testclient import TestClient

from grader.api.app import create_app
from grader.service.worker import Worker
from grader.settings import Settings
from tests.conftest import ROOT
from tests.security.cases import CASES, CLEAN_KERNEL, CLEAN_REFERENCE, Case

TIMEOUT_S = 3.0  # per child: infinite loops and sleeps are cut here
BUDGET_S = 90.0  # a whole job, start to finish, on a loaded 2-core machine
MANIFEST = """[task]
id = "hostile-{id}"
title = "hostile case {id}"

[kernel]
file = "kernel.py"
entry = "kernel"

[[inputs]]
name = "a"
shape = [128, 64]
dtype = "float32"

[reference]
file = "reference.py"
entry = "ref"
"""


@dataclass
class Batch:
    mode: str
    values: dict[str, str]
    tokens: tuple[str, ...]
    views: dict[str, dict] = field(default_factory=dict)
    answered_after: dict[str, int] = field(default_factory=dict)  # case -> status of the request that followed it
    unchanged: dict[str, bool] = field(default_factory=dict)
    leftovers: list[str] = field(default_factory=list)
    clean_view: dict | None = None
    listening: bool = False


def _digest_tree(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        h.update(str(path.relative_to(root)).encode())
        if path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()


def _digest_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _sandbox_processes() -> list[str]:
    """Processes started for this grader's sandbox jobs (marked in their environment) still alive."""
    marker = f"-{os.getpid()}-".encode()
    found = []
    for proc in psutil.process_iter(["pid", "name"]):
        try:
            env = Path(f"/proc/{proc.pid}/environ").read_bytes()
        except OSError:
            continue
        if b"NKI_SANDBOX_JOB=" in env and marker in env.split(b"NKI_SANDBOX_JOB=", 1)[1].split(b"\0", 1)[0]:
            found.append(f"{proc.pid} {proc.info['name']}")
    return found


def _upload(case: Case | None, values: dict[str, str]) -> dict:
    files = case.files(**values) if case else {"kernel.py": CLEAN_KERNEL, "reference.py": CLEAN_REFERENCE}
    return {"manifest": MANIFEST.format(id=case.id if case else "clean"), "files": files}


def _await(client: TestClient, ids: dict[str, str], deadline: float) -> dict[str, dict]:
    views: dict[str, dict] = {}
    while len(views) < len(ids) and time.monotonic() < deadline:
        for case_id, job in ids.items():
            if case_id not in views:
                view = client.get(f"/v1/evaluations/{job}").json()
                if view["state"] in ("done", "failed"):
                    views[case_id] = view
        time.sleep(0.5)
    return views


def run_batch(mode: str, tmp: Path) -> Batch:
    sentinel = tmp / "sentinel"
    (sentinel / "nested").mkdir(parents=True)
    token_env, token_key, token_file = (secrets.token_hex(16) for _ in range(3))
    (sentinel / "secret.txt").write_text(f"file-secret-{token_file}")
    (sentinel / "nested" / "keep.txt").write_text("must stay")
    payload = f'import os; os.system("touch {sentinel}/pwned")'
    values = {"sentinel": str(sentinel), "secret_file": str(sentinel / "secret.txt"), "repo": str(ROOT),
              "grader_pid": str(os.getpid()), "port": "47613", "payload_hex": payload.encode().hex()}
    watched = {"sentinel": sentinel, "numpy": Path(np.__file__), "pyproject": ROOT / "pyproject.toml"}
    before = {k: _digest_tree(p) if p.is_dir() else _digest_file(p) for k, p in watched.items()}
    batch = Batch(mode, values, (token_env, token_key, token_file))
    settings = Settings(data_dir=tmp / "data", auth="off", sim_timeout_s=TIMEOUT_S, sim_reference_timeout_s=TIMEOUT_S,
                        sim_memory_mb=1024, sim_workers=4, import_policy=(mode == "policy"), job_lease_s=120,
                        evidence_cache=False)  # every case and the clean one really run
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRADER_TEST_SECRET", f"env-secret-{token_env}")
        mp.setenv("OPENAI_API_KEY", f"sk-{token_key}")
        with TestClient(create_app(settings)) as client:
            workers = [Worker(client.app.state.store, client.app.state.settings, poll_s=0.05) for _ in range(3)]
            threads = [threading.Thread(target=w.run, daemon=True) for w in workers]
            for t in threads:
                t.start()
            try:
                ids = {}
                for case in CASES:
                    response = client.post("/v1/evaluations", json=_upload(case, values))
                    assert response.status_code == 202, response.text
                    ids[case.id] = response.json()["id"]
                batch.views = _await(client, ids, time.monotonic() + 900)
                # every finished case was followed by requests the service answered
                for case_id in batch.views:
                    batch.answered_after[case_id] = client.get("/healthz").status_code
                clean = client.post("/v1/evaluations?wait=120", json=_upload(None, values))
                batch.clean_view = clean.json() if clean.status_code == 200 else {"status": clean.status_code}
            finally:
                for w in workers:
                    w.stop.set()
                for t in threads:
                    t.join(60)
    batch.unchanged = {k: (_digest_tree(p) if p.is_dir() else _digest_file(p)) == before[k] for k, p in watched.items()}
    batch.leftovers = _sandbox_processes()
    batch.leftovers += [str(p) for p in Path("/sys/fs/cgroup/pids").glob(f"nki-sandbox-{os.getpid()}-*")]
    batch.listening = any(c.laddr and c.laddr.port == int(values["port"]) and c.status == psutil.CONN_LISTEN
                          for c in psutil.net_connections(kind="inet"))
    return batch


@pytest.fixture(scope="module", params=["policy", "sandbox_alone"])
def batch(request, tmp_path_factory) -> Batch:
    return run_batch(request.param, tmp_path_factory.mktemp(f"hostile-{request.param}"))
