"""A simulator finding's severity has one source: the call that raises it (`State.finding(code, message, severity)`,
or a `Finding`/`FindingModel` built with one). The evidence item carries it unchanged; a second table in the
evidence layer had drifted from the source (a low `find_index8_value_not_found` became a medium evidence item
because the table lacked it). Kernels written here."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

import evidence.nki
from evidence.model import Severity
from evidence.nki import load_kernel, simulate
from evidence.nki.report import FindingModel
from evidence.nki.sim_evidence import SimEvidence
from evidence.submission import Manifest, Submission

SEVERITIES = {s.value for s in Severity}
# where each constructor takes its severity: (positional index, keyword)
_SEVERITY_ARG = {"finding": (2, "severity"), "Finding": (4, "severity"), "FindingModel": (None, "severity")}


def _literals(node: ast.expr) -> set | None:
    """The values a severity expression can take when they are literal (`"medium" if x else "low"` too), else None."""
    if isinstance(node, ast.Constant):
        return {node.value}
    if isinstance(node, ast.IfExp):
        a, b = _literals(node.body), _literals(node.orelse)
        return a | b if a is not None and b is not None else None
    return None


def _raised() -> tuple[dict[str, set], list[str]]:
    """(code -> severities it is raised with, sites raising a finding without a literal, valid severity)."""
    found: dict[str, set] = {}
    bad: list[str] = []
    for path in Path(evidence.nki.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            if name not in _SEVERITY_ARG or (name == "finding" and len(node.args) + len(node.keywords) < 2):
                continue  # `overwrites.finding(st)` builds its finding inside
            index, keyword = _SEVERITY_ARG[name]
            arg = next((k.value for k in node.keywords if k.arg == keyword), None)
            if arg is None and any(isinstance(a, ast.Starred) for a in node.args):
                arg = node.args[-1]  # Finding(code, message, *site, severity)
            elif arg is None and index is not None and len(node.args) > index:
                arg = node.args[index]
            if isinstance(arg, (ast.Name, ast.Attribute)) and "severity" in ast.unparse(arg):
                continue  # passed on from the call that raised it (State.finding, build_report)
            code = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "code"), None)
            values = _literals(arg) if arg is not None else None
            if values is None or not values <= SEVERITIES:
                bad.append(f"{path.name}:{node.lineno}")
            elif isinstance(code, ast.Constant):
                found.setdefault(code.value, set()).update(values)
    return found, bad


def test_every_finding_is_raised_with_a_literal_valid_severity():
    raised, bad = _raised()
    assert "find_index8_value_not_found" in raised and len(raised) >= 10  # the scan sees the simulator's findings
    assert raised["hbm_store_overwritten"] == {"medium", "low"}  # graded by the share of bytes overwritten
    assert bad == []


def test_a_finding_s_evidence_item_keeps_the_severity_it_was_raised_with():
    raised, _ = _raised()
    ev = SimEvidence(_submission(), "simulator@test")
    for code, severities in raised.items():
        for s in severities:
            item = ev.finding_item(FindingModel(code=code, message="m", severity=s), None)
            if item.kind == "sim.finding":  # security findings become security items, always high
                assert item.severity.value == s, code


KERNEL = '''
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(a, b):
    out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    p = nl.matmul(nl.load(a), nl.load(b), transpose_x=True)  # [128, 128] in PSUM
    q = nl.matmul(p, nl.load(b), transpose_x=True)  # a PSUM operand: low
    nl.store(out[:, 0:128], value=q)  # columns 128..255 never written: high
    return out
'''


def _submission() -> Submission:
    data = {"task": {"id": "sev", "title": "sev", "target": "trn2"}, "kernel": {"file": "kernel.py", "entry": "kernel"},
            "inputs": [{"name": "a", "shape": [128, 128], "dtype": "float32"},
                       {"name": "b", "shape": [128, 128], "dtype": "float32"}]}
    return Submission(manifest=Manifest.model_validate(data), files={"kernel.py": KERNEL})


def test_a_kernel_s_findings_reach_the_evidence_with_the_simulator_s_severity():
    a = np.ones((128, 128), np.float32)
    report = simulate(load_kernel(KERNEL, display="kernel.py").kernel, a, a).report
    raised = {f.code: f.severity.value for f in report.findings}
    assert raised == {"matmul_operand_in_psum": "low", "output_not_fully_written": "high"}
    items = [SimEvidence(_submission(), "simulator@test").finding_item(f, None) for f in report.findings]
    assert {i.labels["code"]: i.severity.value for i in items} == raised
