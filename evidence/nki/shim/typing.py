"""`neuronxcc.nki.typing` (nt): tensor annotations and shape/dtype placeholders."""

from __future__ import annotations

from evidence.nki import dtypes


class TensorSpec:
    """`nt.tensor[[8192, 4096], nl.bfloat16]`: a shape/dtype placeholder for trace-only runs."""

    def __init__(self, shape, dtype=None, mutable: bool = False) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtypes.resolve(dtype) if dtype is not None else dtypes.float32
        self.mutable = mutable

    def __repr__(self) -> str:
        return f"nt.tensor[{list(self.shape)}, {dtypes.name(self.dtype)}]"


def _spec(key, mutable: bool) -> TensorSpec:
    if isinstance(key, tuple) and key and isinstance(key[0], (list, tuple)):
        return TensorSpec(key[0], key[1] if len(key) > 1 else None, mutable)
    shape = key if isinstance(key, tuple) else (key,)
    return TensorSpec(shape, None, mutable)


class tensor:
    def __class_getitem__(cls, key) -> TensorSpec:
        return _spec(key, False)


class mutable_tensor:
    """Annotation of a kernel parameter the kernel may store into (and must return)."""

    def __class_getitem__(cls, key) -> TensorSpec:
        return _spec(key, True)


scalar = float
