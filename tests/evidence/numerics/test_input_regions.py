"""Per-input precision by region: a bf16 copy of one slice of an fp32 input lowers that slice only.

The device-faithful reference rounded a whole argument to the lowest dtype any view of it was computed in, so a
kernel computing one column block of an fp32 input in bf16 and the other three in fp32 had all four rounded:
e_dev (and the bound) twice what the kernel's rounding costs."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from evidence.nki import load_kernel, simulate
from evidence.numerics.collector import NumericsCollector, device_dtypes, device_regions
from evidence.submission import InputSpec, Manifest, Submission

HEAD = ("import numpy as np\nimport neuronxcc.nki as nki\nimport neuronxcc.nki.isa as nisa\n"
        "import neuronxcc.nki.language as nl\n")

# out = x.T @ w per 128-column block of x; block 0 goes through TensorE in bf16, blocks 1-3 in fp32
BLOCKS = """
@nki.jit
def kernel(x, w):
    K, M = x.shape
    _, N = w.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    wb = nl.load(w)
    wf = nl.copy(wb, dtype=nl.float32)
    for j in nl.static_range(M // 128):
        t = nl.load(x[:, j * 128:(j + 1) * 128])
        if j == 0:
            o = nl.matmul(nl.copy(t, dtype=nl.bfloat16), wb, transpose_x=True)
        else:
            o = nl.matmul(t, wf, transpose_x=True)
        nl.store(out[j * 128:(j + 1) * 128, :], value={value})
    return out
"""
REF = "import numpy as np\n\ndef ref(x, w):\n    return x.T @ w\n"
INPUTS = [{"name": "x", "shape": [128, 512], "dtype": "float32"}, {"name": "w", "shape": [128, 64], "dtype": "bfloat16"}]
# block 2 off by 0.7%: a quarter of the rows, rel L2 3.6e-3, near what rounding all of x to bf16 would cost
SCALED = "nl.multiply(o, 1.007) if j == 2 else o"


def submission(value: str) -> Submission:
    data = {"task": {"id": "blocks", "title": "one block in bf16", "target": "trn2"},
            "kernel": {"file": "kernel.py", "entry": "kernel"}, "reference": {"file": "reference.py", "entry": "ref"},
            "inputs": INPUTS}
    return Submission(manifest=Manifest.model_validate(data),
                      files={"kernel.py": HEAD + textwrap.dedent(BLOCKS.format(value=value)), "reference.py": REF})


def test_a_bf16_copy_of_one_block_rounds_that_block_only():
    x = np.random.default_rng(0).standard_normal((128, 512)).astype(np.float32)
    w = np.ones((128, 64), dtype=np.float32)
    sim = simulate(load_kernel(HEAD + textwrap.dedent(BLOCKS.format(value="o")), display="k.py").kernel,
                   x, w.astype("bfloat16"), keep_trace=False)
    specs = tuple(InputSpec.model_validate(d) for d in INPUTS)
    assert sim.report.input_dtypes[0] == ("bfloat16", "float32")  # somewhere in x, as before
    assert device_dtypes(specs, sim.report) == ("float32", "bfloat16")
    assert device_regions(specs, sim.report) == ((0, "bfloat16", (0, 0), (128, 128)),)


@pytest.mark.parametrize("value, expected", [("o", "within"), (SCALED, "defect")])
def test_the_bound_is_the_rounding_the_kernel_makes_not_a_whole_input_in_bf16(value, expected):
    v = next(i for i in NumericsCollector().collect(submission(value)) if i.kind == "numerics.verdict")
    assert v.labels["verdict"] == expected, v.title
    assert v.metrics["e_device"] < 1e-3, v.detail  # a quarter of the output rounded: half the whole input's
