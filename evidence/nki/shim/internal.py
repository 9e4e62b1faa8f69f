"""neuronx-cc modules below the public beta API that public kernels import for type hints and byte sizes:
`neuronxcc.nki.language.constants` (`sizeinbytes`) and `neuronxcc.nki.compiler.backends.neuron.{indexing,tensor}`
(`TileIndex`, the index-expression type of `nl.mgrid`). Any other name there becomes an op that reports
`unsupported_op` when called, so an import alone never fails a kernel."""

from __future__ import annotations

import types

from evidence.nki import dtypes
from evidence.nki.indexing import IndexExpr
from evidence.nki.shim._common import missing_attribute


def sizeinbytes(dtype) -> int:
    """Bytes per element of an NKI or numpy dtype (as `neuronxcc.nki.language.constants.sizeinbytes`)."""
    return dtypes.itemsize(dtypes.resolve(dtype))


def _module(name: str, doc: str, **names) -> types.ModuleType:
    m = types.ModuleType(name, doc)
    m.__dict__.update(names)
    m.__getattr__ = missing_attribute(name, name.rsplit(".", 1)[-1] + ".")
    return m


def beta_modules() -> dict[str, types.ModuleType]:
    root = "neuronxcc.nki.compiler.backends"
    return {
        "neuronxcc.nki.language.constants": _module("neuronxcc.nki.language.constants", "byte sizes",
                                                    sizeinbytes=sizeinbytes),
        root: _module(root, "compiler internals"),
        root + ".neuron": _module(root + ".neuron", "compiler internals"),
        root + ".neuron.indexing": _module(root + ".neuron.indexing", "index types", TileIndex=IndexExpr),
        root + ".neuron.tensor": _module(root + ".neuron.tensor", "tile types"),
    }
