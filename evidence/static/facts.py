"""Turn one `Analysis` into evidence items: facts (kernels, loops, allocations, API calls,
dialect) and rule findings. Ids are `make_id(kind, file, line[, extra])`: stable across runs."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import libcst as cst

from evidence.model import EvidenceItem, Location, Severity, make_id
from evidence.static.dialect import DialectInfo
from evidence.static.engine import Analysis
from evidence.static.framework import Rule
from evidence.static.rulekit import shape_text
from evidence.static.shapes import ALLOC_CALLS, Tensor

FACT_KINDS = {
    "nki.dialect": "which NKI dialect the kernel source targets and the version features it uses (labels: dialect = "
                   "beta|standalone, source, version = beta|0.2+|0.3+, features: comma-separated, e.g. "
                   "dst_first,access_patterns,load_store,deprecated_iterators or masks,arange,block_dims)",
    "nki.kernel": "an @nki.jit kernel function (labels: name, decorator, dialect; metrics: n_loops, max_loop_depth, "
                  "n_api_calls, n_nisa_calls, n_nl_calls)",
    "nki.wrapper": "the entry function when neither it nor any code it reaches in the submission makes an NKI call "
                   "(a wrapper around a kernel the submission does not contain): in place of `nki.kernel`, so the "
                   "criteria judged from the kernel's code have nothing to rest on (labels: name, decorator, dialect)",
    "nki.loop": "a loop (labels: iterator = affine_range|sequential_range|static_range|range|other, function; "
                "metrics: trip_count when constant, depth)",
    "nki.alloc": "a tensor allocation (labels: buffer, dtype, shape; metrics: partitions, free_bytes_per_partition)",
    "nki.api_call": "calls of one NKI API in one function, aggregated (labels: api, function, lines; metrics: count)",
    "nki.rule_failure": "a static rule crashed on this file; its findings are missing (labels: rule, error_type)",
    "nki.out_of_scope": "functions of the kernel file that the entry kernel never reaches (other kernels, host code): "
                        "not analysed, so nothing is cited from them (labels: entry, functions, kernels; metrics: count)",
}
_NOT_COUNTED = frozenset({"nl.affine_range", "nl.sequential_range", "nl.static_range", "nl.par_dim", "nl.arange", "nl.mgrid"})


def fact_items(a: Analysis, analyzer: str, helpers: Sequence[Analysis] = ()) -> list[EvidenceItem]:
    """The kernel file's facts: its dialect (with the version features the reached helper-module
    code uses too), its functions' facts, the functions out of scope."""
    f = a.file
    dialect = submission_dialect(a, helpers)
    features, version = dialect_features(a, helpers, dialect)
    items = [EvidenceItem(
        id=make_id("nki.dialect", f), kind="nki.dialect", analyzer=analyzer,
        title=f"NKI dialect: {dialect.dialect}" + (f" ({version})" if dialect.dialect == "standalone" else ""),
        location=Location(file=f, start_line=1, end_line=1),
        labels={"dialect": dialect.dialect, "source": dialect.source, "version": version,
                "features": ",".join(features)},
    )]
    items += function_items(a, analyzer, wrapper=not reaches_nki(a, helpers))
    if a.skipped:
        items.append(_out_of_scope_item(a, analyzer))
    return items


def reaches_nki(a: Analysis, helpers: Sequence[Analysis] = ()) -> bool:
    """Whether the entry or any function it reaches (in its file or in helper modules) makes an NKI call."""
    return any(c.name not in _NOT_COUNTED for x in (a, *helpers) for fn in x.functions for c in fn.calls)


def function_items(a: Analysis, analyzer: str, wrapper: bool = False) -> list[EvidenceItem]:
    """Kernel, loop, allocation and API-call facts of the analysed functions, at `a.file`'s lines. `wrapper`:
    no NKI call is reached (`reaches_nki`), and the entry is an `nki.wrapper`, not an `nki.kernel`."""
    f = a.file
    items: list[EvidenceItem] = []
    for fn in a.functions:
        calls = [c for c in fn.calls if c.name not in _NOT_COUNTED]
        if fn.is_kernel and wrapper:
            items.append(EvidenceItem(
                id=make_id("nki.wrapper", f, fn.start, fn.name), kind="nki.wrapper", analyzer=analyzer,
                severity=Severity.medium,
                title=f"entry {fn.name} makes no NKI call, nor does any code it reaches in the submission: its work "
                      "happens in code the submission does not contain",
                location=Location(file=f, start_line=fn.start, end_line=fn.end),
                labels={"name": fn.name, "decorator": fn.decorator, "dialect": a.dialect.dialect},
            ))
        elif fn.is_kernel:
            items.append(EvidenceItem(
                id=make_id("nki.kernel", f, fn.start, fn.name), kind="nki.kernel", analyzer=analyzer,
                title=f"kernel {fn.name} ({len(fn.loops)} loops, {len(calls)} NKI calls)",
                location=Location(file=f, start_line=fn.start, end_line=fn.end),
                labels={"name": fn.name, "decorator": fn.decorator, "dialect": a.dialect.dialect},
                metrics={"n_loops": len(fn.loops), "max_loop_depth": max((lp.depth for lp in fn.loops), default=0),
                         "n_api_calls": len(calls), "n_nisa_calls": sum(c.name.startswith("nisa.") for c in calls),
                         "n_nl_calls": sum(c.name.startswith("nl.") for c in calls)},
            ))
        for lp in fn.loops:
            metrics = {"depth": float(lp.depth)}
            if lp.trip is not None:
                metrics["trip_count"] = float(lp.trip)
            items.append(EvidenceItem(
                id=make_id("nki.loop", f, lp.start), kind="nki.loop", analyzer=analyzer,
                title=f"{lp.kind} loop over {', '.join(lp.vars) or '?'}"
                      + (f" ({lp.trip} iterations)" if lp.trip is not None else ""),
                location=Location(file=f, start_line=lp.start, end_line=lp.end),
                labels={"iterator": lp.kind, "function": fn.name, "vars": ",".join(lp.vars)},
                metrics=metrics,
            ))
        by_api: dict[str, list[int]] = defaultdict(list)
        for c in fn.calls:
            if c.name in ALLOC_CALLS and isinstance(c.value, Tensor):
                items.append(_alloc_item(f, c, analyzer, fn.name))
            if c.name not in _NOT_COUNTED:
                by_api[c.name].append(c.start)
        for api, lines in sorted(by_api.items()):
            items.append(EvidenceItem(
                id=make_id("nki.api_call", f, fn.name, api), kind="nki.api_call", analyzer=analyzer,
                title=f"{api} x{len(lines)} in {fn.name}",
                location=Location(file=f, start_line=min(lines), end_line=max(lines)),
                labels={"api": api, "function": fn.name, "lines": ",".join(str(x) for x in sorted(set(lines)))},
                metrics={"count": float(len(lines))},
            ))
    return items


# Standalone APIs that exist from nki 0.3 on (0.2 removed nl.load/nl.store; 0.3 brought them back).
_SINCE_03 = {"nl.load": "load_store", "nl.store": "load_store", "nisa.dma_compute": "dma_compute",
             "nl.matmul": "nl_conveniences", "nl.copy": "nl_conveniences"}
_FEATURE_CALLS = {"nl.shared_identity_matrix": "shared_identity_matrix", "nki.simulate": "nki_simulate",
                  "nl.dynamic_range": "dynamic_loops", "nl.arange": "arange", "nl.mgrid": "arange",
                  "nl.par_dim": "block_dims", "nl.loop_reduce": "loop_reduce"}


def submission_dialect(a: Analysis, helpers: Sequence[Analysis] = ()) -> DialectInfo:
    """The kernel file's dialect; for a plain wrapper entry that imports no NKI itself (its dialect a
    default), the dialect of the first helper module it reaches that declares one, as the loader runs it."""
    if a.dialect.source != "default":
        return a.dialect
    return next((h.dialect for h in helpers if h.dialect.source != "default"), a.dialect)


def dialect_features(a: Analysis, helpers: Sequence[Analysis] = (),
                     dialect: DialectInfo | None = None) -> tuple[list[str], str]:
    """The version features the analysed functions (of `a` and of the helper modules' analyses) use,
    and the dialect version they imply (`dialect`: the submission's, else the kernel file's)."""
    found: set[str] = set()
    standalone = (dialect or a.dialect).dialect == "standalone"
    for fn in [fn for x in (a, *helpers) for fn in x.functions]:
        for c in fn.calls:
            if c.name in _FEATURE_CALLS:
                found.add(_FEATURE_CALLS[c.name])
            elif c.name.startswith("nisa.register") or c.name in ("nisa.fori_loop", "nisa.while_loop"):
                found.add("registers")
            elif c.name.startswith("nisa."):
                found.add("dst_first" if standalone else "isa_returns")
            if standalone and c.name in _SINCE_03:
                found.add(_SINCE_03[c.name])
        if fn.uses_mask:
            found.add("masks")
        for lp in fn.loops:
            if lp.kind in ("affine_range", "sequential_range", "static_range"):
                found.add("deprecated_iterators" if standalone else lp.kind)
        if standalone and _uses_access_patterns(fn.node):
            found.add("access_patterns")
    if not standalone:
        return sorted(found), "beta"
    return sorted(found), "0.3+" if found & {"load_store", "dma_compute", "nl_conveniences"} else "0.2+"


def _uses_access_patterns(node: cst.CSTNode) -> bool:
    class _Ap(cst.CSTVisitor):
        found = False

        def visit_Call(self, call: cst.Call) -> None:
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "ap":
                self.found = True

    v = _Ap()
    node.visit(v)
    return v.found


def _out_of_scope_item(a: Analysis, analyzer: str) -> EvidenceItem:
    names = [f"{s.name} ({a.file}:{s.start}-{s.end})" for s in a.skipped]
    kernels = [s.name for s in a.skipped if s.is_kernel]
    what = f"{len(kernels)} other kernel(s) and {len(a.skipped) - len(kernels)} other function(s)"
    return EvidenceItem(
        id=make_id("nki.out_of_scope", a.file), kind="nki.out_of_scope", analyzer=analyzer,
        title=f"{what} not reached from the entry {a.entry} are not analysed: " + ", ".join(names)[:300],
        detail="The review covers the entry kernel and the functions it calls; findings in the others would "
               "describe code that never runs for this task.",
        location=Location(file=a.file, start_line=a.skipped[0].start, end_line=a.skipped[0].end),
        labels={"entry": a.entry or "", "functions": ",".join(s.name for s in a.skipped), "kernels": ",".join(kernels)},
        metrics={"count": float(len(a.skipped)), "kernels": float(len(kernels))},
    )


def _alloc_item(f: str, c, analyzer: str, fn_name: str) -> EvidenceItem:
    t: Tensor = c.value
    metrics = {}
    if t.partitions is not None:
        metrics["partitions"] = float(t.partitions)
    if t.free_bytes is not None:
        metrics["free_bytes_per_partition"] = float(t.free_bytes)
    return EvidenceItem(
        id=make_id("nki.alloc", f, c.start, c.node.func.attr.value if hasattr(c.node.func, "attr") else ""),
        kind="nki.alloc", analyzer=analyzer,
        title=f"{c.name} {shape_text(t)} {t.dtype or '?'} in {t.buffer or '?'}",
        location=Location(file=f, start_line=c.start, end_line=c.end),
        labels={"buffer": t.buffer or "unknown", "dtype": t.dtype or "unknown", "shape": shape_text(t), "function": fn_name},
        metrics=metrics,
    )


def finding_items(a: Analysis, rules: dict[str, type[Rule]], analyzer: str) -> list[EvidenceItem]:
    items = []
    for fd in a.findings:
        rule = rules[fd.rule]
        kind = "nki." + fd.rule
        items.append(EvidenceItem(
            id=make_id(kind, a.file, fd.start), kind=kind, analyzer=analyzer, severity=fd.severity,
            title=fd.message, detail=fd.detail, location=Location(file=a.file, start_line=fd.start, end_line=fd.end),
            metrics=fd.metrics, labels={**fd.labels, "rule_version": rule.version, "dialect": a.dialect.dialect},
        ))
    for fail in a.failures:
        items.append(EvidenceItem(
            id=make_id("nki.rule_failure", a.file, fail.rule), kind="nki.rule_failure", analyzer=analyzer,
            severity=Severity.medium, title=f"rule {fail.rule} crashed: {fail.error_type}: {fail.message}",
            detail="The rule's findings for this file are missing; the other rules ran normally.",
            location=Location(file=a.file, start_line=fail.line or 1, end_line=fail.line or 1),
            labels={"rule": fail.rule, "error_type": fail.error_type},
        ))
    return items


def rule_kinds(rules: tuple[type[Rule], ...]) -> dict[str, str]:
    return {"nki." + r.id: f"[{r.severity.value}] " + (r.doc().split(". ")[0]) for r in rules}
