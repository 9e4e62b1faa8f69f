"""The arithmetic and comparison operators of tiles (REFERENCE §3.6: overloads map to the element-wise
ops), a mixin of `Tensor`. With an index expression, a tile holding a runtime offset becomes part of the
index (`x[i_p, idx[0, j] + i_f]`)."""

from __future__ import annotations

import numpy as np

from evidence.nki import dispatch
from evidence.nki.indexing import IndexExpr


class TensorOperators:
    __slots__ = ()

    def _binary(self, o, op: str, index_fn):
        if isinstance(o, IndexExpr):
            return IndexExpr(self.as_index())._bin(o, index_fn)
        return dispatch.call(op, (self, o), {})

    def __add__(self, o): return self._binary(o, "add", np.add)
    def __radd__(self, o): return dispatch.call("add", (o, self), {})
    def __sub__(self, o): return self._binary(o, "subtract", np.subtract)
    def __rsub__(self, o): return dispatch.call("subtract", (o, self), {})
    def __mul__(self, o): return self._binary(o, "multiply", np.multiply)
    def __rmul__(self, o): return dispatch.call("multiply", (o, self), {})
    def __truediv__(self, o): return dispatch.call("divide", (self, o), {})
    def __rtruediv__(self, o): return dispatch.call("divide", (o, self), {})
    def __pow__(self, o): return dispatch.call("power", (self, o), {})
    def __rpow__(self, o): return dispatch.call("power", (o, self), {})
    def __mod__(self, o): return dispatch.call("mod", (self, o), {})
    def __rmod__(self, o): return dispatch.call("mod", (o, self), {})
    def __and__(self, o): return dispatch.call("bitwise_and", (self, o), {})
    def __rand__(self, o): return dispatch.call("bitwise_and", (o, self), {})
    def __or__(self, o): return dispatch.call("bitwise_or", (self, o), {})
    def __ror__(self, o): return dispatch.call("bitwise_or", (o, self), {})
    def __xor__(self, o): return dispatch.call("bitwise_xor", (self, o), {})
    def __rxor__(self, o): return dispatch.call("bitwise_xor", (o, self), {})
    def __lshift__(self, o): return dispatch.call("left_shift", (self, o), {})
    def __rshift__(self, o): return dispatch.call("right_shift", (self, o), {})
    def __invert__(self): return dispatch.call("invert", (self,), {})
    def __neg__(self): return dispatch.call("negative", (self,), {})
    def __abs__(self): return dispatch.call("abs", (self,), {})
    def __lt__(self, o): return dispatch.call("less", (self, o), {})
    def __le__(self, o): return dispatch.call("less_equal", (self, o), {})
    def __gt__(self, o): return dispatch.call("greater", (self, o), {})
    def __ge__(self, o): return dispatch.call("greater_equal", (self, o), {})
    # against None it is Python's test, not an element-wise op (library kernels: `if ids != None:`)
    def __eq__(self, o): return False if o is None else dispatch.call("equal", (self, o), {})  # type: ignore[override]
    def __ne__(self, o): return True if o is None else dispatch.call("not_equal", (self, o), {})  # type: ignore[override]
    __hash__ = object.__hash__

    def __iadd__(self, o): return dispatch.call("iadd", (self, o), {})
    def __isub__(self, o): return dispatch.call("inplace", (self, o, "subtract"), {})
    def __imul__(self, o): return dispatch.call("inplace", (self, o, "multiply"), {})
    def __itruediv__(self, o): return dispatch.call("inplace", (self, o, "divide"), {})
