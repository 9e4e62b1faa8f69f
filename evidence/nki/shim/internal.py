"""Modules public kernels import that the simulator does not model as a whole: beta neuronx-cc modules below
the public API, imported for type hints, enums and byte sizes (`neuronxcc.nki.language.constants.sizeinbytes`,
`neuronxcc.nki.isa.constants.oob_mode`,
`neuronxcc.nki.compiler.backends.neuron.{indexing,tensor}`, where `TileIndex` is the index-expression type of
`nl.mgrid`; `neuronxcc.nki._private.private_api`'s multi-core `sendrecv` and `core_barrier`;
`neuronxcc.starfish.support.dtype.bfloat16`, the numpy scalar type), and nki 0.3+'s `nki.collectives` (not implemented, as in the official simulator: REFERENCE §8.2).
Any other name there becomes an op that reports `unsupported_op` with the kernel's file:line when called, so an
import alone never fails a kernel."""

from __future__ import annotations

import types

from evidence.nki import dtypes
from evidence.nki.indexing import IndexExpr
from evidence.nki.shim._common import missing_attribute


def sizeinbytes(dtype) -> int:
    """Bytes per element of an NKI or numpy dtype (as `neuronxcc.nki.language.constants.sizeinbytes`)."""
    return dtypes.itemsize(dtypes.resolve(dtype))


def _module(name: str, doc: str, prefix: str | None = None, **names) -> types.ModuleType:
    m = types.ModuleType(name, doc)
    m.__dict__.update(names)
    m.__getattr__ = missing_attribute(name, prefix if prefix is not None else name.rsplit(".", 1)[-1] + ".")
    return m


def beta_modules() -> dict[str, types.ModuleType]:
    from evidence.nki.shim import isa  # the beta ISA shim (it imports the op table, which sits above this module)

    root = "neuronxcc.nki.compiler.backends"
    return {
        # the ISA's enums by their submodule (`from neuronxcc.nki.isa.constants import oob_mode`: the neuron-team
        # blockwise matmul, paged attention): the same classes as `nisa.*`, so either spelling passes enum checks
        "neuronxcc.nki.isa.constants": _module("neuronxcc.nki.isa.constants", "ISA enums", engine=isa.engine,
                                               reduce_cmd=isa.reduce_cmd, dge_mode=isa.dge_mode,
                                               oob_mode=isa.oob_mode, nc_version=isa.nc_version),
        "neuronxcc.nki.language.constants": _module("neuronxcc.nki.language.constants", "byte sizes",
                                                    sizeinbytes=sizeinbytes),
        root: _module(root, "compiler internals"),
        root + ".neuron": _module(root + ".neuron", "compiler internals"),
        root + ".neuron.indexing": _module(root + ".neuron.indexing", "index types", TileIndex=IndexExpr),
        root + ".neuron.tensor": _module(root + ".neuron.tensor", "tile types"),
        # neuron-team kernels import point-to-point and barrier primitives from here (`sendrecv`, `core_barrier`):
        # multi-core communication, not simulated; importing them must not fail the kernel
        "neuronxcc.nki._private": _module("neuronxcc.nki._private", "compiler-private API"),
        "neuronxcc.nki._private.private_api": _module("neuronxcc.nki._private.private_api", "compiler-private API",
                                                      prefix="private_api."),
        # the numpy bfloat16 type neuronx-cc ships; nki-samples' kernels and tests import it from here
        "neuronxcc.starfish": _module("neuronxcc.starfish", "compiler internals"),
        "neuronxcc.starfish.support": _module("neuronxcc.starfish.support", "compiler internals"),
        "neuronxcc.starfish.support.dtype": _module("neuronxcc.starfish.support.dtype", "numpy dtypes",
                                                    bfloat16=dtypes.bfloat16.type),
    }


COLLECTIVES = _module("nki.collectives", "collectives (not simulated)", prefix="nki.collectives.")


def standalone_modules() -> dict[str, types.ModuleType]:
    return {"nki.collectives": COLLECTIVES}
