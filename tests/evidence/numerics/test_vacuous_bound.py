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


def test_a_lost_term_is_a_defect_once_the_perturbation_cap_bounds_kappa():
    v = verdict(first=3)  # three of the four key blocks never summed: rel L2 near 0.9
    assert v.metrics["rel_l2"] > 0.5 and v.labels["verdict"] == "defect", v.title
    assert v.labels["bound"] == "informative" and "within expected variation" not in v.title


def test_the_correct_kernel_is_within_an_informative_bound():
    v = verdict(first=0)
    assert v.metrics["rel_l2"] < 1e-5 and v.labels["verdict"] == "within" and v.labels["bound"] == "informative"


def test_without_a_measured_response_a_vacuous_bound_gives_no_verdict():
    """A reference too slow for its perturbation calls keeps the |inputs| estimate; through exp(q.k) that makes
    the bound larger than the output, and an output off by 90% would pass: it reads 'cannot tell', not 'within'."""
    import numpy as np

    from evidence.numerics.errormodel import Trial, assess

    rng = np.random.default_rng(5)
    ref = rng.standard_normal(4096)
    refabs = np.abs(ref) * 1e5  # what f(|x|) gives through an exponentiated input: kappa 1e5
    lost = ref * 0.1  # most of every element missing
    res = assess(Trial("seed 1", lost, ref, refdev=ref, refabs=refabs), "float32", 1024)
    assert res.bound >= VACUOUS_BOUND and res.verdict == "cannot_tell" and "vacuous" in res.reason, res
    measured = assess(Trial("seed 1", lost, ref, refdev=ref, refabs=refabs, response=np.array([3.0, 2.5, 2.8])),
                      "float32", 1024)
    assert measured.bound < VACUOUS_BOUND and measured.verdict == "defect", measured
