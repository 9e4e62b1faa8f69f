"""Every rule's VALID / INVALID examples, collected by walking the Rule subclasses."""

from __future__ import annotations

import textwrap

import pytest

from evidence.static.engine import analyze, bindings_from
from evidence.static.framework import Invalid, Valid, load_rules

RULES = load_rules()


def _cases(kind: str):
    for rule in RULES:
        for i, ex in enumerate(getattr(rule, kind)):
            ex = ex if isinstance(ex, (Valid, Invalid)) else (Valid(ex) if kind == "VALID" else Invalid(ex))
            yield pytest.param(rule, ex, id=f"{rule.id}-{kind.lower()}-{i}")


def _run(rule, ex):
    code = textwrap.dedent(ex.code)
    result = analyze(code, file="example.py", inputs=bindings_from(ex.inputs or {}), rules=[rule],
                     options=ex.options)
    assert not result.failures, result.failures
    return [f for f in result.findings if f.rule == rule.id]


@pytest.mark.parametrize(("rule", "example"), list(_cases("VALID")))
def test_valid_example_has_no_finding(rule, example):
    found = _run(rule, example)
    assert found == [], f"{rule.id} flagged valid code: {[(f.start, f.message) for f in found]}"


@pytest.mark.parametrize(("rule", "example"), list(_cases("INVALID")))
def test_invalid_example_is_flagged(rule, example):
    found = _run(rule, example)
    assert found, f"{rule.id} missed:\n{example.code}"
    if example.line is not None:
        assert found[0].start == example.line
    f = found[0]
    # a rule's declared severity is the most severe it reports (some scale it with the magnitude)
    assert f.message and f.detail and f.severity.rank <= rule.severity.rank


def test_every_rule_is_documented_and_has_examples():
    assert len(RULES) >= 24
    for rule in RULES:
        assert rule.id and rule.doc(), rule
        assert len(rule.VALID) >= 1 and len(rule.INVALID) >= 1, rule.id
        assert rule.dialects
