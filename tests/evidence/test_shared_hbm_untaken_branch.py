"""A shared_hbm allocation in a helper that the task's arguments never reach is not a compile error for that task.

nki-library's MoE affinity masking slices the router affinities into SBUF or, behind `output_in_sbuf=False`, into a
shared_hbm buffer its helper creates; the decode kernels pass `output_in_sbuf=True`. The static rule read the helper's
allocation as err_shared_hbm_must_in_kernel_level (correctness capped at 3, platform at 2) although the compiler,
which traces only what runs, never sees it. The simulator stops with that error where the compiler does, so a run
that ends shows the branch was not taken. Kernels written here: the same shape of code, each branch taken."""

from __future__ import annotations

from evidence.gather import gather
from evidence.model import EvidenceBundle
from evidence.submission import Manifest, Submission
from grader.drafting.rules import RulesDrafter
from grader.rubric import load_rubric

KERNEL = '''
import nki
import nki.isa as nisa
import nki.language as nl

from helpers import scaled


@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = scaled(x, to_sbuf={to_sbuf})
    if {to_sbuf}:
        nisa.dma_copy(dst=out, src=t)
    else:
        nisa.dma_copy(dst=out, src=t)
    return out
'''

HELPERS = '''
import nki.isa as nisa
import nki.language as nl


def _into_hbm(t):
    buf = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=buf, src=t)
    return buf


def scaled(x, to_sbuf):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    if to_sbuf:
        return t
    return _into_hbm(t)
'''


def run(to_sbuf: bool) -> tuple[EvidenceBundle, object]:
    data = {"task": {"id": "scaled", "title": "x * 2", "target": "trn2"},
            "kernel": {"file": "kernel.py", "entry": "kernel", "modules": ["helpers.py"]},
            "reference": {"file": "reference.py", "entry": "ref"},
            "inputs": [{"name": "x", "shape": [128, 64], "dtype": "float32"}]}
    sub = Submission(manifest=Manifest.model_validate(data),
                     files={"kernel.py": KERNEL.format(to_sbuf=to_sbuf), "helpers.py": HELPERS,
                            "reference.py": "def ref(x):\n    return x * 2\n"})
    b = gather(sub, exclude=("numerics", "perf"))
    return b, RulesDrafter().draft(sub, b, load_rubric())


def nested(b: EvidenceBundle):
    (item,) = [i for i in b.items if i.kind == "nki.shared-hbm-nested"]
    return item


def test_an_allocation_on_a_branch_the_task_does_not_take_caps_nothing():
    b, d = run(to_sbuf=True)
    item = nested(b)  # still reported: other arguments reach it
    assert item.location.file == "helpers.py" and item.location.start_line == 7
    assert item.labels["trace"] == "not_traced" and item.severity.value == "low", item
    assert d.criterion("kernel_correctness").score == 5, d.criterion("kernel_correctness").rationale
    assert d.criterion("neuron_platform").score >= 4, d.criterion("neuron_platform").rationale


def test_the_branch_taken_stops_the_simulation_and_keeps_the_caps():
    b, d = run(to_sbuf=False)
    item = nested(b)
    assert "trace" not in item.labels and item.severity.value == "critical"
    assert any(i.kind == "sim.error" for i in b.items)
    assert d.criterion("neuron_platform").score <= 2
