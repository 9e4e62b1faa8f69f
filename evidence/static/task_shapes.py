"""Which input dimensions a task lets take any size, read from its description.

Task descriptions state their shape contract in a fixed register: the inputs with named axes
(`for x [rows, cols] and gamma [cols] in bf16`), then per axis name a constraint (`rows is any
positive integer`, `rows a multiple of 128`, `K and M multiples of 128`, `cols <= 8192`). A rule
that asks whether a kernel must handle a ragged extent needs the first kind: an axis the task says
may be any size. Only explicit statements count; an axis the description does not constrain, or
a task without a description, is unknown and yields nothing.
"""

from __future__ import annotations

import re

_SHAPE = re.compile(r"\b((?:[A-Za-z_]\w*\s*,\s*)*[A-Za-z_]\w*)\s*\[([A-Za-z_][\w ,]*)\]")
_NAMES = r"[A-Za-z_]\w*(?:\s*(?:,|and)\s*[A-Za-z_]\w*)*"
_ANY = re.compile(rf"\b({_NAMES})\s+(?:is\s+|are\s+)?(?:of\s+)?any\s+(?:positive\s+integer|size|length|count)s?\b",
                  re.IGNORECASE)
_MULTIPLE = re.compile(rf"\b({_NAMES})\s+(?:is\s+|are\s+)?(?:a\s+)?multiples?\s+of\s+(\d+)", re.IGNORECASE)


def _names(group: str) -> list[str]:
    return [n for n in re.split(r"\s*(?:,|\band\b)\s*", group.strip()) if n]


def any_size_dims(description: str, inputs: list[tuple[str, tuple[int, ...]]]) -> tuple[tuple[str, int], ...]:
    """(input name, axis) pairs of `inputs` whose axis the description says may be any size and
    does not also restrict to a multiple."""
    names = {name for name, _ in inputs}
    axes: dict[str, list[tuple[str, int]]] = {}
    for m in _SHAPE.finditer(description or ""):
        for tensor in (t.strip() for t in m.group(1).split(",")):  # `x, y [rows, cols]`: both
            if tensor in names:
                for axis, label in enumerate(x.strip() for x in m.group(2).split(",")):
                    axes.setdefault(label, []).append((tensor, axis))
    free = {n for m in _ANY.finditer(description or "") for n in _names(m.group(1))}
    bound = {n for m in _MULTIPLE.finditer(description or "") for n in _names(m.group(1))}
    return tuple(sorted(dim for label in free - bound for dim in axes.get(label, ())))
