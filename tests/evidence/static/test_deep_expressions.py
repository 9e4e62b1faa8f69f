"""Generated code nests expressions thousands deep (`t + t + ... + t`, 2,000 terms). The static passes read
it without recursion: the engine's walk and evaluator, the rules that fold expressions, the sandbox's import
policy and the CUDA walker find what they find in the shallow form of the same kernel; code nested deeper
than Python compiles is refused with one line naming file:line, before libcst (which dies or crawls on it).

Every kernel here is written for these tests."""

from __future__ import annotations

import libcst as cst
import pytest

from evidence.sandbox.policy import check_submission
from evidence.static.collectors import CudaStaticCollector, NkiStaticCollector
from evidence.static.cuda import parse_cuda
from evidence.static.engine import StaticAnalysisError, analyze
from evidence.submission import Manifest, Submission

DEEP = 2000
KERNEL = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def scaled(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    m = nl.mean(t, axis=[1], keepdims=True)
    y = {chain}
    v = nl.mean(t * t, axis=[1], keepdims=True) - m * m
    if y and v:
        nl.store(out, value=y)
    spare = nl.ndarray((512, 64), dtype=nl.float32, buffer=nl.sbuf)
    return out
'''
INPUTS = {"x": ((128, 64), "float32")}


def _chain(n: int, op: str = " + ") -> str:
    return op.join(["t"] * n)


def _deep_module(n: int) -> tuple[str, cst.Module]:
    """The kernel with an n-term chain, as source and as the libcst tree of that source, built directly
    (libcst's own parser takes seconds on 2,000 terms: `evidence.static.nesting`)."""
    template = cst.parse_module(KERNEL.format(chain="t"))
    chain: cst.BaseExpression = cst.Name("t")
    for _ in range(n - 1):
        chain = cst.BinaryOperation(left=chain, operator=cst.Add(), right=cst.Name("t"))

    class Put(cst.CSTTransformer):
        def leave_Assign(self, node, updated):
            target = node.targets[0].target
            return updated.with_changes(value=chain) if isinstance(target, cst.Name) and target.value == "y" else updated

    return KERNEL.format(chain=_chain(n)), template.visit(Put())


def _found(analysis) -> set[tuple[str, int]]:
    return {(f.rule, f.start) for f in analysis.findings}


def test_a_2000_deep_chain_is_analysed_as_its_shallow_form():
    shallow = analyze(KERNEL.format(chain=_chain(3)), entry="scaled", inputs=[], options={})
    source, module = _deep_module(DEEP)
    deep = analyze(source, entry="scaled", module=module)
    assert deep.failures == []
    # the chain's value is a tile (`if y` on it is flagged), the variance after it and the oversized buffer too
    assert {"python-logic-on-tile", "unstable-variance", "partition-over-128"} <= {r for r, _ in _found(deep)}
    assert _found(deep) == _found(shallow)


@pytest.mark.parametrize("op", [" - ", " * ", " and "])
def test_chains_of_other_operators_leave_every_rule_running(op):
    source = KERNEL.format(chain=_chain(600, op))  # 600 terms: libcst parses it in well under a second
    deep = analyze(source, entry="scaled")
    assert deep.failures == []
    assert ("partition-over-128", 14) in _found(deep)


def test_brackets_nested_past_what_python_compiles_are_refused_in_one_line():
    source = KERNEL.format(chain="(" * 300 + "t" + ")" * 300)
    with pytest.raises(StaticAnalysisError, match=r"^kernel\.py:10: brackets nested 300 deep, more than the 200 "):
        analyze(source, entry="scaled")


def test_a_chain_deeper_than_python_compiles_is_refused_in_one_line():
    source = KERNEL.format(chain=_chain(3500))
    with pytest.raises(StaticAnalysisError, match=r"^kernel\.py:10: an expression nested deeper than Python compiles"):
        analyze(source, entry="scaled")


def test_the_import_policy_reads_a_deep_chain():
    report = check_submission({"kernel.py": KERNEL.format(chain=_chain(DEEP))}, ("kernel.py", "scaled"), None)
    assert report.findings == () and report.blocking == ()
    # and still sees what it must in the same file
    hostile = KERNEL.format(chain=_chain(DEEP)).replace("    return out\n", "    __import__('os')\n    return out\n")
    assert [f.kind for f in check_submission({"kernel.py": hostile}, ("kernel.py", "scaled"), None).findings]


CUDA = '''__global__ void scaled(const float* x, float* y, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = {chain};
}}
'''


def test_the_cuda_walker_reads_a_deep_chain():
    facts = parse_cuda(CUDA.format(chain=" + ".join(["x[i]"] * DEEP)), "scaled.cu")
    shallow = parse_cuda(CUDA.format(chain=" + ".join(["x[i]"] * 3)), "scaled.cu")
    assert [f.name for f in facts.functions] == [f.name for f in shallow.functions] == ["scaled"]
    assert (facts.functions[0].global_index, facts.functions[0].read_only_dtypes) == (True, ("float32",))
    assert facts.functions[0].builtins == shallow.functions[0].builtins


def test_an_unreadable_kernel_keeps_the_cuda_facts():
    manifest = Manifest.model_validate({
        "task": {"id": "deep", "title": "deep"},
        "kernel": {"file": "kernel.py", "entry": "scaled"},
        "inputs": [{"name": "x", "shape": [128, 64], "dtype": "float32"}],
        "migration": {"cuda_file": "scaled.cu", "cuda_entry": "scaled"},
    })
    sub = Submission(manifest=manifest, files={"kernel.py": KERNEL.format(chain="(" * 300 + "t" + ")" * 300),
                                                "scaled.cu": CUDA.format(chain="x[i] * 2.0f")})
    with pytest.raises(StaticAnalysisError, match=r"^kernel\.py:10: "):
        NkiStaticCollector().collect(sub)
    assert any(i.kind.startswith("cuda.") for i in CudaStaticCollector().collect(sub))
