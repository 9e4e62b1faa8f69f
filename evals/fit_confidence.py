"""Fit the rules drafter's confidence table on a calibration set (grader/drafting/confidence.py).

    python evals/fit_confidence.py [SET] [--rubric ID] [--check]

Drafts every item with the rules drafter, counts per criterion and draft state how often the score
equals gold, writes `rubrics/<rubric>.confidence.json`, and prints the expected calibration error
(ECE) of the fitted confidences, in-sample and leave-one-item-out (each item's confidences from a
table fitted without it), next to the ECE of uncalibrated confidence. `--check` prints without writing.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.drafting.confidence import calibration_error, estimate, fit, table_path  # noqa: E402


def _item_rows(args: tuple[Path, str]) -> list[tuple[str, str, bool, float]]:
    """(criterion, state, agreed with gold, uncalibrated confidence) for one item's scored criteria."""
    from evidence.gather import gather
    from grader.drafting.rules import criterion_state
    from grader.evaluate import as_submission
    from grader.rubric import load_rubric
    from grader.settings import Settings

    item, rubric_id = args
    gold = tomllib.loads((item / "gold.toml").read_text())["criteria"]
    sub = as_submission(item)
    bundle = gather(sub, options=Settings().collector_options())
    rubric = load_rubric(rubric_id)
    rows = []
    for c in rubric.criteria:
        got = criterion_state(c, sub, bundle, rubric)
        want = gold.get(c.id, {}).get("score")
        if got is not None and isinstance(want, int):
            score, state, coverage = got
            rows.append((c.id, state, score == want, round(0.5 + 0.5 * coverage, 3)))
    return rows


def _dump(table: dict) -> str:
    """Indented JSON with each [agree, n] cell on one line (reviewable diffs when the table is refitted)."""
    text = json.dumps(table, indent=1, sort_keys=True)
    return re.sub(r"\[\s+(\d+),\s+(\d+)\s+\]", r"[\1, \2]", text) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("set", nargs="?", default=str(ROOT / "evals" / "calibration" / "nki-review-v1"))
    parser.add_argument("--rubric", default="nki-kernel-review")
    parser.add_argument("--check", action="store_true", help="print the figures, do not write the table")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    items = sorted(p for p in Path(args.set).iterdir() if (p / "gold.toml").is_file())
    with ProcessPoolExecutor(args.workers) as pool:
        per_item = list(pool.map(_item_rows, [(p, args.rubric) for p in items]))
    rows = [r for item_rows in per_item for r in item_rows]
    table = fit([(c, s, ok) for c, s, ok, _ in rows])
    in_sample = [(estimate(table, c, s), ok) for c, s, ok, _ in rows]
    held_out = []
    for i, item_rows in enumerate(per_item):
        rest = fit([(c, s, ok) for j, other in enumerate(per_item) if j != i for c, s, ok, _ in other])
        held_out += [(estimate(rest, c, s), ok) for c, s, ok, _ in item_rows]
    before = [(conf, ok) for _, _, ok, conf in rows]
    accuracy = sum(ok for *_, ok, _ in rows) / len(rows)
    print(f"{len(items)} items, {len(rows)} scored criteria, exact agreement {accuracy:.3f}")
    print(f"ECE uncalibrated {calibration_error(before):.3f}; calibrated in-sample {calibration_error(in_sample):.3f}, "
          f"leave-one-item-out {calibration_error(held_out):.3f}")
    for state, (agree, n) in sorted(table["states"].items()):
        print(f"  {state:16s} {agree:4d}/{n:<4d} agree")
    if not args.check:
        from grader.rubric import load_rubric
        table.update({"rubric": args.rubric, "rubric_hash": load_rubric(args.rubric).content_hash,
                      "set": Path(args.set).name, "items": len(items),
                      "ece_in_sample": round(calibration_error(in_sample), 4),
                      "ece_leave_one_out": round(calibration_error(held_out), 4)})
        table_path(args.rubric).write_text(_dump(table))
        print(f"wrote {table_path(args.rubric)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
