"""What the author wrote about the benchmark: admissions in NOTES.md and in the claims file's free text.

Reviewers read the write-up next to the numbers: "we had no Trainium access", "latencies are from
the cost model", "the baseline ran in fp32" change what a claim means. The text is untrusted: it is
only searched for these admissions, never followed; an item names the line (the report quotes it
fenced) and keeps the sentence as its `excerpt`, which prompts show only inside a fence.

Codes: `no_hardware` (no device was used), `model_figures` (figures come from a simulator, a cost
model or an estimate), `baseline_precision` (the baseline ran in a named dtype; label `dtype`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DEVICE = r"(?:trn\d?|trainium\d?|inf2|inferentia\d?|neuron ?cores?|neuron devices?|hardware|a device|devices?|instances?)"
_NO_HARDWARE = re.compile(
    r"\b(?:no|without|lack(?:ed|ing)?|did ?n[o']t have|do ?n[o']t have|had no|have no)\b[^.\n]{0,40}?\b"
    + _DEVICE + r"\b"
    r"|\bnot (?:been )?(?:run|measured|tested|benchmarked|timed)\b[^.\n]{0,20}\bon\b[^.\n]{0,15}\b" + _DEVICE + r"\b",
    re.IGNORECASE)
_MODEL = re.compile(
    r"\b(?:numbers?|figures?|latenc(?:y|ies)|timings?|times?|results?|speed-?ups?|throughput|bandwidth)\b[^.\n]{0,60}?"
    r"\b(?:from|by|using|with|via|come from|are)\b[^.\n]{0,40}?\b(?:simulat\w*|cost model|perf(?:ormance)? model|"
    r"analytic\w* model|roofline|estimat\w*|projected|extrapolat\w*)"
    r"|\b(?:simulat\w*|estimat\w*|modell?ed|projected|extrapolated)\s+(?:latenc(?:y|ies)|timings?|speed-?ups?|numbers?|figures?)\b",
    re.IGNORECASE)
_DTYPE_WORDS = {"fp32": "float32", "float32": "float32", "f32": "float32", "fp16": "float16", "float16": "float16",
                "half": "float16", "bf16": "bfloat16", "bfloat16": "bfloat16", "fp8": "float8_e4m3",
                "float8": "float8_e4m3", "tf32": "tfloat32"}
_BASELINE_DTYPE = re.compile(r"\bbaselines?\b[^.\n]{0,60}?\b(" + "|".join(_DTYPE_WORDS) + r")\b", re.IGNORECASE)


@dataclass(frozen=True)
class Admission:
    code: str
    line: int
    excerpt: str
    dtype: str = ""


def _sentences(text: str):
    """(line number, sentence) pairs: sentences may span the lines of a paragraph (not blank lines or
    table rows); each is numbered by the line it starts on."""
    para: list[tuple[int, str]] = []

    def flush():
        if not para:
            return
        joined, starts, pos = "", [], 0
        for n, line in para:
            starts.append((pos, n))
            joined += line.strip() + " "
            pos = len(joined)
        for m in re.finditer(r"[^.!?]+[.!?]?", joined):
            sentence = m.group().strip()
            if sentence:
                line = max(n for p, n in starts if p <= m.start() + (len(m.group()) - len(m.group().lstrip())))
                yield line, sentence
        para.clear()

    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith(("|", "#")):
            yield from flush()
            if line.lstrip().startswith(("|", "#")) and line.strip():
                yield n, line.strip()
            continue
        para.append((n, line))
    yield from flush()


def admissions(text: str) -> list[Admission]:
    out: list[Admission] = []
    seen: set[tuple[str, int]] = set()
    for n, sentence in _sentences(text):
        found = []
        if _NO_HARDWARE.search(sentence):
            found.append(("no_hardware", ""))
        if _MODEL.search(sentence):
            found.append(("model_figures", ""))
        m = _BASELINE_DTYPE.search(sentence)
        if m:
            found.append(("baseline_precision", _DTYPE_WORDS[m.group(1).lower()]))
        for code, dtype in found:
            if (code, n) not in seen:
                seen.add((code, n))
                out.append(Admission(code, n, sentence[:300], dtype))
    return out


def claims_free_text(text: str) -> str:
    """The claims file's prose: comments and the string values people write sentences in, by line."""
    lines = []
    for line in text.splitlines():
        comment = line.split("#", 1)[1] if "#" in line else ""
        strings = " ".join(re.findall(r'=\s*"([^"]*)"', line))
        lines.append(" ".join(p for p in (strings, comment) if p.strip()))
    return "\n".join(lines)
