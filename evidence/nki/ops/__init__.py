"""The op table: one named primitive per NKI op, merged from the modules below.

Adding an op is one `Op(name, check, execute, cost)` row in the module of its family plus a
differential test row (tests/evidence/nki/test_ops_differential.py).
"""

from evidence.nki.ops import collective, create, dma, elementwise, gpsimd, matmul, memory, reduce, registers, select, sync

OPS = {}
for _module in (create, memory, dma, gpsimd, elementwise, select, reduce, matmul, collective, sync, registers):
    for _name, _op in _module.OPS.items():
        if _name in OPS:
            raise RuntimeError(f"op {_name!r} defined twice (in {_module.__name__})")
        OPS[_name] = _op

__all__ = ["OPS"]
