"""Inert stand-ins for ML frameworks that submissions import only for their own test harness.

Kernel and reference files often `import torch` (or `torch_xla`, `jax`, `scipy`) for a `__main__`
block or a comparison helper the grader never calls. Those modules are never really imported: a
meta-path finder serves every module under these roots as an inert stand-in whose attributes and
call results are more stand-ins, so imports, annotations (`x: torch.Tensor`), decorators
(`@torch.no_grad()`), `with torch.no_grad():` and `if torch.cuda.is_available():` (false) work,
while using one as data (arithmetic, numpy conversion, indexing, iteration) raises `StandInUsed` naming the module.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types

STAND_IN_MODULES = ("torch", "torch_xla", "jax", "scipy")  # shared with the static import policy


def stand_in_root(module: str) -> str | None:
    root = module.split(".", 1)[0]
    return root if root in STAND_IN_MODULES else None


class StandInUsed(RuntimeError):
    """Code used a framework stand-in as data: the grader does not run that framework."""


class StandIn:
    """Any attribute or call of a framework the grader does not import."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def __getattr__(self, attr: str) -> StandIn:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return StandIn(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], StandIn):
            return args[0]  # used as a decorator: leave the function as it is
        return StandIn(f"{self._name}(...)")

    def __enter__(self) -> StandIn:
        return self

    def __exit__(self, *exc) -> bool:
        return False

    def __mro_entries__(self, bases) -> tuple[type, ...]:
        return (object,)  # `class Net(torch.nn.Module)` defines a plain class

    def __repr__(self) -> str:
        return f"<inert stand-in {self._name}>"

    def __bool__(self) -> bool:
        return False  # `if torch.cuda.is_available():` takes the branch without the framework

    def _used(self, *_args, **_kwargs):
        root = self._name.split(".", 1)[0]
        raise StandInUsed(f"{self._name} is an inert stand-in: the grader does not import {root}; "
                          "kernels and references must compute with NKI and numpy")

    __array__ = __iter__ = __len__ = __float__ = __int__ = __index__ = _used
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _used
    __matmul__ = __rmatmul__ = __pow__ = __neg__ = __getitem__ = __lt__ = __gt__ = __le__ = __ge__ = _used


class _StandInModule(types.ModuleType):
    def __getattr__(self, attr: str) -> StandIn:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return StandIn(f"{self.__name__}.{attr}")


class StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves stand-in modules for the framework roots and remembers which roots were asked for."""

    def __init__(self) -> None:
        self.served: set[str] = set()

    def find_spec(self, fullname, path=None, target=None):
        root = stand_in_root(fullname)
        if root is None:
            return None
        self.served.add(root)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec) -> types.ModuleType:
        module = _StandInModule(spec.name, f"inert stand-in for {spec.name} (never imported by the grader)")
        module.__path__ = []
        return module

    def exec_module(self, module) -> None:
        return None


def install() -> StandInFinder:
    """Put the finder first on sys.meta_path and forget any real framework module already imported."""
    for name in [m for m in sys.modules if stand_in_root(m)]:
        del sys.modules[name]
    finder = StandInFinder()
    sys.meta_path.insert(0, finder)
    return finder
