"""False-positive rate of every static rule over the clean corpus kernels, and pair behaviour.

Run: .venv/bin/python benchmarks/static_false_positives.py
Clean kernels are every corpus kernel that declares no EXPECTED_FINDINGS: the optimised half of
every naive/optimised pair, the faithful CUDA port and the general corpus kernels. A finding on one
of them is a false positive. Naive halves and the few general kernels that keep a finding on
purpose must show exactly their EXPECTED_FINDINGS; a finding beyond the list also counts.
"""

from __future__ import annotations

import sys
from collections import Counter

from _corpus import clean_files, corpus_entry, declared_findings, loader, other_files

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

    print("\nGeneral kernels that keep findings on purpose (declared vs found)")
    for path in other_files():
        declared = set(declared_findings(path))
        got = Counter("nki." + f.rule for f in findings(path))
        extra, missing = set(got) - declared, declared - set(got)
        ok &= not extra and not missing
        print(f"  {path.name:28} found {dict(sorted(got.items()))}  extra: {sorted(extra) or '-'}  missing: {sorted(missing) or '-'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
