"""Checks of the gold-labelled sets under evals/: gold files, coverage, and simulation as designed.

    python evals/check.py [SET ...] [--no-sim] [-v]

A set is a folder of item folders; an item is a submission folder (docs/submission-format.md)
plus `gold.toml`. The checks:

- the submission loads with `grader.submission.load_submission`;
- `gold.toml` scores every criterion of the rubric (1-5 or "not_applicable", with a rationale),
  not_applicable exactly where the criterion cannot apply (no CUDA source / no claims), and has a
  `[meta]` with the fields of `META_FIELDS`;
- the set covers every criterion at low (1-2), middle (3) and high (4-5) gold levels;
- the kernel runs in the simulator as designed (`[meta.expect]`): outputs match the reference or
  not, the simulator findings are exactly the listed ones, the simulation stops with a given
  error code, and metric checks such as `"partition_utilisation <= 0.26"` or
  `"rel_l2 >= 4 * base"` (relative to the item named by `meta.base`) hold. Further runs on other
  input shapes (`[[meta.expect.runs]]`, e.g. a ragged size the kernel does not mask) show defects
  that the task's own shapes hide.

Items are our own trusted kernels, so they are simulated in-process (the grader runs submissions in
a sandboxed child process); inputs, tolerances and the comparison are the collector's.
"""

from __future__ import annotations

import argparse
import operator
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SETS = (ROOT / "evals" / "calibration" / "nki-review-v1", ROOT / "evals" / "audit")
META_FIELDS = ("item", "operation", "category", "planted", "author", "gold_method")  # and `base` ("" for none)
CATEGORIES = ("base", "variant", "migration", "claims")
APPLIES = {"has_cuda": lambda s: s.manifest.migration is not None, "has_claims": lambda s: s.manifest.claims is not None,
           "has_reference": lambda s: s.manifest.reference is not None, "always": lambda s: True}
OPS = {"<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt, "==": operator.eq}
LINE_REF = re.compile(r"\b([\w.-]+\.(?:py|cu|toml|md)):(\d+)(?:-(\d+))?")
CHECK = re.compile(r"^\s*([a-z_][a-z0-9_]*)\s*(<=|>=|==|<|>)\s*([0-9.eE+-]+)\s*(\*\s*base)?\s*$")


def band(score: int | str) -> str:
    if score == "not_applicable":
        return "na"
    return "low" if score <= 2 else "mid" if score == 3 else "high"


def item_dirs(set_dir: Path) -> list[Path]:
    return sorted(p for p in Path(set_dir).iterdir() if (p / "submission.toml").is_file())


def load_gold(item: Path) -> dict:
    with open(item / "gold.toml", "rb") as f:
        return tomllib.load(f)


def gold_problems(item: Path, gold: dict, submission, rubric) -> list[str]:
    """What is wrong with one item's gold.toml, as `gold.toml: <field>: <problem>` lines."""
    out = []
    crits = gold.get("criteria", {})
    for extra in sorted(set(crits) - {c.id for c in rubric.criteria}):
        out.append(f"criteria.{extra}: not a criterion of {rubric.id}")
    for c in rubric.criteria:
        entry = crits.get(c.id)
        if entry is None:
            out.append(f"criteria.{c.id}: missing")
            continue
        score, rationale = entry.get("score"), entry.get("rationale", "")
        applies = APPLIES[c.applies_when](submission)
        if score == "not_applicable":
            if applies:
                out.append(f"criteria.{c.id}: not_applicable, but the criterion applies ({c.applies_when})")
        elif not isinstance(score, int) or isinstance(score, bool) or not rubric.scale_min <= score <= rubric.scale_max:
            out.append(f"criteria.{c.id}.score: {score!r} is not an integer {rubric.scale_min}-{rubric.scale_max}")
        elif not applies:
            out.append(f"criteria.{c.id}: scored {score}, but the criterion cannot apply ({c.applies_when})")
        if len(str(rationale).strip()) < 20:
            out.append(f"criteria.{c.id}.rationale: missing or too short")
        out += [f"criteria.{c.id}.rationale: {p}" for p in line_ref_problems(str(rationale), submission)]
    meta = gold.get("meta", {})
    for key in META_FIELDS:
        if not str(meta.get(key, "")).strip():
            out.append(f"meta.{key}: missing")
    if "base" not in meta:
        out.append('meta.base: missing (the item this one varies, or "")')
    elif meta["base"] and not (item.parent / meta["base"] / "submission.toml").is_file():
        out.append(f"meta.base: {meta['base']!r} is not an item of this set")
    if meta.get("item") and meta["item"] != item.name:
        out.append(f"meta.item: {meta['item']!r} differs from the folder name {item.name!r}")
    if meta.get("category") not in CATEGORIES:
        out.append(f"meta.category: {meta.get('category')!r} is not one of {', '.join(CATEGORIES)}")
    return [f"{item.name}/gold.toml: {p}" for p in out]


def line_ref_problems(text: str, submission) -> list[str]:
    """A rationale's `file:line[-line]` references must name submission files and non-blank lines in them."""
    out = []
    for name, first, last in LINE_REF.findall(text):
        source = submission.files.get(name)
        if source is None:
            out.append(f"{name}:{first} names a file the submission does not have")
            continue
        lines = source.splitlines()
        lo, hi = int(first), int(last or first)
        if not 1 <= lo <= hi <= len(lines) or not lines[lo - 1].strip() or not lines[hi - 1].strip():
            out.append(f"{name}:{first}{'-' + last if last else ''} is not a range of non-blank lines")
    return out


def coverage(golds: dict[str, dict], rubric) -> dict[str, dict[str, int]]:
    table = {c.id: {"low": 0, "mid": 0, "high": 0, "na": 0} for c in rubric.criteria}
    for gold in golds.values():
        for cid, entry in gold.get("criteria", {}).items():
            if cid in table and entry.get("score") is not None:
                table[cid][band(entry["score"])] += 1
    return table


# --- simulation ---------------------------------------------------------------------------------

@dataclass
class Run:
    error: str | None = None
    matches: bool = False
    findings: set[str] = field(default_factory=set)
    metrics: dict[str, float] = field(default_factory=dict)


def _widen(a) -> np.ndarray:
    """Low-precision arrays as float32 (exactly), as the simulator's runner hands them to the comparison."""
    a = np.asarray(a)
    return a.astype(np.float32) if a.dtype.kind == "V" or a.dtype.name in ("bfloat16", "float16") or "float8" in a.dtype.name else a


def simulate_item(item: Path, submission, shapes: dict[str, list[int]] | None = None) -> Run:
    """Simulate an item's kernel on the collector's seeded inputs (optionally with other shapes) and compare."""
    from evidence.nki import EvidenceError, load_kernel, simulate
    from evidence.nki.collector import SimulationCollector
    from evidence.nki.sim_evidence import reduction_length
    from evidence.numerics.compare import coarser_dtype, compare
    from evidence.numerics.inputs import generate_inputs

    m = submission.manifest
    specs = [s.model_copy(update={"shape": tuple(shapes[s.name])}) if shapes and s.name in shapes else s
             for s in m.inputs]
    inputs = generate_inputs(specs, SimulationCollector.seed)
    kernel = getattr(load_kernel(item / m.kernel.file), m.kernel.entry)
    try:
        sim = simulate(kernel, *[x.copy() if isinstance(x, np.ndarray) else x for x in inputs],
                       grid=tuple(m.kernel.grid) or None, target=m.task.target)
    except EvidenceError as exc:
        return Run(error=exc.code, findings={f.code for f in (exc.report.findings if exc.report else ())})
    ref = getattr(load_kernel(item / m.reference.file), m.reference.entry)(*inputs)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    report = sim.report.model_dump()
    k = reduction_length(sim.report, [np.shape(o) for o in sim.outputs])
    comps = [compare(_widen(o), _widen(r), m.task.rtol, m.task.atol,
                     dtype_name=coarser_dtype(np.asarray(o).dtype.name, np.asarray(r).dtype.name),
                     written=sim.written[i] if i < len(sim.written) else None, reduction_length=k)
             for i, (o, r) in enumerate(zip(sim.outputs, refs))]
    compute = [ev for ev in sim.trace if ev.engine != "dma"]
    metrics = {
        "rel_l2": max(c.rel_l2 for c in comps), "max_abs_err": max(c.max_abs_err for c in comps),
        "mismatch_fraction": max(c.mismatch_fraction for c in comps),
        "unwritten": float(sum(c.unwritten_count for c in comps)), "nan": float(sum(c.nan_count for c in comps)),
        "instructions": report["instructions"], "dma_count": report["dma_count"],
        "dma_bytes_mean": report["dma_bytes_mean"], "hbm_read_bytes": report["hbm_read_bytes"],
        "small_dma_fraction": report["dma_small_count"] / max(report["dma_count"], 1),
        "redundant_read_ratio": report["redundant_hbm_read_bytes"] / max(report["hbm_read_bytes"], 1),
        "partition_utilisation": report["partition_utilisation"], "matmul_flops": report["matmul_flops"],
        "mean_free_elements": float(np.mean([ev.elements / max(ev.partitions, 1) for ev in compute])) if compute else 0.0,
        "psum_peak_banks": report["psum_peak_banks"],
    }
    for engine, n in report["instr_by_engine"].items():
        metrics[f"{engine}_instructions"] = n
    for engine, c in report["cycles_by_engine"].items():
        metrics[f"{engine}_cycles"] = c
    matches = len(comps) == len(refs) and all(c.matches for c in comps)
    return Run(None, matches, {f.code for f in sim.report.findings if f.severity != "info"}, metrics)


def expectation_problems(expect: dict, run: Run, base: Run | None) -> list[str]:
    """Differences between a run and what the item's `[meta.expect]` (or one of its runs) says."""
    out = []
    if "error" in expect:
        if run.error != expect["error"]:
            out.append(f"expected the simulation to stop with {expect['error']}, got {run.error or 'a complete run'}")
        return out
    if run.error:
        return [f"the simulation stopped with {run.error}"]
    if "matches" in expect and run.matches != expect["matches"]:
        out.append(f"expected matches = {expect['matches']}, got {run.matches} (rel L2 {run.metrics['rel_l2']:.3g})")
    want = set(expect.get("findings", []))
    if run.findings != want:
        out.append(f"expected simulator findings {sorted(want)}, got {sorted(run.findings)}")
    for text in expect.get("checks", []):
        parsed = CHECK.match(text)
        if not parsed:
            out.append(f"cannot read check {text!r} (form: 'metric op number [* base]')")
            continue
        name, op, number, rel = parsed.groups()
        if name not in run.metrics:
            out.append(f"check {text!r}: unknown metric {name!r} (known: {', '.join(sorted(run.metrics))})")
            continue
        bound = float(number)
        if rel:
            if base is None or base.error or name not in base.metrics:
                out.append(f"check {text!r}: no base run to compare with")
                continue
            bound *= base.metrics[name]
        if not OPS[op](run.metrics[name], bound):
            out.append(f"check {text!r} fails: {name} = {run.metrics[name]:.6g} vs {bound:.6g}")
    return out


@dataclass
class LoadedSet:
    path: Path
    submissions: dict = field(default_factory=dict)
    golds: dict[str, dict] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    runs: dict[str, Run] = field(default_factory=dict)  # simulation results, filled on demand


def load_set(set_dir: Path, only: str | None = None) -> LoadedSet:
    """Load every item (or one) of a set, checking the submissions and their gold files."""
    from grader.errors import GraderError
    from grader.rubric import load_rubric
    from grader.submission import load_submission

    rubric = load_rubric()
    loaded = LoadedSet(Path(set_dir))
    for item in item_dirs(set_dir):
        if only is not None and item.name != only:
            continue
        try:
            loaded.submissions[item.name] = load_submission(item)
        except GraderError as exc:
            loaded.problems.append(f"{item.name}: does not load: {exc}")
            continue
        if not (item / "gold.toml").is_file():
            loaded.problems.append(f"{item.name}: no gold.toml")
            continue
        try:
            loaded.golds[item.name] = gold = load_gold(item)
        except tomllib.TOMLDecodeError as exc:
            loaded.problems.append(f"{item.name}/gold.toml: invalid TOML: {exc}")
            continue
        loaded.problems += gold_problems(item, gold, loaded.submissions[item.name], rubric)
    return loaded


def run_of(loaded: LoadedSet, name: str) -> Run:
    """The simulation of one item on its task's inputs (cached: variants compare with their base)."""
    if name not in loaded.runs:
        from grader.submission import load_submission

        sub = loaded.submissions.get(name) or load_submission(loaded.path / name)
        loaded.runs[name] = simulate_item(loaded.path / name, sub)
    return loaded.runs[name]


def simulation_problems(loaded: LoadedSet, name: str) -> list[str]:
    """Whether an item's kernel behaves in the simulator as its `[meta.expect]` says."""
    meta = loaded.golds[name].get("meta", {})
    expect = meta.get("expect")
    if expect is None:
        return [f"{name}/gold.toml: meta.expect: missing"]
    base_name = meta.get("base") or None
    base = run_of(loaded, base_name) if base_name and (loaded.path / base_name / "submission.toml").is_file() else None
    found = expectation_problems(expect, run_of(loaded, name), base)
    for extra in expect.get("runs", []):
        alt = simulate_item(loaded.path / name, loaded.submissions[name], extra.get("shapes"))
        found += [f"run with {extra.get('shapes')}: {p}" for p in expectation_problems(extra, alt, None)]
    return [f"{name}: {p}" for p in found]


def check_sets(sets: list[Path], simulate: bool = True, verbose: bool = False) -> tuple[list[str], dict]:
    """All problems of the given sets (or single items) and each set's coverage table."""
    from grader.rubric import load_rubric

    rubric = load_rubric()
    problems: list[str] = []
    tables: dict[str, dict] = {}
    for set_dir in sets:
        only = None
        if (set_dir / "submission.toml").is_file():  # one item: checked within its set (for its base)
            set_dir, only = set_dir.parent, set_dir.name
        loaded = load_set(set_dir, only)
        problems += loaded.problems
        tables[set_dir.name] = coverage(loaded.golds, rubric)
        if not simulate:
            continue
        for name in sorted(loaded.golds):
            found = simulation_problems(loaded, name)
            problems += found
            if verbose:
                metrics = loaded.runs[name].metrics
                print(f"{name}: {'ok' if not found else 'PROBLEMS'} "
                      + " ".join(f"{k}={v:.4g}" for k, v in sorted(metrics.items())), file=sys.stderr)
    return problems, tables


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="*", type=Path, default=list(SETS), help="set folders or single item folders")
    parser.add_argument("--no-sim", action="store_true", help="skip the simulation checks")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each item's metrics")
    args = parser.parse_args(argv)
    problems, tables = check_sets(args.sets, simulate=not args.no_sim, verbose=args.verbose)
    for set_name, table in tables.items():
        print(f"{set_name}: criterion coverage (items per gold band)")
        for cid, counts in table.items():
            print(f"  {cid:24s} " + "  ".join(f"{k}={v}" for k, v in counts.items()))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
