"""What the entry kernel passes to the helper functions of its own file.

A helper is walked where it is defined, before (or without) knowing its callers, so its
parameters are unknown there: `def inv_row_norm(tile): ... dtype=tile.dtype` hides a bf16
statistic. The engine records the arguments of every in-scope call to a top-level function of the
file; `hints` merges them per parameter, and `analyze` walks the file again with the parameters
bound to what every caller agrees on (a tensor's dtype, shape or buffer; a Python value).
Disagreeing callers leave the parameter (or that field of a tensor) unknown, as before. A call
that omits a parameter passes its default. A `@nki.jit(mode='trace')` function called from the
entry is such a helper too: its parameters are what the calls pass, not HBM inputs, and one the
calls leave unknown is a tile only when the body uses it as one (`tile_params`).
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


def top_level_defaults(module: cst.Module) -> dict[str, dict[str, cst.BaseExpression]]:
    """{function: {parameter: default expression}} of the module's top-level functions."""
    found: dict[str, dict[str, cst.BaseExpression]] = {}
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef):
            p = stmt.params
            found[stmt.name.value] = {x.name.value: x.default for x in (*p.posonly_params, *p.params, *p.kwonly_params)
                                      if x.default is not None}
    return found


def call_arguments(call: cst.Call, params: tuple[str, ...], value,
                   defaults: dict[str, cst.BaseExpression] | None = None) -> dict[str, object]:
    """{parameter: evaluated argument} of one call, omitted parameters at their defaults (unknown
    values, and everything after a *args/**kwargs, left out)."""
    args: dict[str, object] = {}
    passed: set[str] = set()
    position = 0
    for a in call.args:
        if a.star:
            return args  # the positions after a *args, and what a **kwargs names, are unknown
        if a.keyword is not None:
            name = a.keyword.value
        elif position < len(params):
            name = params[position]
            position += 1
        else:
            continue
        passed.add(name)
        v = value(a.value)
        if v is not None:
            args[name] = v
    for name, default in (defaults or {}).items():
        if name not in passed and (v := value(default)) is not None:
            args[name] = v
    return args


def hints(calls: dict[str, list[dict[str, object]]]) -> dict[str, dict[str, object]]:
    """Per called helper (every one, so a key says the file calls it) and parameter, the value
    every recorded call agrees on."""
    out: dict[str, dict[str, object]] = {}
    for fn, sites in calls.items():
        names = set().union(*(s.keys() for s in sites)) if sites else set()
        agreed = {}
        for name in names:
            merged = _merge([s.get(name, _UNKNOWN) for s in sites])
            if merged is not None:
                agreed[name] = merged
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


# Tensor attributes and methods: a parameter read through one is a tensor.
_TENSOR_ATTRS = frozenset({"shape", "dtype", "ndim", "itemsize", "reshape", "view", "astype", "broadcast_to",
                           "expand_dims", "assert_shape", "ap"})
# NKI calls whose first argument is a size, index, shape or flag, not a tile operand.
_NOT_OPERAND_CALLS = frozenset({
    "nl.ds", "nl.arange", "nl.par_dim", "nl.affine_range", "nl.sequential_range", "nl.static_range",
    "nl.dynamic_range", "nl.program_id", "nl.num_programs", "nl.device_print", "nl.ndarray", "nl.zeros",
    "nl.ones", "nl.full", "nl.shared_constant", "nl.rand", "nl.random_seed",
})
# Keywords that name a tile operand (not `dtype=`, `axis=`, `scale=`, `bias=`, which may be scalars).
_OPERAND_KEYWORDS = frozenset({
    "x", "y", "data", "src", "dst", "value", "stationary", "moving", "on_true_tile", "on_false_tile", "in_",
    "in0", "in1", "data0", "data1", "pred", "reduce_res", "mask_tile",
})


def tile_params(fn: cst.FunctionDef, params: tuple[str, ...], api_name) -> frozenset[str]:
    """The parameters the body uses as tiles: subscripted (`t[i]`, `t[...] = x`), read through a
    tensor attribute (`t.shape`), or passed bare as the first operand of an NKI call
    (`nl.exp(t)`; keyword operands too, but not `dtype=`, sizes or scalars)."""
    names = frozenset(params)
    found: set[str] = set()

    class _Uses(cst.CSTVisitor):
        def visit_Subscript(self, node: cst.Subscript) -> None:
            if isinstance(node.value, cst.Name) and node.value.value in names:
                found.add(node.value.value)

        def visit_Attribute(self, node: cst.Attribute) -> None:
            if isinstance(node.value, cst.Name) and node.value.value in names and node.attr.value in _TENSOR_ATTRS:
                found.add(node.value.value)

        def visit_Call(self, node: cst.Call) -> None:
            api = api_name(node.func) or ""
            if not api.startswith(("nl.", "nisa.")) or api in _NOT_OPERAND_CALLS:
                return
            positional = [a for a in node.args if a.keyword is None and not a.star]
            operands = [a.value for a in node.args if a.keyword is not None and a.keyword.value in _OPERAND_KEYWORDS]
            for v in ([positional[0].value] if positional else []) + operands:
                if isinstance(v, cst.Name) and v.value in names:
                    found.add(v.value)

    fn.body.visit(_Uses())
    return frozenset(found)
