"""What the entry kernel passes to the helper functions of its own file.

A helper is walked where it is defined, before (or without) knowing its callers, so its
parameters are unknown there: `def inv_row_norm(tile): ... dtype=tile.dtype` hides a bf16
statistic. The engine records the arguments of every in-scope call to a top-level function of the
file; `hints` merges them per parameter, and `analyze` walks the file again with the parameters
bound to what every caller agrees on (a tensor's dtype, shape or buffer; a Python value).
Disagreeing callers leave the parameter (or that field of a tensor) unknown, as before.
"""

from __future__ import annotations

from dataclasses import fields, replace

import libcst as cst

from evidence.static.shapes import Tensor

_UNKNOWN = object()


def top_level_params(module: cst.Module) -> dict[str, tuple[str, ...]]:
    """Parameter names (positional first, then keyword-only) of the module's top-level functions."""
    found: dict[str, tuple[str, ...]] = {}
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef):
            p = stmt.params
            found[stmt.name.value] = tuple(x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params))
    return found


def call_arguments(call: cst.Call, params: tuple[str, ...], value) -> dict[str, object]:
    """{parameter: evaluated argument} of one call (unknown values and *args/**kwargs left out)."""
    args: dict[str, object] = {}
    position = 0
    for a in call.args:
        if a.star:
            return args  # the positions after a *args are unknown
        if a.keyword is not None:
            name = a.keyword.value
        elif position < len(params):
            name = params[position]
            position += 1
        else:
            continue
        v = value(a.value)
        if v is not None:
            args[name] = v
    return args


def hints(calls: dict[str, list[dict[str, object]]]) -> dict[str, dict[str, object]]:
    """Per helper and parameter, the value every recorded call agrees on."""
    out: dict[str, dict[str, object]] = {}
    for fn, sites in calls.items():
        names = set().union(*(s.keys() for s in sites)) if sites else set()
        agreed = {}
        for name in names:
            merged = _merge([s.get(name, _UNKNOWN) for s in sites])
            if merged is not None:
                agreed[name] = merged
        if agreed:
            out[fn] = agreed
    return out


def _merge(values: list[object]) -> object | None:
    if any(v is _UNKNOWN for v in values):
        return None
    first = values[0]
    if isinstance(first, Tensor) and all(isinstance(v, Tensor) for v in values):
        kept = {f.name: getattr(first, f.name) for f in fields(Tensor)
                if all(getattr(v, f.name) == getattr(first, f.name) for v in values)}
        if kept.get("dtype") is None and kept.get("shape") is None:
            return None
        return replace(first, **{f.name: kept.get(f.name) for f in fields(Tensor)
                                 if f.name in ("shape", "dtype", "buffer", "name")},
                       origin=first.origin if "origin" in kept else "view")
    if all(type(v) is type(first) and v == first for v in values):
        return first
    return None
