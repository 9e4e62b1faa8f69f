"""The JSON-file run store: latest run per epoch and rubric, damaged files never hide others."""

from __future__ import annotations

import pytest

from grader.consistency.store import JsonFileStore, StoreError, default_data_dir, load_report_file
from tests.grader.consistency.test_html_report import _report


def test_latest_run_is_per_epoch_and_rubric(tmp_path):
    store = JsonFileStore(tmp_path)
    older = _report().model_copy(update={"id": "cal-1", "created_at": "2026-01-01T00:00:00+00:00"})
    newer = older.model_copy(update={"id": "cal-2", "created_at": "2026-01-02T00:00:00+00:00"})
    other = older.model_copy(update={"id": "cal-3", "created_at": "2026-01-03T00:00:00+00:00",
                                     "epoch": older.epoch.extend(model="openai/other")})
    for r in (newer, older, other):
        store.save_run(r)
    assert store.latest_run(older.epoch.hash, "nki-kernel-review").id == "cal-2"
    assert store.latest_run(other.epoch.hash, "nki-kernel-review").id == "cal-3"
    assert store.latest_run(older.epoch.hash, "another-rubric") is None
    assert [s.id for s in store.list_runs()] == ["cal-1", "cal-2", "cal-3"]
    summary = store.list_runs(epoch=other.epoch.hash)[0]
    assert (summary.kind, summary.set_name, summary.passed) == ("calibration", "hand-set", other.passed)
    (tmp_path / "calibration-runs" / "cal-9.json").write_text("{not json")
    assert len(store.list_runs()) == 3  # a damaged record is skipped, not fatal
    with pytest.raises(StoreError, match="unreadable calibration record"):
        store.get_run("cal-9")
    with pytest.raises(StoreError, match="no calibration run 'cal-404'"):
        store.get_run("cal-404")
    with pytest.raises(StoreError, match="unsafe run id"):
        store.save_run(older.model_copy(update={"id": "../escape"}))


def test_report_files_round_trip(tmp_path):
    report = _report()
    path = tmp_path / "r.json"
    path.write_text(report.model_dump_json())
    assert load_report_file(path) == report
    path.write_text('{"kind": "poem"}')
    with pytest.raises(StoreError, match="neither 'calibration' nor 'audit'"):
        load_report_file(path)


def test_default_location_is_the_user_data_dir():
    assert default_data_dir().name == "nki-grader"
