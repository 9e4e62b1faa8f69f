"""Rubric + evidence bundle -> per-criterion chat messages for a model drafter.

Per criterion the prompt holds only the evidence kinds the rubric lets it cite, most severe first,
source excerpts windowed around the evidence locations (with line numbers), and the criterion's
levels and evidence rules. Everything that comes from the submission is fenced with a marker whose
id is derived from the fenced text, after neutralising anything in the text that looks like a
marker or chat markup. A token budget is enforced by dropping the least severe evidence first, and
the prompt says what was left out. Template names and content hashes go into every draft record.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Callable

import jinja2

from evidence.static.injection_collector import INJECTION_KIND
from evidence.model import AnalyzerFailure, EvidenceBundle, EvidenceItem, Location
from evidence.submission import Submission
from grader.errors import GraderError
from grader.resources import describe
from grader.rubric import Criterion, EvidenceRule, Rubric

TEMPLATES = ("system.j2", "criterion.j2", "output_contract.j2")

TokenCounter = Callable[[list[dict[str, str]]], int]


# -- untrusted text ----------------------------------------------------------------------------
_LOOKALIKES = re.compile(r"<{3,}|>{3,}|`{3,}|<\|[^|<>\n]{0,24}\|>|\[/?INST\]|</?\s*system\s*>|(?i:end\s+untrusted)")
_SWAP = str.maketrans({"<": "\u2039", ">": "\u203a", "`": "\u02cb", "[": "\u27e6", "]": "\u27e7"})


def neutralize(text: str) -> str:
    """Defuse fence look-alikes and chat markup so untrusted text cannot close or forge a fence."""

    def swap(m: re.Match[str]) -> str:
        s = m.group(0)
        if s.lower().replace(" ", "").startswith("enduntrusted"):
            return s[0] + "\u200b" + s[1:]
        return s.translate(_SWAP)

    return _LOOKALIKES.sub(swap, text)


def fence(text: str, label: str) -> str:
    """Wrap untrusted text; the marker id depends on the text, so the text cannot predict it."""
    body = neutralize(text)
    tag = hashlib.sha256(body.encode()).hexdigest()[:10]
    return f"<<<UNTRUSTED {label} id={tag}>>>\n{body}\n<<<END UNTRUSTED id={tag}>>>"


# -- templates ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Templates:
    env: jinja2.Environment
    hashes: dict[str, str]


def load_templates(dirs: tuple[Path, ...] | None = None) -> Templates:
    """The prompt templates from `dirs` (first wins per template), by default the configured search path:
    GRADER_PROMPT_PATH, then the shipped templates. Hashes are of the template actually used."""
    if dirs is None:
        from grader.settings import Settings  # lazy: settings are read when asked for, never at import

        dirs = Settings().prompt_dirs()
    return _load_templates(tuple(dirs))


@cache
def _load_templates(dirs: tuple[Path, ...]) -> Templates:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(d) for d in dirs]), undefined=jinja2.StrictUndefined,
        autoescape=False, keep_trailing_newline=False, trim_blocks=False,
    )
    hashes = {}
    for name in TEMPLATES:
        try:
            source, _, _ = env.loader.get_source(env, name)  # type: ignore[union-attr]
        except jinja2.TemplateNotFound as exc:
            raise GraderError(f"prompt template {name!r} not found (searched {describe(dirs)})") from exc
        hashes[name] = "sha256:" + hashlib.sha256(source.encode()).hexdigest()
    return Templates(env, hashes)


# -- token counting ----------------------------------------------------------------------------
def rough_count(messages: list[dict[str, str]]) -> int:
    """Cheap fallback: ~4 characters per token plus a few tokens per message."""
    return sum(len(m.get("content") or "") // 4 + 4 for m in messages)


def litellm_counter(model: str | None) -> TokenCounter:
    """litellm's token counter for `model` (imported lazily), falling back to `rough_count`."""

    def count(messages: list[dict[str, str]]) -> int:
        try:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            import litellm

            return int(litellm.token_counter(model=model or "gpt-4o-mini", messages=messages))
        except Exception:  # unknown tokenizer, import trouble: a rough count still bounds the prompt
            return rough_count(messages)

    return count


# -- evidence selection and rendering ----------------------------------------------------------
def select_evidence(criterion: Criterion, bundle: EvidenceBundle) -> list[EvidenceItem | AnalyzerFailure]:
    """Items the criterion may cite, most severe first (bundle order within a severity)."""
    items = [i for i in bundle.items if criterion.cites(i.kind) and i.kind != INJECTION_KIND]
    items.sort(key=lambda i: -i.severity.rank)  # stable: keeps the bundle's deterministic order
    failures: list[EvidenceItem | AnalyzerFailure] = list(bundle.failures) if criterion.cites("analyzer_failure") else []
    return failures + items


def _fmt(value: float) -> str:
    return f"{value:.6g}"


def render_item(item: EvidenceItem | AnalyzerFailure) -> dict[str, Any]:
    if isinstance(item, AnalyzerFailure):
        return {"id": item.id, "kind": "analyzer_failure", "severity": "high",
                "location": str(item.location) if item.location else "",
                "title": f"Analyzer {item.analyzer} failed ({item.error_type})",
                "detail": neutralize(item.message), "metrics": "", "labels": ""}
    labels = {k: neutralize(v)[:160] for k, v in item.labels.items() if k != "excerpt"}
    return {
        "id": item.id, "kind": item.kind, "severity": item.severity.value,
        "location": str(item.location) if item.location else "",
        "title": neutralize(item.title), "detail": neutralize(item.detail)[:600],
        "metrics": ", ".join(f"{k}={_fmt(v)}" for k, v in item.metrics.items()),
        "labels": json.dumps(labels, ensure_ascii=False) if labels else "",
    }


def describe_rule(rule: EvidenceRule) -> str:
    return f"{rule.description} (kind {rule.when.kind}) -> {rule.effect}"


def numbered(lines: list[str], start: int, end: int) -> str:
    width = len(str(end))
    return "\n".join(f"{n:>{width}} | {lines[n - 1]}" for n in range(start, end + 1))


def excerpt_windows(locations: list[Location], files: dict[str, str], window: int, max_span: int) -> list[tuple[str, int, int]]:
    """Merged (file, first, last) line windows around locations; long spans keep their head only."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for loc in locations:
        text = files.get(loc.file)
        if text is None:
            continue
        total = len(text.splitlines())
        if total == 0:
            continue
        end = min(loc.end_line, loc.start_line + max_span - 1)
        spans.setdefault(loc.file, []).append((max(1, loc.start_line - window), min(total, end + window)))
    out = []
    for path in sorted(spans):
        merged: list[list[int]] = []
        for a, b in sorted(spans[path]):
            if merged and a <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        out.extend((path, a, b) for a, b in merged if a <= b)
    return out


# -- the packed prompt -------------------------------------------------------------------------
@dataclass(frozen=True)
class PackedPrompt:
    criterion_id: str
    messages: list[dict[str, str]]
    messages_hash: str
    evidence_ids: tuple[str, ...]  # ids shown to the model
    omitted_ids: tuple[str, ...]  # ids left out for the token budget
    tokens: int
    template_hashes: dict[str, str] = field(default_factory=dict)


def messages_hash(messages: list[dict[str, Any]]) -> str:
    canon = json.dumps(messages, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canon.encode()).hexdigest()


def _task_text(submission: Submission) -> str:
    m = submission.manifest
    inputs = ", ".join(f"{i.name}: {list(i.shape)} {i.dtype}" if i.is_tensor else f"{i.name} = {i.value}" for i in m.inputs)
    lines = [f"id: {m.task.id}", f"title: {m.task.title}", f"target: {m.task.target}",
             f"kernel: {m.kernel.file} entry {m.kernel.entry}" + (f" grid {list(m.kernel.grid)}" if m.kernel.grid else "")]
    if inputs:
        lines.append(f"inputs: {inputs}")
    if m.task.description:
        lines.append(f"description: {m.task.description}")
    if m.migration:
        lines.append(f"ported from CUDA: {m.migration.cuda_file}")
    return fence("\n".join(lines), "task")


def _omitted_text(dropped: list[EvidenceItem | AnalyzerFailure]) -> str:
    kinds = Counter(getattr(d, "kind", "analyzer_failure") for d in dropped)
    ids = [d.id for d in dropped]
    shown = ", ".join(ids[:20]) + (f" and {len(ids) - 20} more" if len(ids) > 20 else "")
    by_kind = ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items()))
    return f"{len(dropped)} lower-severity item(s) ({by_kind}): {shown}. Their excerpts are omitted too."


def pack_criterion(
    criterion: Criterion,
    rubric: Rubric,
    submission: Submission,
    bundle: EvidenceBundle,
    *,
    max_tokens: int = 6000,
    counter: TokenCounter = rough_count,
    window: int = 3,
    max_span: int = 40,
    max_rationale_words: int = 150,
    templates: Templates | None = None,
) -> PackedPrompt:
    """Messages for one criterion within `max_tokens`, dropping the least severe evidence first."""
    tpl = templates or load_templates()
    selected = select_evidence(criterion, bundle)
    injections = bundle.of_kind(INJECTION_KIND)
    levels = sorted(criterion.levels, key=lambda level: level.score)
    example = selected[0].id if selected else "sim.output:kernel.py:1"
    system = tpl.env.get_template("system.j2").render(
        example_id=example, scores=[level.score for level in levels], max_rationale_words=max_rationale_words,
    )
    warnings = [
        {"id": w.id, "location": str(w.location) if w.location else "", "channel": w.labels.get("channel", "?"),
         "excerpt": fence(w.labels.get("excerpt", w.title), f"{w.location} excerpt")}
        for w in injections
    ]
    task = _task_text(submission)
    rules = [describe_rule(r) for r in criterion.rules if r.cap is not None or r.floor is not None]

    def render(kept: int) -> list[dict[str, str]]:
        shown = selected[:kept]
        locations = [i.location for i in shown if i.location] + [w.location for w in injections if w.location]
        excerpts = [fence(numbered(submission.files[f].splitlines(), a, b), f"{f} lines {a}-{b}")
                    for f, a, b in excerpt_windows(locations, submission.files, window, max_span)]
        user = tpl.env.get_template("criterion.j2").render(
            rubric=rubric, criterion=criterion, levels=levels, rules=rules, task=task,
            evidence=[render_item(i) for i in shown],
            omitted=_omitted_text(selected[kept:]) if kept < len(selected) else "",
            warnings=warnings, excerpts=excerpts,
        )
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    # Largest prefix of the severity-ordered evidence that fits (binary search: counting is not free).
    messages = render(len(selected))
    tokens = counter(messages)
    kept = len(selected)
    if tokens > max_tokens:
        lo, hi = 0, len(selected) - 1
        best = None
        while lo <= hi:
            mid = (lo + hi) // 2
            trial = render(mid)
            n = counter(trial)
            if n <= max_tokens:
                best, lo = (mid, trial, n), mid + 1
            else:
                hi = mid - 1
        if best is None:  # nothing fits: send the smallest prompt and let the provider decide
            best = (0, render(0), counter(render(0)))
        kept, messages, tokens = best
    return PackedPrompt(
        criterion_id=criterion.id,
        messages=messages,
        messages_hash=messages_hash(messages),
        evidence_ids=tuple(i.id for i in selected[:kept]) + tuple(w.id for w in injections),
        omitted_ids=tuple(i.id for i in selected[kept:]),
        tokens=tokens,
        template_hashes=dict(tpl.hashes),
    )
