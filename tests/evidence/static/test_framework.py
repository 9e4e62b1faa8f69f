"""The rule framework: one parse and one traversal per file, crash isolation, per-rule timing,
dialect gating, discovery."""

from __future__ import annotations

import libcst as cst
import pytest

import evidence.static.engine as engine_mod
from evidence.model import Severity
from evidence.static.dialect import detect
from evidence.static.engine import StaticAnalysisError, analyze
from evidence.static.framework import Rule, load_rules

SRC = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
@nki.jit
def k(a):
    for i in nl.affine_range(4):
        w = nl.load(a)
        nl.device_print("w", w)
    return a
"""


def test_all_rules_run_in_one_parse_and_one_traversal(monkeypatch):
    parses, wrappers, module_visits, engines = [], [], [], []
    real_parse, real_wrapper = cst.parse_module, engine_mod.MetadataWrapper
    real_on_visit = engine_mod.Engine.on_visit

    class CountingWrapper(real_wrapper):
        def __init__(self, *a, **kw):
            wrappers.append(1)
            super().__init__(*a, **kw)

    def on_visit(self, node):
        if isinstance(node, cst.Module):
            module_visits.append(1)
            engines.append(self)
        return real_on_visit(self, node)

    monkeypatch.setattr(engine_mod.cst, "parse_module", lambda s: parses.append(1) or real_parse(s))
    monkeypatch.setattr(engine_mod, "MetadataWrapper", CountingWrapper)
    monkeypatch.setattr(engine_mod.Engine, "on_visit", on_visit)
    result = analyze(SRC, inputs=engine_mod.bindings_from({"a": ((128, 512), "float32")}))
    assert (len(parses), len(wrappers), len(module_visits)) == (1, 1, 1)
    assert len(engines[0].rules) == len([r for r in load_rules() if "beta" in r.dialects])
    assert {"hoistable-load", "device-print"} <= {f.rule for f in result.findings}
    assert set(result.timings) == {r.id for r in engines[0].rules}


class Exploding(Rule):
    """Test-only rule that crashes on every call.

    Used to prove crash isolation.
    """

    id = ""  # not discovered: the test passes it explicitly
    severity = Severity.low

    def on_call(self, call):
        raise RuntimeError("boom")


class ExplodingRule(Exploding):
    id = "test-exploding"


def test_a_crashing_rule_becomes_a_failure_and_others_still_report():
    rules = [r for r in load_rules() if r.id == "device-print"] + [ExplodingRule]
    result = analyze(SRC, rules=rules)
    assert [f.rule for f in result.failures] == ["test-exploding"]
    assert result.failures[0].error_type == "RuntimeError" and result.failures[0].line == 5
    assert [f.rule for f in result.findings] == ["device-print"]


def test_discovery_skips_rules_defined_outside_the_package_unless_passed():
    ids = [r.id for r in load_rules()]
    assert ids == sorted(ids) and len(ids) == len(set(ids))
    assert len(ids) >= 24


def test_dialects_are_detected_and_gate_rules():
    assert detect(cst.parse_module("import neuronxcc.nki.language as nl\n")).dialect == "beta"
    std = "import nki\nimport nki.language as nl\nimport nki.isa as nisa\nfor i in nl.static_range(64):\n    x = i\n"
    info = detect(cst.parse_module(std))
    assert info.dialect == "standalone" and info.aliases["nl"] == "nl"
    # large-static-range is a beta rule (0.3+ iterators are aliases of range): never applied to standalone code.
    assert [f.rule for f in analyze(std).findings if f.rule == "large-static-range"] == []
    beta = std.replace("import nki\nimport nki.language as nl\nimport nki.isa as nisa\n",
                       "import neuronxcc.nki.language as nl\n")
    assert [f.rule for f in analyze(beta).findings] == ["large-static-range"]


def test_every_rule_judges_both_dialects_or_says_why_not():
    for rule in load_rules():
        assert set(rule.dialects) <= {"beta", "standalone"}, rule.id
        if "standalone" not in rule.dialects:
            assert "Beta-only:" in (rule.__doc__ or ""), f"{rule.id}: beta-only without the reason in its docstring"


def test_syntax_error_names_file_and_line():
    try:
        analyze("def k(:\n    pass\n", file="kern.py")
    except StaticAnalysisError as exc:
        assert str(exc).startswith("kern.py:1:")
    else:
        raise AssertionError("expected StaticAnalysisError")


@pytest.mark.slow  # both position paths over the whole corpus
def test_fast_line_spans_match_libcst_positions_on_the_corpus():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    from _corpus import all_files, corpus_entry

    for path in all_files():
        src, inputs, entry, opts = corpus_entry(path)
        fast = analyze(src, file=path.name, inputs=inputs, entry=entry, options=opts)
        exact = analyze(src, file=path.name, inputs=inputs, entry=entry, options=opts, exact_positions=True)
        key = lambda a: [(f.rule, f.start, f.end) for f in a.findings]  # noqa: E731
        assert key(fast) == key(exact), path.name
        loops = lambda a: [(lp.start, lp.end) for fn in a.functions for lp in fn.loops]  # noqa: E731
        calls = lambda a: [(c.name, c.start, c.end) for fn in a.functions for c in fn.calls]  # noqa: E731
        assert loops(fast) == loops(exact) and calls(fast) == calls(exact), path.name


def test_position_mismatch_falls_back_to_exact(monkeypatch):
    from evidence.static import positions

    monkeypatch.setattr(positions.AstLines, "consistent", lambda self: False)
    result = analyze(SRC, inputs=engine_mod.bindings_from({"a": ((128, 512), "float32")}))
    assert {f.rule: f.start for f in result.findings}["device-print"] == 7


DECORATED = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

@nki.jit(mode=nl.par_dim(1))
def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    nl.store(out, value=nl.exp(x))
    return out
"""


def test_call_lines_hold_where_libcst_ships_without_sources(monkeypatch):
    """A deployment with byte-compiled libcst only (no .py sources): positions must not depend on
    reading libcst's source. A decorator call comes before the body's calls in the source even though
    FunctionDef declares `decorators` after `body`."""
    import inspect

    def no_source(obj):
        raise OSError("could not get source code")

    monkeypatch.setattr(inspect, "getsource", no_source)
    for exact in (False, True):
        result = analyze(DECORATED, exact_positions=exact)
        assert [(c.name, c.start) for c in result.functions[0].calls] == [
            ("nl.ndarray", 6), ("nl.load", 7), ("nl.store", 8), ("nl.exp", 8)], exact


def test_unplaceable_children_fail_loudly(monkeypatch):
    """If libcst's public child listing stops matching its node fields, the analysis raises instead
    of handing out wrong lines."""
    from evidence.static import positions

    monkeypatch.setattr(positions, "_ORDER", {})
    monkeypatch.setattr(cst.CSTNode, "children", property(lambda self: []))
    with pytest.raises(positions.PositionError, match=r"libcst Module\.body is not among the node's children"):
        analyze(DECORATED)


def test_kernels_wrapped_by_a_jit_call_are_kernels():
    src = ("import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"
           "def body(a):\n    t = nl.load(a)\n    return t\nkernel = nki.jit(body)\n")
    result = analyze(src, inputs=engine_mod.bindings_from({"a": ((256, 8), "float32")}))
    (fn,) = result.functions
    assert fn.is_kernel and fn.decorator == "nki.jit()"
    assert [f.rule for f in result.findings] == ["partition-over-128"]  # a [256, 8] load: shapes were bound


def test_standalone_dst_first_calls_are_not_read_as_beta_results():
    src = ("import nki\nimport nki.language as nl\nimport nki.isa as nisa\n"
           "@nki.jit\ndef k(a, b):\n    x = nl.load(a)\n    y = nl.load(b)\n"
           "    r = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)\n"
           "    for i in range(4):\n        nisa.nc_matmul(r, x, y)\n        nisa.activation(r, nl.exp, r)\n")
    result = analyze(src, inputs=engine_mod.bindings_from({"a": ((128, 128), "float32"), "b": ((128, 512), "float32")}))
    assert result.dialect.dialect == "standalone"
    # dst-first: stationary/moving are arguments 1 and 2, both fp32; no beta-only loop rule applies.
    assert [f.rule for f in result.findings] == ["fp32-matmul-operands"]
