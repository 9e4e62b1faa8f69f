"""What a rule or error-model change does to the evidence of every kernel we have.

Run: .venv/bin/python benchmarks/evidence_delta.py -o after.json [--before before.json] [--no-sim]

For every corpus kernel (first case), every example and every calibration and audit item it records
the static findings (`nki.<rule>` kind, line, title) and, from an in-process simulation (our own
trusted kernels), the error model's reduction length K with its parts (matmul contraction, longest
free-axis reduction or scan, longest element-wise accumulation chain). With `--before` (the same
script's output from another checkout, e.g. `PYTHONPATH=/path/to/main`) it prints every target
whose findings or K changed: any new finding on a kernel that did not change is a candidate false
finding to review by hand.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from _corpus import ROOT, all_files, corpus_entry, loader

from evidence.static.engine import analyze


def _k(report, outputs) -> dict:
    flops = float(report.matmul_flops)
    elements = sum(int(np.prod(np.shape(o) or (1,))) for o in outputs)
    return {"matmul": round(flops / (2.0 * elements), 3) if flops and elements else 0.0,
            "reduce": float(report.reduce_length), "chain": float(getattr(report, "accumulation_depth", 0))}


def _sim(kernel, inputs, grid, target="trn2") -> dict:
    from evidence.nki import EvidenceError, simulate

    try:
        sim = simulate(kernel, *inputs, grid=grid, target=target, keep_trace=False)
    except EvidenceError as exc:
        return {"error": exc.code}
    return _k(sim.report, sim.outputs)


def corpus_target(path: Path, simulate: bool) -> dict:
    src, inputs, entry, opts = corpus_entry(path)
    out = {"static": _static(analyze(src, file=path.name, inputs=inputs, entry=entry, options=opts))}
    cases = loader.load_cases(path)
    if simulate and cases:
        from evidence.nki import load_kernel

        case = cases[0]
        kernel = getattr(load_kernel(path), case.kernel)
        out["k"] = _sim(kernel, case.make_inputs() + case.make_outputs() + list(case.args), case.grid)
    return out


def submission_target(folder: Path, simulate: bool) -> dict:
    from evidence.static.collectors import submission_analyses
    from grader.submission import load_submission

    sub = load_submission(folder)
    analysis, helpers = submission_analyses(sub)
    # helper modules' findings and practices, named by file (the kernel file's keep their old form)
    out = {"static": sorted(_static(analysis) + [f"{h.file}: {x}" for h in helpers for x in _static(h)])}
    if simulate:
        from evidence.nki import load_kernel
        from evidence.numerics.inputs import generate_inputs

        m = sub.manifest
        sys.path.insert(0, str(folder))  # helper modules of the submission
        try:
            kernel = getattr(load_kernel(folder / m.kernel.file, target=m.task.target), m.kernel.entry)
            out["k"] = _sim(kernel, generate_inputs(m.inputs, 1), tuple(m.kernel.grid) or None, m.task.target)
        finally:
            sys.path.remove(str(folder))
    return out


def _static(analysis) -> list[str]:
    """Findings and the positive practice items (facts about loops and calls are left out)."""
    from evidence.static.practices import practice_items

    items = [f"nki.{f.rule}:{f.start}: {f.message}" for f in analysis.findings]
    items += [f"{i.kind}: {i.title}" for i in practice_items(analysis, "delta")]
    return sorted(items)


def targets() -> dict[str, tuple]:
    found: dict[str, tuple] = {}
    for path in all_files():
        found[f"corpus/{path.relative_to(ROOT / 'tests' / 'corpus').as_posix()}"] = (corpus_target, path)
    for parent in (ROOT / "examples", ROOT / "evals" / "calibration" / "nki-review-v1", ROOT / "evals" / "audit"):
        for folder in sorted(p for p in parent.iterdir() if (p / "submission.toml").is_file()):
            found[f"{parent.name}/{folder.name}"] = (submission_target, folder)
    return found


def k_of(parts: dict | None) -> float | None:
    if not parts or "error" in parts:
        return None
    return max(parts["matmul"], parts["reduce"], parts["chain"], 1.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", type=Path, required=True)
    ap.add_argument("--before", type=Path)
    ap.add_argument("--no-sim", action="store_true")
    args = ap.parse_args()
    results = {}
    for name, (fn, path) in targets().items():
        try:
            results[name] = fn(path, not args.no_sim)
        except Exception as exc:  # one broken target is reported, the rest still run
            results[name] = {"failed": f"{type(exc).__name__}: {exc}"[:300]}
    args.output.write_text(json.dumps(results, indent=1, sort_keys=True))
    print(f"{len(results)} targets -> {args.output}")
    if not args.before:
        return 0
    before = json.loads(args.before.read_text())
    changed = 0
    for name in sorted(set(results) | set(before)):
        a, b = before.get(name, {}), results.get(name, {})
        lines = []
        gone = set(a.get("static", ())) - set(b.get("static", ()))
        new = set(b.get("static", ())) - set(a.get("static", ()))
        lines += [f"  - {x}" for x in sorted(gone)] + [f"  + {x}" for x in sorted(new)]
        ka, kb = k_of(a.get("k")), k_of(b.get("k"))
        if "k" in a and "k" in b and ka != kb:
            lines.append(f"  K {ka} -> {kb} ({b['k']})")
        if a.get("failed") != b.get("failed"):
            lines.append(f"  failed: {a.get('failed')} -> {b.get('failed')}")
        if lines:
            changed += 1
            print(name)
            print("\n".join(lines))
    print(f"{changed} of {len(results)} targets changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
