"""Helpers to build shim modules: op functions and a helpful module __getattr__."""

from __future__ import annotations

from evidence.nki import dispatch
from evidence.nki import state as _state


def op_function(op: str, public: str, removed: dict[str, str] | None = None):
    """A shim function for op-table entry `op`, exposed to kernels as `public`; `removed` arguments
    (name -> what replaced it) are errors, as the dialect that dropped them reports."""

    def shim(*args, **kwargs):
        if removed:
            reject_removed(public, kwargs, removed)
        return dispatch.call(op, args, kwargs)

    shim.__name__ = shim.__qualname__ = public
    shim._nki_op = public
    return shim


def reject_removed(public: str, kwargs: dict, removed: dict[str, str]) -> None:
    for name in kwargs:
        if name in removed:
            raise _state.current().error(
                "err_removed_argument", f"'{public}' has no argument '{name}' in nki 0.3+: {removed[name]}")


def missing_attribute(module: str, prefix: str):
    """Module __getattr__: unknown public names become ops that fail with a clear 'not in the table'."""

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        return op_function(prefix + name, name)

    return __getattr__
