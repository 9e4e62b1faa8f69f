"""Helpers to build shim modules: op functions and a helpful module __getattr__."""

from __future__ import annotations

from evidence.nki import dispatch


def op_function(op: str, public: str):
    """A shim function for op-table entry `op`, exposed to kernels as `public`."""

    def shim(*args, **kwargs):
        return dispatch.call(op, args, kwargs)

    shim.__name__ = shim.__qualname__ = public
    shim._nki_op = public
    return shim


def missing_attribute(module: str, prefix: str):
    """Module __getattr__: unknown public names become ops that fail with a clear 'not in the table'."""

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        return op_function(prefix + name, name)

    return __getattr__
