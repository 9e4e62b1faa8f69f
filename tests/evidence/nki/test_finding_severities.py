"""The severity a simulator finding is raised with is the one its evidence item carries: the evidence layer's table
(`FINDING_SEVERITY`) must not silently regrade what the simulator's source says (a low `find_index8_value_not_found`
became a medium evidence item because the table lacked it)."""

from __future__ import annotations

import ast
from pathlib import Path

import evidence.nki
from evidence.nki.sim_evidence import FINDING_SEVERITY, SELF_GRADED


def _raised() -> dict[str, set[tuple[str, str]]]:
    """code -> {(severity, file:line)} of every `*.finding("code", message, "severity")` call with literal arguments."""
    found: dict[str, set[tuple[str, str]]] = {}
    for path in Path(evidence.nki.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "finding" and len(node.args) >= 3:
                code, _, severity = node.args[:3]
                if isinstance(code, ast.Constant) and isinstance(severity, ast.Constant):
                    found.setdefault(code.value, set()).add((severity.value, f"{path.name}:{node.lineno}"))
    return found


def test_every_finding_keeps_the_severity_the_simulator_raises_it_with():
    raised = _raised()
    assert "find_index8_value_not_found" in raised and len(raised) >= 10  # the scan sees the simulator's findings
    wrong = {code: (sorted(sites), FINDING_SEVERITY.get(code, "medium (default)"))
             for code, sites in raised.items() if code not in SELF_GRADED
             and {s for s, _ in sites} != {getattr(FINDING_SEVERITY.get(code), "value", "medium")}}
    assert wrong == {}
