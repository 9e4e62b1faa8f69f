"""Calls the entry makes through objects of the submission's own classes, imports inside functions
and `from m import *`: the helper-module code they reach is judged like a helper function's.

Every kernel here is written for these tests: a tile pool class (a base class in the same module), a
step function taking the pool as an annotated parameter, an entry building the pool."""

from __future__ import annotations

from evidence.static.collectors import NkiStaticCollector
from evidence.submission import Manifest, Submission

_BETA = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"

POOL = '''import neuronxcc.nki.language as nl


class TileBase:
    def __init__(self, dtype):
        self.dtype = dtype

    def fresh(self, shape):
        return nl.ndarray(shape, dtype=nl.float32, buffer=nl.sbuf)  # FRESH


class Pool(TileBase):
    def take(self, rows, cols):
        return self.fresh((rows, cols))

    def acc(self, rows):
        return nl.zeros((rows, 4096), dtype=nl.float32, buffer=nl.psum)  # ACC

    def spare(self):
        return nl.ndarray((512, 64), dtype=nl.float32, buffer=nl.sbuf)  # SPARE

    @staticmethod
    def plan(n):
        return nl.ndarray((n, 8), dtype=nl.float32, buffer=nl.sbuf)  # PLAN
'''
STEPS = '''from .pool import Pool


def widen(x, pool: Pool):
    return pool.acc(128)
'''
ENTRY = _BETA + '''from .pool import Pool
from .steps import widen


@nki.jit
def entry(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    pool = Pool(nl.float32)
    big = pool.take(256, 64)
    p = Pool.plan(64)
    widen(x, pool)
    return out
'''
INPUTS = [{"name": "x", "shape": [256, 4096], "dtype": "float32"}]


def _line(src: str, marker: str) -> int:
    return next(i for i, text in enumerate(src.splitlines(), 1) if marker in text)


def _findings(files: dict[str, str], entry_file: str = "kern/entry.py") -> set[tuple[str, str, int]]:
    manifest = Manifest.model_validate({
        "task": {"id": "objects", "title": "helper objects"},
        "kernel": {"file": entry_file, "entry": "entry", "modules": sorted(set(files) - {entry_file})},
        "inputs": INPUTS,
    })
    items = NkiStaticCollector().collect(Submission(manifest=manifest, files=files))
    return {(i.kind, i.location.file, i.location.start_line) for i in items
            if i.severity is not None and i.severity.value != "info" and i.kind != "nki.rule_failure"}


def _modules(entry: str = ENTRY, steps: str = STEPS) -> dict[str, str]:
    return {"kern/entry.py": entry, "kern/pool.py": POOL, "kern/steps.py": steps}


def test_methods_reached_through_an_object_are_judged_at_the_modules_lines():
    found = _findings(_modules())
    # `pool.take(256, 64)` -> `self.fresh((rows, cols))`, found in the base class: 256 partitions
    assert ("nki.partition-over-128", "kern/pool.py", _line(POOL, "# FRESH")) in found
    # `widen(x, pool)` calls `pool.acc(128)` through its annotated parameter: [128, 4096] fp32 in PSUM
    assert ("nki.psum-over-bank", "kern/pool.py", _line(POOL, "# ACC")) in found
    # a method nothing calls, and a static one called with a legal size, give nothing
    assert not {f for f in found if f[2] in (_line(POOL, "# SPARE"), _line(POOL, "# PLAN"))}


def test_a_methods_parameters_are_what_its_calls_agree_on():
    # a second call with 64 rows: the callers disagree, the shape is unknown, nothing is claimed
    entry = ENTRY.replace("    p = Pool.plan(64)\n", "    p = Pool.plan(64)\n    small = pool.take(64, 64)\n")
    found = _findings(_modules(entry))
    assert ("nki.partition-over-128", "kern/pool.py", _line(POOL, "# FRESH")) not in found
    assert ("nki.psum-over-bank", "kern/pool.py", _line(POOL, "# ACC")) in found


def test_an_object_of_unknown_class_is_not_followed():
    # the pool comes from a factory the analysis does not trace: `pool.take` could be any method
    entry = ENTRY.replace("pool = Pool(nl.float32)", "pool = make_pool()")
    found = _findings(_modules(entry))
    assert ("nki.partition-over-128", "kern/pool.py", _line(POOL, "# FRESH")) not in found


def test_imports_inside_the_kernel_are_followed():
    entry = _BETA + '''

@nki.jit
def entry(x):
    from .pool import Pool
    from .steps import widen
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    pool = Pool(nl.float32)
    widen(x, pool)
    return out
'''
    found = _findings(_modules(entry))
    assert ("nki.psum-over-bank", "kern/pool.py", _line(POOL, "# ACC")) in found


def test_a_star_import_brings_the_modules_public_names():
    entry = ENTRY.replace("from .steps import widen", "from .steps import *")
    found = _findings(_modules(entry))
    assert ("nki.psum-over-bank", "kern/pool.py", _line(POOL, "# ACC")) in found
    # `__all__` decides what a star import brings: `widen` left out is not called, so not followed
    steps = STEPS.replace("from .pool import Pool\n", "from .pool import Pool\n\n__all__ = ['Pool']\n")
    found = _findings(_modules(entry, steps))
    assert ("nki.psum-over-bank", "kern/pool.py", _line(POOL, "# ACC")) not in found


CONFIG = '''from dataclasses import dataclass

import neuronxcc.nki.language as nl


@dataclass
class Layout:
    rows: int
    cols: int = 64

    def scratch(self):
        return nl.ndarray((self.rows, self.cols), dtype=nl.float32, buffer=nl.sbuf)  # SCRATCH
'''


def test_a_config_dataclass_method_reads_the_fields_its_caller_built():
    entry = _BETA + '''from .layout import Layout


@nki.jit
def entry(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    wide = Layout(rows=256)
    buf = wide.scratch()
    return out
'''
    found = _findings({"kern/entry.py": entry, "kern/layout.py": CONFIG})
    assert ("nki.partition-over-128", "kern/layout.py", _line(CONFIG, "# SCRATCH")) in found
    legal = _findings({"kern/entry.py": entry.replace("rows=256", "rows=128"), "kern/layout.py": CONFIG})
    assert ("nki.partition-over-128", "kern/layout.py", _line(CONFIG, "# SCRATCH")) not in legal
