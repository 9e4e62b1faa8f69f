"""The wheel, installed into a fresh venv, grades every example from a directory outside the checkout.

An editable install reads rubrics/ and prompts/ from the checkout, so only a real wheel shows an
install-layout bug (rubrics or templates missing from the package data). This builds one from a
copy of the source tree, installs it into a fresh venv and runs the console script from a temporary
directory with only copies of the examples around it, for both drafters.

Dependencies: resolving them afresh from the indexes takes minutes here, so the fresh venv gets the
closure of the wheel's declared requirements (not of everything in the test venv), pinned to the
versions this venv runs, installed with --no-deps; `pip check` then proves the declarations hold. A
dependency the code imports but pyproject does not declare is therefore missing there, and fails.
"""

from __future__ import annotations

import email
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from importlib import metadata
from packaging.markers import default_environment
from packaging.requirements import Requirement

from tests.conftest import EXAMPLE_NAMES, EXAMPLES, ROOT
from tests.fakes.openai_server import FakeOpenAIServer
from tests.grader.test_llm_wiring import cite_first_listed

pytestmark = pytest.mark.slow(minutes=2)
BUILD_JUNK = shutil.ignore_patterns(".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", ".grader-cache",
                                    ".pytest_cache", "*.db")


def _run(cmd: list[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    return proc


def pinned_closure(requirements: list[str]) -> list[str]:
    """name==version for every distribution the requirements need (transitively), as installed here."""
    env = default_environment()
    pins: dict[str, str] = {}
    todo = [(Requirement(r), "") for r in requirements]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({**env, "extra": extra}):
            continue
        dist = metadata.distribution(req.name)
        key = dist.metadata["Name"].lower()
        extras = sorted(req.extras)
        if key in pins and not extras:
            continue
        pins[key] = dist.version
        for sub in dist.requires or []:
            todo += [(Requirement(sub), e) for e in (extras or [""])]
    return [f"{name}=={version}" for name, version in sorted(pins.items())]


def _wheel_requirements(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        return email.message_from_bytes(zf.read(name)).get_all("Requires-Dist") or []


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bin/ of a fresh venv with the wheel of this source tree installed."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=BUILD_JUNK)
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp / "dist"), str(src)], cwd=tmp)
    (wheel,) = (tmp / "dist").glob("nki_grader-*.whl")
    _run([sys.executable, "-m", "venv", str(tmp / "venv")], cwd=tmp)
    pip = [str(tmp / "venv" / "bin" / "python"), "-m", "pip"]
    declared = [r for r in _wheel_requirements(wheel) if "extra ==" not in r]
    (tmp / "pins.txt").write_text("\n".join(pinned_closure(declared)) + "\n")
    _run([*pip, "install", "-q", "--no-deps", "-r", str(tmp / "pins.txt"), str(wheel)], cwd=tmp)
    _run([*pip, "check"], cwd=tmp)
    return tmp / "venv" / "bin"


@pytest.fixture
def outside(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A working directory with copies of the examples, and an environment that cannot see the checkout."""
    work = tmp_path / "elsewhere"
    shutil.copytree(EXAMPLES, work / "examples")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRADER_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(GRADER_CACHE_DIR=str(tmp_path / "cache"), OPENAI_API_KEY="sk-loopback")
    return work, env


def test_installed_package_carries_its_rubrics_and_prompts(installed, outside):
    work, env = outside
    where = _run([str(installed / "python"), "-c", "import grader.resources as r; print(r.shipped_dir('rubrics'))"],
                 cwd=work, env=env).stdout.strip()
    assert "site-packages" in where and not where.startswith(str(ROOT))
    site = Path(where).parent.parent
    data = [f.relative_to(ROOT) for pkg in ("grader", "evidence") for f in (ROOT / pkg).rglob("*")
            if f.is_file() and f.suffix not in (".py", ".pyc", ".md")]
    assert [d for d in data if not (site / d).is_file()] == []  # templates and tables next to the code ship too
    listed = _run([str(installed / "grader"), "rubric", "list"], cwd=work, env=env)
    assert "nki-kernel-review" in listed.stdout
    version = _run([str(installed / "grader"), "--version"], cwd=work, env=env).stdout
    assert version.startswith("nki-grader 0.1.0") and "prompts" in version and "static_rules" in version


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_installed_grader_evaluates_every_example(installed, outside, name):
    work, env = outside
    proc = _run([str(installed / "grader"), "evaluate", f"examples/{name}", "--format", "json"], cwd=work, env=env)
    draft = json.loads(proc.stdout)
    assert len(draft["criteria"]) == 10 and draft["drafter"]["name"] == "rules"
    assert any(c["status"] == "scored" for c in draft["criteria"])
    assert not draft["evidence"]["failures"], draft["evidence"]["failures"]


def test_installed_grader_drafts_with_a_model(installed, outside):
    work, env = outside
    with FakeOpenAIServer(default=cite_first_listed) as server:
        proc = _run([str(installed / "grader"), "evaluate", "examples/matmul-tiled", "--format", "json",
                     "--drafter", "llm", "--model", "openai/fake-judge", "--api-base", server.base_url, "--no-cache"],
                    cwd=work, env=env)
    draft = json.loads(proc.stdout)
    scored = [c for c in draft["criteria"] if c["status"] == "scored"]
    assert draft["drafter"]["name"] == "llm" and scored and all(c["score"] == 3 for c in scored)
    assert len(server.requests) == len(scored)
    assert draft["record"]["prompt_hashes"]["system.j2"].startswith("sha256:")
