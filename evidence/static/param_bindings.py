"""What a function's parameters are bound to when the walk enters it.

The entry kernel's parameters are the task's inputs (HBM tensors, or the manifest's Python values),
matched by name or else by position; a parameter with a Python default the task does not pass is that
default. A helper's, and a `@nki.jit(mode='trace')` kernel's the file itself calls, are what every
call passes (`helper_args.hints`, from a previous walk); one the calls leave unknown is a tile only
when the body uses it as one (`helper_args.tile_params`), so a flag is never taken for a tile.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import libcst as cst

from evidence.static.helper_args import tile_params
from evidence.static.model import FunctionInfo, InputBinding
from evidence.static.shapes import Binding, Tensor


def bind_params(fn: FunctionInfo, params: list[cst.Param], inputs: Sequence[InputBinding], entry: str | None,
                hints: dict[str, dict[str, object]], value: Callable[[cst.CSTNode], object],
                api_name: Callable[[cst.BaseExpression], str | None],
                outermost: bool, key: str | None = None) -> tuple[dict[str, Binding], bool]:
    """(scope of `fn`'s parameters, whether it took the task's inputs). `outermost`: no function
    encloses `fn` and no earlier one took the inputs; `key`: the name its calls are recorded by
    (`Cls.meth` for a method of a class whose calls are followed), `fn.name` by default."""
    key = key or fn.name
    by_name = {i.name: i for i in inputs}
    param_names = {q.name.value for q in params}
    match_by_name = bool(by_name.keys() & param_names)
    if not outermost:
        use_inputs = False
    elif entry is not None:
        use_inputs = entry == fn.name
    else:
        use_inputs = fn.is_kernel or match_by_name
    # A kernel the file itself calls (`@nki.jit(mode='trace')` helpers) takes what its calls pass.
    called = fn.is_kernel and fn.name != entry and key in hints
    tiles = tile_params(fn.node, fn.params, api_name) if called else frozenset()
    scope: dict[str, Binding] = {}
    for i, p in enumerate(params):
        name = p.name.value
        spec = None
        if use_inputs:
            if match_by_name:
                spec = by_name.get(name)
                # inputs are given in argument order (the simulator passes them by position): a parameter
                # the manifest does not name takes the input at its position, unless a parameter of that
                # name claims it (`alpha` named alike beside `I_DRAM` given as "I")
                if spec is None and i < len(inputs) and inputs[i].name not in param_names:
                    spec = inputs[i]
            elif i < len(inputs):
                spec = inputs[i]
        if spec is not None and spec.value is not None:
            scope[name] = Binding(spec.value)
        elif spec is not None:
            scope[name] = Binding(Tensor(tuple(spec.shape), spec.dtype, "hbm", "input", name, 0, name in fn.mutable_params))
        elif called:
            hint = hints[key].get(name)
            if hint is None and name in tiles:  # the calls do not say, the body uses it as a tile
                hint = Tensor(None, None, None, "view", name, 0, name in fn.mutable_params)
            elif isinstance(hint, Tensor) and name in fn.mutable_params and not hint.mutable:
                # the kernel's own `nt.mutable_tensor` annotation, whatever the caller's parameter said
                hint = replace(hint, mutable=True)
            scope[name] = Binding(hint, names=frozenset({name}))
        elif fn.is_kernel and p.default is not None:
            # A parameter with a Python default (`use_mask=False`, `dtype=nl.bfloat16`) that the task
            # does not pass is that Python value at trace time, not an HBM tensor.
            default = value(p.default)
            scope[name] = Binding(None if isinstance(default, Tensor) else default, names=frozenset({name}))
        elif fn.is_kernel:
            scope[name] = Binding(Tensor(None, None, "hbm", "input", name, 0, name in fn.mutable_params))
        else:  # a helper: what every caller passes, when a previous walk saw the calls
            scope[name] = Binding(hints.get(key, {}).get(name), names=frozenset({name}))
    return scope, use_inputs
