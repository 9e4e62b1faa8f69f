"""Framework stand-ins: importable and inert for a test harness, a clear error when used as data."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from evidence.sandbox.standins import StandIn, StandInFinder, StandInUsed


def test_the_finder_serves_every_module_under_the_framework_roots_and_nothing_else():
    finder = StandInFinder()
    assert finder.find_spec("numpy") is None and finder.find_spec("torchvision") is None
    spec = finder.find_spec("torch.nn.functional")
    module = importlib.util.module_from_spec(spec)
    assert "inert stand-in" in module.__doc__ and finder.served == {"torch"}
    assert repr(module.relu) == "<inert stand-in torch.nn.functional.relu>"


def test_harness_idioms_work_and_data_use_fails_naming_the_module():
    torch = StandIn("torch")

    @torch.no_grad()
    def harness(x):
        return x * 2

    assert harness(3) == 6  # a decorator leaves the function alone
    with torch.no_grad():
        pass
    assert not torch.cuda.is_available()

    class Net(torch.nn.Module):  # subclassing a stand-in defines a plain class
        pass

    assert Net.__mro__ == (Net, object)
    t = torch.randn(4, 4)
    for use in (lambda: t + 1, lambda: np.asarray(t), lambda: t[0], lambda: list(t), lambda: float(t)):
        with pytest.raises(StandInUsed, match="torch.randn\\(...\\) is an inert stand-in: the grader does not import torch"):
            use()
