"""gather: collectors run in isolation, in a deterministic order, with per-collector options."""

from __future__ import annotations

from typing import ClassVar

import pytest

from evidence.collector import Collector
from evidence.gather import gather
from evidence.model import EvidenceItem, Location
from evidence.submission import Manifest, Submission

SUB = Submission(
    manifest=Manifest.model_validate({"task": {"id": "t", "title": "T"}, "kernel": {"file": "k.py", "entry": "k"}}),
    files={"k.py": "def k():\n    pass\n"},
)


class _Base(Collector):
    abstract = True
    kinds: ClassVar[dict[str, str]] = {"test.fact": "a test fact"}
    limit: int = 1

    def item(self, n: int, line: int) -> EvidenceItem:
        return EvidenceItem(id=f"test.fact:{self.name}:{n}", kind="test.fact", analyzer=self.analyzer,
                            title=f"fact {n}", location=Location(file="k.py", start_line=line, end_line=line))


class Good(_Base):
    name = "test-good"

    def collect(self, submission):
        return [self.item(n, 2 - n % 2) for n in range(self.limit)]


class Crashing(_Base):
    name = "test-crash"

    def collect(self, submission):
        raise RuntimeError("boom\nsecond line")


def test_a_crash_becomes_an_analyzer_failure_and_others_still_report():
    bundle = gather(SUB, collectors=[Crashing, Good], options={"test-good": {"limit": 3}})
    assert [i.id for i in bundle.items] == ["test.fact:test-good:1", "test.fact:test-good:0", "test.fact:test-good:2"]
    (failure,) = bundle.failures
    assert (failure.id, failure.error_type) == ("failure:test-crash", "RuntimeError")
    assert failure.message.startswith("boom (at test_gather.py:")
    assert set(bundle.analyzers) == {"test-good", "test-crash"}


def test_bundle_hash_ignores_timings_and_tracks_content():
    a = gather(SUB, collectors=[Good])
    b = gather(SUB, collectors=[Good])
    assert a.bundle_hash == b.bundle_hash
    assert gather(SUB, collectors=[Good], options={"test-good": {"limit": 2}}).bundle_hash != a.bundle_hash


def test_unknown_option_is_a_clear_error():
    with pytest.raises(TypeError, match="collector 'test-good' has no option 'colour'"):
        gather(SUB, collectors=[Good], options={"test-good": {"colour": "red"}})


def test_collectors_defined_outside_the_package_are_not_discovered():
    from evidence.catalog import load_collectors
    from evidence.collector import concrete_collectors

    names = {c.name for c in concrete_collectors()}
    assert "test-good" not in names and "test-crash" not in names
    assert {"nki-simulator", "nki-static", "claims"} <= {c.name for c in load_collectors()}


class Staged(_Base):
    name = "test-staged"

    def collect(self, submission):
        self.timings = {"parse": 0.25, "check": 0.5}
        return [self.item(0, 1)]


def test_timings_per_collector_and_stage_are_recorded_and_shown():
    from grader.reports.markdown import render_bundle

    bundle = gather(SUB, collectors=[Good, Staged, Crashing])
    assert set(bundle.timings) == {"test-good", "test-staged", "test-staged.parse", "test-staged.check", "test-crash"}
    assert all(v >= 0 for v in bundle.timings.values()) and bundle.timings["test-staged.check"] == 0.5
    line = next(x for x in render_bundle(bundle).splitlines() if x.startswith("Timings:"))
    assert "test-staged " in line and "(parse 0.250s, check 0.500s)" in line


def test_the_static_collector_times_its_analysis(tmp_path):
    from evidence.static.collectors import NkiStaticCollector

    src = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n\n@nki.jit\ndef k(a):\n    x = nl.load(a)\n"
    sub = Submission(manifest=Manifest.model_validate({
        "task": {"id": "t", "title": "T"}, "kernel": {"file": "k.py", "entry": "k"},
        "inputs": [{"name": "a", "shape": [128, 64]}]}), files={"k.py": src})
    bundle = gather(sub, collectors=[NkiStaticCollector])
    assert bundle.timings["nki-static.analysis"] > 0 and "nki-static.rules" in bundle.timings


def test_the_simulator_times_its_children_and_the_comparison():
    from evidence.nki.collector import SimulationCollector

    src = ("import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n\n@nki.jit\ndef k(a):\n"
           "    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n    nl.store(out, value=nl.load(a))\n    return out\n")
    sub = Submission(manifest=Manifest.model_validate({
        "task": {"id": "t", "title": "T"}, "kernel": {"file": "k.py", "entry": "k"},
        "inputs": [{"name": "a", "shape": [128, 64]}], "reference": {"file": "r.py", "entry": "r"}}),
        files={"k.py": src, "r.py": "def r(a):\n    return a\n"})
    t = gather(sub, collectors=[SimulationCollector]).timings
    assert {"nki-simulator.kernel", "nki-simulator.reference", "nki-simulator.compare"} <= set(t)
    assert 0 < t["nki-simulator.kernel"] <= t["nki-simulator"]
