"""Methods reached through objects of the submission's classes resolve as Python resolves them: a subclass's
override wins over the base method it replaces (also when a base-class method calls `self.tile(...)` on an
object of the subclass), an inherited method is the base's, and a diamond follows the C3 order.

Every kernel here is written for these tests: a tiling stage class with a `tile` step that allocates the
working tile; whichever `tile` really runs is the one whose 256-partition tile must be reported."""

from __future__ import annotations

from evidence.static.collectors import NkiStaticCollector
from evidence.submission import Manifest, Submission

STAGES = '''import neuronxcc.nki.language as nl


class Stage:
    def __init__(self, cols):
        self.cols = cols

    def run(self, x, out):
        t = self.tile()
        nl.store(out, value=t)

    def tile(self):
        return nl.ndarray((128, self.cols), dtype=nl.float32, buffer=nl.sbuf)  # BASE


class TallStage(Stage):
    def tile(self):
        return nl.ndarray((256, self.cols), dtype=nl.float32, buffer=nl.sbuf)  # OVERRIDE


class PlainStage(Stage):
    pass


class Left(Stage):
    pass


class Right(Stage):
    def tile(self):
        return nl.ndarray((512, self.cols), dtype=nl.float32, buffer=nl.sbuf)  # RIGHT


class Both(Left, Right):
    pass
'''
ENTRY = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

from .stages import {cls}


@nki.jit
def entry(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    stage = {cls}(64)
    {call}
    return out
'''
RUN = "stage.run(x, out)"
DIRECT = "t = stage.tile()"


def _line(marker: str) -> int:
    return next(i for i, text in enumerate(STAGES.splitlines(), 1) if marker in text)


def _partition_findings(cls: str, call: str = RUN) -> set[int]:
    files = {"kern/entry.py": ENTRY.format(cls=cls, call=call), "kern/stages.py": STAGES}
    manifest = Manifest.model_validate({
        "task": {"id": "stages", "title": "tiling stages"},
        "kernel": {"file": "kern/entry.py", "entry": "entry", "modules": ["kern/stages.py"]},
        "inputs": [{"name": "x", "shape": [128, 64], "dtype": "float32"}],
    })
    items = NkiStaticCollector().collect(Submission(manifest=manifest, files=files))
    return {i.location.start_line for i in items
            if i.kind == "nki.partition-over-128" and i.location.file == "kern/stages.py"}


def test_an_override_called_from_the_base_class_is_the_one_judged():
    # TallStage inherits run(); run's self.tile() runs TallStage.tile, never Stage.tile
    assert _partition_findings("TallStage") == {_line("# OVERRIDE")}


def test_an_override_called_directly_is_the_one_judged():
    assert _partition_findings("TallStage", DIRECT) == {_line("# OVERRIDE")}


def test_an_inherited_method_is_the_base_one():
    assert _partition_findings("PlainStage") == set()
    # the base's tile is the one that runs: a subclass that does not override it changes nothing
    tall_base = STAGES.replace("(128, self.cols), dtype=nl.float32, buffer=nl.sbuf)  # BASE",
                               "(384, self.cols), dtype=nl.float32, buffer=nl.sbuf)  # BASE")
    files = {"kern/entry.py": ENTRY.format(cls="PlainStage", call=RUN), "kern/stages.py": tall_base}
    manifest = Manifest.model_validate({
        "task": {"id": "stages", "title": "tiling stages"},
        "kernel": {"file": "kern/entry.py", "entry": "entry", "modules": ["kern/stages.py"]},
        "inputs": [{"name": "x", "shape": [128, 64], "dtype": "float32"}],
    })
    items = NkiStaticCollector().collect(Submission(manifest=manifest, files=files))
    assert {i.location.start_line for i in items if i.kind == "nki.partition-over-128"} == {_line("# BASE")}


def test_a_diamond_resolves_in_c3_order():
    # Both(Left, Right): Python looks in Both, Left, Right, then Stage, so Right's override runs (depth first
    # would have stopped at Stage through Left)
    assert _partition_findings("Both", DIRECT) == {_line("# RIGHT")}
    assert _partition_findings("Both") == {_line("# RIGHT")}
