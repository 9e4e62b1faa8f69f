"""Evidence does not know any rubric: no criterion id of the shipped rubric is written under evidence/."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from evidence.model import EvidenceItem
from evidence.static.framework import Rule

ROOT = Path(__file__).resolve().parents[2]
SHIPPED_IDS = [c["id"] for c in tomllib.loads((ROOT / "rubrics" / "nki-kernel-review.toml").read_text())["criteria"]]
EVIDENCE_FILES = sorted(p for p in (ROOT / "evidence").rglob("*") if p.suffix in (".py", ".md", ".toml"))


def test_compound_criterion_ids_appear_nowhere_under_evidence():
    compound = [c for c in SHIPPED_IDS if "_" in c]
    assert len(compound) >= 6
    hits = [f"{p.relative_to(ROOT)}: {c}" for p in EVIDENCE_FILES for c in compound if c in p.read_text()]
    assert hits == []


def test_one_word_criterion_ids_are_not_listed_as_criteria():
    """'tiling' or 'precision' are ordinary words (and parts of kind names); as entries of a tuple, list or
    set of strings they would be a criteria list."""
    words = {c for c in SHIPPED_IDS if "_" not in c}
    listed = []
    for path in (p for p in EVIDENCE_FILES if p.suffix == ".py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                listed += [f"{path.relative_to(ROOT)}:{e.lineno}: {e.value}" for e in node.elts
                           if isinstance(e, ast.Constant) and e.value in words]
    assert listed == []


def test_items_and_rules_carry_no_criteria():
    assert "criteria" not in EvidenceItem.model_fields
    assert not hasattr(Rule, "criteria")
