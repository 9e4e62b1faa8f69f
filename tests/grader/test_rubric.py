"""Rubric loading: the shipped rubric is complete, and malformed rubrics fail with one-line errors."""

from __future__ import annotations

import pytest

from grader.errors import RubricError
from grader.rubric import load_rubric, parse_rubric

SHIPPED_CRITERIA = (
    "kernel_correctness", "migration_fidelity", "tiling", "memory_hierarchy", "data_movement",
    "performance", "numerical_correctness", "precision", "neuron_platform", "benchmarking",
)

LEVELS = "\n".join(f'{n} = "level {n}"' for n in range(1, 6))


def rubric_text(criteria: str, head: str = 'id = "t"\nversion = "1"\ntitle = "T"') -> str:
    return f"[rubric]\n{head}\n\n{criteria}"


def criterion(extra: str = "", levels: str = LEVELS, kinds: str = '["claims.*"]') -> str:
    return (f'[[criteria]]\nid = "benchmarking"\ntitle = "B"\ndescription = "d"\nevidence_kinds = {kinds}\n'
            f'basis = ["claims.claim"]\n{extra}\n[criteria.levels]\n{levels}\n')


def test_shipped_rubric_has_the_ten_criteria_with_every_level_described():
    rubric = load_rubric("nki-kernel-review")
    assert tuple(c.id for c in rubric.criteria) == SHIPPED_CRITERIA
    for c in rubric.criteria:
        assert c.scores == (1, 2, 3, 4, 5)
        assert all(len(level.descriptor) > 40 for level in c.levels), c.id
        assert c.basis and c.evidence_kinds and c.description.strip()
    assert rubric.content_hash.startswith("sha256:")
    assert rubric.criterion("migration_fidelity").applies_when == "has_cuda"
    assert rubric.criterion("benchmarking").applies_when == "has_claims"


def test_shipped_rubric_declares_the_correctness_cap():
    rule = next(r for r in load_rubric().criterion("kernel_correctness").rules if r.id == "mismatch-caps-at-2")
    assert rule.cap == 2 and rule.when.kind == "sim.output" and rule.when.metric == "matches"


def test_minimal_rubric_parses_and_hash_tracks_content():
    a = parse_rubric(rubric_text(criterion()))
    b = parse_rubric(rubric_text(criterion()) + "\n# comment\n")
    assert a.criteria[0].scores == (1, 2, 3, 4, 5)
    assert a.content_hash != b.content_hash


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (rubric_text(criterion(kinds='["sim.nonexistent"]')), "criteria.benchmarking: unknown evidence kind 'sim.nonexistent'"),
        (rubric_text(criterion(levels='1 = "a"\n2 = "b"')), "levels must describe every score 1..5"),
        (rubric_text(criterion(extra='start = 9')), "start, caps and floors must lie on the scale"),
        (rubric_text(criterion(extra='colour = "red"')), "criteria.benchmarking.colour"),
        ("[rubric\nid=1", "invalid TOML"),
        ('[other]\nx = 1', "missing [rubric] table"),
        (rubric_text(criterion() + criterion()), "duplicate criterion id"),
    ],
)
def test_malformed_rubrics_fail_with_one_line(text, expected):
    with pytest.raises(RubricError) as info:
        parse_rubric(text, where="bad.toml")
    assert expected in str(info.value)
    assert "\n" not in str(info.value)


def test_rule_needs_exactly_one_effect():
    rule = '[[criteria.rules]]\nid = "r"\ndescription = "d"\nwhen = { kind = "claims.claim" }\ncap = 2\npenalty = 1\n'
    with pytest.raises(RubricError, match="exactly one of cap, floor, penalty"):
        parse_rubric(rubric_text(criterion() + rule))


def test_rule_may_only_look_at_citable_kinds():
    text = rubric_text(criterion(kinds='["claims.claim"]') +
                       '[[criteria.rules]]\nid = "r"\ndescription = "d"\nwhen = { kind = "claims.methodology" }\ncap = 2\n')
    with pytest.raises(RubricError, match="which the criterion may not cite"):
        parse_rubric(text)


def test_basis_must_be_citable():
    with pytest.raises(RubricError, match="basis 'claims.claim', which the criterion may not cite"):
        parse_rubric(rubric_text(criterion(kinds='["claims.methodology"]')))


def test_any_criterion_id_is_accepted():
    rubric = parse_rubric(rubric_text(criterion().replace('id = "benchmarking"', 'id = "claims_soundness"')))
    assert [c.id for c in rubric.criteria] == ["claims_soundness"]


def test_unknown_rubric_id():
    with pytest.raises(RubricError, match="unknown rubric 'nope'"):
        load_rubric("nope")
