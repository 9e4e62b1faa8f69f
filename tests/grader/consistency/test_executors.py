"""One executor interface: the local process pool and Ray give identical calibration results."""

from __future__ import annotations

import importlib.util

import pytest

from grader.consistency.calibrate import run_calibration
from grader.consistency.executor import LocalExecutor, RayExecutor, make_executor
from grader.errors import GraderError
from grader.settings import Settings
from tests.grader.consistency.conftest import mini_set


def _square(x: int) -> int:
    return x * x


def test_local_pool_keeps_input_order_and_reports_each_result():
    seen = []
    assert LocalExecutor(2).map(_square, [3, 1, 2], on_done=lambda i, r: seen.append((i, r))) == [9, 1, 4]
    assert sorted(seen) == [(0, 9), (1, 1), (2, 4)]


def test_make_executor_rejects_bad_choices():
    with pytest.raises(GraderError, match="unknown executor 'dask'"):
        make_executor("dask")
    with pytest.raises(GraderError, match="--address applies to the ray executor only"):
        make_executor("local", 1, "ray://head:10001")
    with pytest.raises(GraderError, match="at least 1"):
        LocalExecutor(0)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray is not installed (pip install -e '.[ray]')")
def test_ray_and_local_pool_give_identical_reports():
    settings = Settings(drafter="rules")
    local = run_calibration(mini_set(), settings=settings, executor=LocalExecutor(2), resamples=100)
    ray_ex = RayExecutor(workers=2)  # starts a local Ray instance for this test
    try:
        assert ray_ex.map(_square, [4, 5]) == [16, 25]
        remote = run_calibration(mini_set(), settings=settings, executor=ray_ex, resamples=100)
    finally:
        ray_ex.shutdown()
    assert (local.executor, remote.executor) == ("local", "ray")
    assert remote.comparable() == local.comparable()
