"""Gold sets and reviews files: valid ones load; every kind of bad input is one line naming where."""

from __future__ import annotations

import pytest

from grader.consistency.goldset import CalibrationError, load_gold_set, parse_gold
from grader.consistency.reviews import UNSCORED, parse_reviews
from grader.rubric import load_rubric
from tests.grader.consistency.conftest import mini_set

RUBRIC = load_rubric("nki-kernel-review")


def test_fixture_set_loads_with_every_label():
    gold = load_gold_set(mini_set(), RUBRIC)
    assert [i.id for i in gold.items] == ["matmul-hoisted", "matmul-reload", "rmsnorm-port", "softmax-masked", "softmax-ragged"]
    item = gold.item("rmsnorm-port")
    assert item.labels["benchmarking"].score == 2 and item.labels["migration_fidelity"].score == 4
    assert gold.item("softmax-ragged").labels["benchmarking"].score == "not_applicable"
    assert gold.hash == load_gold_set(mini_set(), RUBRIC).hash


def test_set_hash_changes_with_gold(mini_copy):
    before = load_gold_set(mini_copy, RUBRIC).hash
    path = mini_copy / "matmul-reload" / "gold.toml"
    path.write_text(path.read_text().replace("score = 2\n", "score = 3\n", 1))
    assert load_gold_set(mini_copy, RUBRIC).hash != before


def _one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def test_set_without_items(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(CalibrationError) as exc:
        load_gold_set(tmp_path / "empty", RUBRIC)
    assert "no items" in _one_line(exc)
    with pytest.raises(CalibrationError, match="not a folder"):
        load_gold_set(tmp_path / "missing", RUBRIC)


def test_item_without_gold(mini_copy):
    (mini_copy / "softmax-masked" / "gold.toml").unlink()
    with pytest.raises(CalibrationError) as exc:
        load_gold_set(mini_copy, RUBRIC)
    assert "softmax-masked: item has no gold.toml" in _one_line(exc)


def test_gold_score_outside_scale_names_file_and_line():
    text = '[criteria.tiling]\nscore = 5\n\n[criteria.precision]\nscore = 7\nrationale = "x"\n'
    with pytest.raises(CalibrationError) as exc:
        parse_gold(text, RUBRIC, where="item/gold.toml")
    assert _one_line(exc) == 'item/gold.toml:4: criteria.precision.score = 7 is outside 1-5 (or "not_applicable")'
    with pytest.raises(CalibrationError, match="outside"):
        parse_gold('[criteria.tiling]\nscore = "high"\n', RUBRIC, where="g")
    with pytest.raises(CalibrationError, match="outside"):
        parse_gold('[criteria.tiling]\nscore = true\n', RUBRIC, where="g")


def test_gold_naming_unknown_criterion():
    with pytest.raises(CalibrationError) as exc:
        parse_gold('[criteria.tiling]\nscore = 5\n[criteria.speed]\nscore = 4\n', RUBRIC, where="it/gold.toml")
    assert _one_line(exc).startswith("it/gold.toml:3: unknown criterion 'speed'; rubric nki-kernel-review has")


def test_gold_other_problems():
    with pytest.raises(CalibrationError, match="invalid TOML"):
        parse_gold("[criteria.tiling\n", RUBRIC, where="g")
    with pytest.raises(CalibrationError, match="needs score"):
        parse_gold('[criteria.tiling]\nrationale = "x"\n', RUBRIC, where="g")
    with pytest.raises(CalibrationError, match="no \\[criteria"):
        parse_gold("[meta]\nby = 'me'\n", RUBRIC, where="g")


def test_broken_submission_in_set_is_named_by_item(mini_copy):
    (mini_copy / "matmul-reload" / "kernel.py").write_text("def broken(:\n")
    with pytest.raises(CalibrationError) as exc:
        load_gold_set(mini_copy, RUBRIC)
    assert _one_line(exc).startswith("matmul-reload: kernel.py:1: Python syntax error")


GOLD = load_gold_set(mini_set(), RUBRIC)
HEADER = "reviewer,item,criterion,score\n"


def test_reviews_parse_and_complete_missing_criteria():
    rows = parse_reviews(HEADER + "ann,matmul-reload,tiling,4\nann,matmul-reload,benchmarking,not_applicable\n"
                         "bob,softmax-ragged,tiling,unscored\n", GOLD, RUBRIC)
    by = {(r.reviewer, r.item, r.criterion): r.score for r in rows}
    assert by[("ann", "matmul-reload", "tiling")] == 4
    assert by[("ann", "matmul-reload", "benchmarking")] == "not_applicable"
    assert by[("ann", "matmul-reload", "precision")] == UNSCORED  # graded the item, left the criterion out
    assert by[("bob", "softmax-ragged", "tiling")] == UNSCORED
    assert ("bob", "matmul-reload", "tiling") not in by  # bob never graded that item
    assert len(rows) == 2 * len(RUBRIC.criteria)


@pytest.mark.parametrize(("body", "message"), [
    ("ann,nope,tiling,4\n", "reviews.csv:2: unknown item 'nope' (not in set mini-set)"),
    ("ann,matmul-reload,tiling,4\nann,matmul-reload,speed,4\n", "reviews.csv:3: unknown criterion 'speed'"),
    ("ann,matmul-reload,tiling\n", "reviews.csv:2: expected 4 columns (reviewer,item,criterion,score), got 3"),
    ("ann,matmul-reload,tiling,9\n", "reviews.csv:2: score 9 is outside 1-5"),
    ("ann,matmul-reload,tiling,good\n", "reviews.csv:2: score 'good' is not an integer"),
    ("ann,matmul-reload,tiling,4\n\nann,matmul-reload,tiling,3\n", "reviews.csv:4: duplicate score for ann/matmul-reload/tiling (first on line 2)"),
    (",matmul-reload,tiling,4\n", "reviews.csv:2: empty reviewer"),
    ("", "reviews.csv: no reviewer scores after the header"),
])
def test_bad_reviews_name_the_row(body, message):
    with pytest.raises(CalibrationError) as exc:
        parse_reviews(HEADER + body, GOLD, RUBRIC)
    assert _one_line(exc).startswith(message)


def test_reviews_need_the_header():
    with pytest.raises(CalibrationError, match="reviews.csv:1: the first row must be the header"):
        parse_reviews("ann,matmul-reload,tiling,4\n", GOLD, RUBRIC)
