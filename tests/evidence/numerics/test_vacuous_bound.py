"""A decision bound that cannot tell a defect from rounding gives no verdict.

The conditioning kappa comes from the reference on the inputs' absolute values. Through an exp of a dot product (an
attention backward's exp(s - lse) @ v) that is the function at other inputs, not cancellation: kappa reached 1.6e5 on
nki-library's attention_bwd and the bound 1.37, so a dq missing most of its keys (rel L2 0.90) read "within expected
variation". Kernels written here: exp(q.k / 8 - 4) @ v over four key blocks, and the same dropping three of them."""

from __future__ import annotations

import textwrap

from evidence.numerics.collector import NumericsCollector
from evidence.numerics.errormodel import VACUOUS_BOUND
from evidence.submission import Manifest, Submission

KERNEL = """
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

FIRST = {first}


@nki.jit
def kernel(q, k, v):
    d, n = q.shape
    m, e = v.shape
    out = nl.ndarray((n, e), dtype=nl.float32, buffer=nl.shared_hbm)
    s = nl.matmul(nl.load(q), nl.load(k), transpose_x=True)  # [n, m] scores
    p = nl.exp(nl.add(nl.multiply(s, 0.125), -4.0))
    acc = nl.zeros((n, e), nl.float32, buffer=nl.psum)
    for j in nl.affine_range(m // 128 - FIRST):
        b = j + FIRST
        pt = nl.copy(nl.transpose(p[:, b * 128:(b + 1) * 128]))
        acc += nl.matmul(pt, nl.load(v[b * 128:(b + 1) * 128, :]), transpose_x=True)
    nl.store(out, value=nl.copy(acc))
    return out
"""

REFERENCE = """
import numpy as np


def ref(q, k, v):
    s = q.astype(np.float64).T @ k.astype(np.float64)
    return (np.exp(s * 0.125 - 4.0) @ v.astype(np.float64)).astype(np.float32)
"""


def verdict(first: int):
    data = {"task": {"id": f"exp-matmul-{first}", "title": "exp then matmul", "target": "trn2"},
            "kernel": {"file": "kernel.py", "entry": "kernel"}, "reference": {"file": "reference.py", "entry": "ref"},
            "inputs": [{"name": "q", "shape": [128, 128], "dtype": "float32"},
                       {"name": "k", "shape": [128, 512], "dtype": "float32"},
                       {"name": "v", "shape": [512, 64], "dtype": "float32"}]}
    sub = Submission(manifest=Manifest.model_validate(data),
                     files={"kernel.py": textwrap.dedent(KERNEL.format(first=first)), "reference.py": REFERENCE})
    items = NumericsCollector().collect(sub)
    assert len(items) == 1 and items[0].kind == "numerics.verdict", items
    return items[0]


def test_a_lost_term_under_a_vacuous_bound_is_not_within_expected_variation():
    v = verdict(first=3)  # three of the four key blocks never summed: rel L2 near 0.9
    assert v.metrics["rel_l2"] > 0.5 and v.metrics["bound"] >= VACUOUS_BOUND, v.detail
    assert v.labels["verdict"] == "cannot_tell" and v.labels["bound"] == "vacuous", v.title
    assert "vacuous" in v.title and "within expected variation" not in v.title


def test_the_correct_kernel_reads_vacuous_not_defect():
    v = verdict(first=0)
    assert v.metrics["rel_l2"] < 1e-5 and v.labels["verdict"] == "cannot_tell" and v.labels["bound"] == "vacuous"
