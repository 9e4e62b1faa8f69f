"""`evidence` must stay deterministic and model-free: it never imports grader or model/web stacks."""

from __future__ import annotations

import ast
import subprocess
import sys

from tests.conftest import ROOT

FORBIDDEN = ("grader", "litellm", "instructor", "fastapi", "starlette", "uvicorn", "openai")


def test_no_forbidden_import_statements_in_evidence():
    offenders = []
    for path in sorted((ROOT / "evidence").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n.split(".")[0] in FORBIDDEN]
    assert offenders == []


def test_importing_every_collector_pulls_in_no_forbidden_module():
    code = (
        "import sys, evidence, evidence.gather\n"
        "from evidence.catalog import load_collectors\n"
        "assert load_collectors()\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
