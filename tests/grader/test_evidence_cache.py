"""The evidence cache: identical work is reused, anything that decides a bundle is part of its key,
and what depends on the host is never stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from evidence.model import EvidenceBundle
from grader import evidence_cache
from grader.evaluate import evaluate
from grader.evidence_cache import EvidenceCache, gather_cached
from grader.settings import Settings
from grader.submission import load_submission

HANGS = '''
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    while True:
        pass
    return out
'''


@pytest.fixture
def gathers(monkeypatch):
    """The submissions whose evidence was really gathered (not read from the cache)."""
    seen: list[str] = []
    real = evidence_cache.gather

    def counting(submission, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(submission.manifest.task.id)
        return real(submission, **kwargs)

    monkeypatch.setattr(evidence_cache, "gather", counting)
    return seen


def _settings(tmp_path: Path, **changes: object) -> Settings:
    return Settings(cache_dir=tmp_path / "cache", data_dir=tmp_path / "data", **changes)


def test_a_second_evaluation_reuses_the_bundle_and_drafts_the_same(example_copy, tmp_path, gathers):
    folder = example_copy("softmax-ragged-defect")
    settings = _settings(tmp_path)
    first, second = evaluate(folder, settings=settings), evaluate(folder, settings=settings)
    assert len(gathers) == 1
    assert second.evidence.bundle_hash == first.evidence.bundle_hash
    assert second.model_dump(exclude={"record"}) == first.model_dump(exclude={"record"})
    assert len(list((tmp_path / "cache" / "evidence").glob("*/*.json"))) == 1


def test_content_and_options_are_part_of_the_key(example_copy, tmp_path, gathers):
    folder = example_copy("softmax-ragged-defect")
    settings = _settings(tmp_path)
    cache = settings.evidence_store()
    gather_cached(load_submission(folder), settings.collector_options(), cache)
    kernel = next(folder.glob("*.py"))
    kernel.write_text(kernel.read_text() + "\n# an edit\n")  # new content: gathered again
    gather_cached(load_submission(folder), settings.collector_options(), cache)
    # another time limit for the children: gathered again
    gather_cached(load_submission(folder), _settings(tmp_path, sim_timeout_s=90).collector_options(), cache)
    gather_cached(load_submission(folder), settings.collector_options(), cache)  # as the second: reused
    assert len(gathers) == 3


def test_a_run_that_timed_out_is_not_stored(tmp_path, gathers):
    folder = tmp_path / "hangs"
    folder.mkdir()
    (folder / "kernel.py").write_text(HANGS)
    (folder / "reference.py").write_text("def ref(a):\n    return a\n")
    (folder / "submission.toml").write_text(
        '[task]\nid = "hangs"\ntitle = "hangs"\n[kernel]\nfile = "kernel.py"\nentry = "kernel"\n'
        '[[inputs]]\nname = "a"\nshape = [128, 64]\ndtype = "float32"\n'
        '[reference]\nfile = "reference.py"\nentry = "ref"\n')
    settings = _settings(tmp_path, sim_timeout_s=1)
    cache = settings.evidence_store()
    bundle = gather_cached(load_submission(folder), settings.collector_options(), cache)
    assert any(i.labels.get("code") == "timeout" for i in bundle.items)
    gather_cached(load_submission(folder), settings.collector_options(), cache)
    assert len(gathers) == 2 and not list((tmp_path / "cache" / "evidence").glob("*/*.json"))


def test_a_damaged_entry_is_gathered_again_and_replaced(example_copy, tmp_path, gathers):
    folder = example_copy("softmax-ragged-defect")
    settings = _settings(tmp_path)
    first = gather_cached(load_submission(folder), settings.collector_options(), settings.evidence_store())
    (entry,) = (tmp_path / "cache" / "evidence").glob("*/*.json")
    entry.write_text('{"version": 1, "items": [')
    again = gather_cached(load_submission(folder), settings.collector_options(), settings.evidence_store())
    assert len(gathers) == 2 and again.bundle_hash == first.bundle_hash
    assert EvidenceBundle.model_validate_json(entry.read_bytes()).bundle_hash == first.bundle_hash


def test_switched_off_nothing_is_stored_and_the_oldest_entries_go_first(example_copy, tmp_path, gathers):
    folder = example_copy("softmax-ragged-defect")
    off = _settings(tmp_path, evidence_cache=False)
    assert off.evidence_store() is None
    evaluate(folder, settings=off)
    evaluate(folder, settings=off)
    assert len(gathers) == 2 and not (tmp_path / "cache" / "evidence").exists()

    cache = EvidenceCache(tmp_path / "small", max_entries=1)
    sub = load_submission(folder)
    bundle = evidence_cache.gather(sub, options=off.collector_options())
    cache.put("aa" + "0" * 62, bundle)
    cache.put("bb" + "0" * 62, bundle)
    assert [p.name[:2] for p in (tmp_path / "small").glob("*/*.json")] == ["bb"]
    assert cache.get("aa" + "0" * 62) is None and cache.get("bb" + "0" * 62) == bundle
