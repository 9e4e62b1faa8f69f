"""Static analyzer throughput: source lines per second over the hand-written kernel corpus.

Run: .venv/bin/python benchmarks/bench_static.py [--repeat N]
Measures, in the same run and over the same sources: a bare libcst parse (baseline), parse +
position metadata (the floor of any libcst analyzer here), and the full analysis (facts + every
rule in one traversal). Prints lines/s, ratios against the baseline and each rule's share of the
analysis time (from the engine's per-rule timers). Target: >= 5,000 lines/s for the full set.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import libcst as cst
from _corpus import all_files, corpus_entry
from libcst.metadata import MetadataWrapper, PositionProvider

from evidence.static.engine import analyze
from evidence.static.framework import load_rules

TARGET = 5000.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    load_rules()
    corpus = [corpus_entry(p) + (p.name,) for p in all_files()]
    lines = sum(src.count("\n") + 1 for src, *_ in corpus)

    def bench(fn) -> float:
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
        return best

    t_parse = bench(lambda: [cst.parse_module(src) for src, *_ in corpus])
    t_pos = bench(lambda: [MetadataWrapper(cst.parse_module(src), unsafe_skip_copy=True).resolve(PositionProvider)
                           for src, *_ in corpus])
    rule_time: Counter = Counter()

    def full() -> None:
        rule_time.clear()
        for src, inputs, entry, opts, name in corpus:
            a = analyze(src, file=name, inputs=inputs, entry=entry, options=opts)
            rule_time.update(a.timings)

    t_full = bench(full)
    rate = lines / t_full
    print(f"corpus: {len(corpus)} kernel files, {lines} source lines, {len(load_rules())} rules, best of {args.repeat}")
    print(f"{'stage':36} {'seconds':>9} {'lines/s':>10} {'vs parse':>9}")
    for label, t in (("libcst parse (baseline)", t_parse), ("parse + positions", t_pos),
                     ("full analysis (facts + all rules)", t_full)):
        print(f"{label:36} {t:9.4f} {lines / t:10.0f} {t / t_parse:8.2f}x")
    verdict = "OK" if rate >= TARGET else "BELOW TARGET"
    print(f"throughput {rate:.0f} lines/s, target {TARGET:.0f}: {verdict}")
    total_rules = sum(rule_time.values())
    print(f"\nrule hooks: {total_rules:.4f} s of {t_full:.4f} s ({total_rules / t_full:.1%}); share per rule:")
    for rid, t in rule_time.most_common():
        print(f"  {rid:34} {t * 1e3:8.2f} ms  {t / t_full:6.1%} of analysis")


if __name__ == "__main__":
    main()
