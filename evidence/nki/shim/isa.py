"""`neuronxcc.nki.isa` (nisa) as the simulator provides it."""

from __future__ import annotations

from enum import IntEnum

from evidence.nki import state as _state
from evidence.nki.ops import OPS as _OPS
from evidence.nki.shim._common import missing_attribute, op_function


class engine(IntEnum):
    unknown = 0
    tensor = 1
    scalar = 2
    gpsimd = 3
    vector = 5
    sync = 6


unknown_engine, tensor_engine, scalar_engine = engine.unknown, engine.tensor, engine.scalar
gpsimd_engine, vector_engine = engine.gpsimd, engine.vector


class reduce_cmd(IntEnum):
    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3
    load_reduce = 4  # nki 0.3+


class dge_mode(IntEnum):
    none = 0
    swdge = 1
    hwdge = 2
    unknown = 3


class oob_mode(IntEnum):
    error = 0
    skip = 1


class nc_version(IntEnum):
    gen2 = 2
    gen3 = 3


def get_nc_version() -> nc_version:
    return nc_version(_state.current().nc_version)


for _name in _OPS:
    if _name.startswith("nisa."):
        globals()[_name[5:]] = op_function(_name, _name[5:])

__getattr__ = missing_attribute(__name__, "nisa.")
