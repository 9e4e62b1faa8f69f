"""False-positive rate of every static rule over the clean corpus kernels, and pair behaviour.

Run: .venv/bin/python benchmarks/static_false_positives.py
Clean kernels are the optimised half of every naive/optimised pair in tests/corpus/nki/pairs
plus the faithful CUDA port; a finding on one of them is a false positive. The naive halves must
show their EXPECTED_FINDINGS. Findings on the other corpus kernels are listed for review.
"""

from __future__ import annotations

import sys
from collections import Counter

from _corpus import clean_files, corpus_entry, loader, other_files

from evidence.static.engine import analyze
from evidence.static.framework import load_rules


def findings(path):
    src, inputs, entry, opts = corpus_entry(path)
    return analyze(src, file=path.name, inputs=inputs, entry=entry, options=opts).findings


def main() -> int:
    rules = load_rules()
    clean = clean_files()
    flagged: dict[str, set[str]] = {r.id: set() for r in rules}
    for path in clean:
        for f in findings(path):
            flagged[f.rule].add(f"{path.name}:{f.start}")
    print(f"False-positive rate per rule over {len(clean)} clean kernels")
    print(f"{'rule':34} {'kind':5} {'sev':8} {'kernels flagged':>16} {'rate':>6}")
    total_fp = 0
    for r in rules:
        files = {x.split(':')[0] for x in flagged[r.id]}
        total_fp += len(files)
        kind = "perf" if r.performance else "corr"
        print(f"{r.id:34} {kind:5} {r.severity.value:8} {len(files):>10}/{len(clean):<5} {len(files) / len(clean):6.1%}"
              + (f"  {sorted(flagged[r.id])}" if files else ""))
    print(f"total false positives: {total_fp}")

    print("\nNaive/optimised pairs (expected findings on naive, none on optimised)")
    ok = total_fp == 0
    for pair in loader.pairs():
        got_naive = {"nki." + f.rule for f in findings(pair.naive)}
        got_opt = {"nki." + f.rule for f in findings(pair.optimised)}
        missing = set(pair.expected_findings) - got_naive
        ok &= not missing and not got_opt
        print(f"  {pair.topic:22} naive: {sorted(got_naive)}  missing: {sorted(missing) or '-'}  optimised: {sorted(got_opt) or '-'}")

    print("\nFindings on the other corpus kernels (reviewed by hand, not counted)")
    for path in other_files():
        c = Counter(f.rule for f in findings(path))
        if c:
            print(f"  {path.name:28} {dict(sorted(c.items()))}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
