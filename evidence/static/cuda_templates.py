"""Template kernels read with the types their launches instantiate: `RoIAlignFwd<float><<<...>>>` makes the
kernel's `T` a float wherever every launch agrees."""

from __future__ import annotations

import re

from evidence.static.cuda_model import CudaFacts
from evidence.static.cuda_types import CTYPES


def launch_instances(facts: CudaFacts) -> dict[str, dict[str, str]]:
    """{kernel: {template parameter: C type}} where every launch of the kernel names its template
    arguments and they agree on a C scalar type (`RoIAlignFwd<float><<<...>>>`)."""
    out: dict[str, dict[str, str]] = {}
    for name, params in facts.template_params.items():
        launches = [e for e in facts.launches if e.what == name.rsplit("::", 1)[-1]]
        if not params or not launches or any("template_args" not in e.labels for e in launches):
            continue
        seen: list[set[str]] = [set() for _ in params]
        for e in launches:
            args = _split_args(e.labels["template_args"][1:-1])
            for i in range(len(params)):
                seen[i].add(args[i].strip() if i < len(args) else "")
        subst = {p: next(iter(v)) for p, v in zip(params, seen)
                 if len(v) == 1 and (next(iter(v)) in CTYPES or re.fullmatch(r"\d+", next(iter(v))))}
        if subst:
            out[name] = subst
    return out


def _split_args(text: str) -> list[str]:
    """Template arguments split at the commas outside nested <>/()."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "<(" and 1 or 0
        depth -= ch in ">)" and 1 or 0
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur]
