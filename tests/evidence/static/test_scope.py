"""Static evidence is scoped to the entry kernel and the functions it reaches (issue 10.1)."""

from __future__ import annotations

import pytest

from evidence.static.engine import analyze
from evidence.static.facts import fact_items
from evidence.static.model import InputBinding
from evidence.static.scope import entry_scope

# A tutorial-style file: a naive version kept for comparison, the optimised one with a helper,
# an alias that makes a plain function a kernel, and host code under __main__.
SOURCE = '''\
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def rowsum_naive(x):
    out = nl.ndarray((512, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    for r in nl.affine_range(512):
        t = nl.load(x[r:r + 1, :])
        nl.store(out[r:r + 1, :], value=nl.sum(t, axis=1, keepdims=True))
    return out


def _tile_sum(x, i):
    t = nl.load(x[i * 32:(i + 1) * 32, :])
    nl.device_print("tile", t)
    return nl.sum(t, axis=1, keepdims=True)


@nki.jit
def rowsum_tiled(x):
    out = nl.ndarray((512, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(16):
        nl.store(out[i * 32:(i + 1) * 32, :], value=_tile_sum(x, i))
    return out


def unused_helper(x):
    for r in nl.affine_range(512):
        t = nl.load(x[r:r + 1, :])


rowsum = rowsum_tiled

if __name__ == "__main__":
    for r in nl.affine_range(512):
        t = nl.load(np.zeros((512, 256))[r:r + 1, :])
'''
INPUTS = [InputBinding("x", (512, 256), "float32")]


def _kinds(a):
    return {f.rule for f in a.findings}


def test_findings_come_only_from_the_entry_and_its_callees():
    a = analyze(SOURCE, inputs=INPUTS, entry="rowsum_tiled")
    assert {f.name for f in a.functions} == {"_tile_sum", "rowsum_tiled"}
    # the helper's leftover print is the entry's business; the naive kernel's rows are not
    assert _kinds(a) == {"device-print"}
    assert [f.start for f in a.findings] == [17]
    assert [(s.name, s.is_kernel) for s in a.skipped] == [("rowsum_naive", True), ("unused_helper", False)]


def test_the_other_kernel_is_analysed_when_it_is_the_entry():
    a = analyze(SOURCE, inputs=INPUTS, entry="rowsum_naive")
    assert {f.name for f in a.functions} == {"rowsum_naive"}
    assert "thread-emulation" in _kinds(a)
    assert all(7 <= f.start <= 12 for f in a.findings)


def test_an_alias_reaches_the_function_it_names():
    a = analyze(SOURCE, inputs=INPUTS, entry="rowsum")
    assert {f.name for f in a.functions} == {"_tile_sum", "rowsum_tiled"}


def test_without_an_entry_every_function_is_analysed_but_main_is_host_code():
    a = analyze(SOURCE, inputs=INPUTS)
    assert {f.name for f in a.functions} == {"rowsum_naive", "_tile_sum", "rowsum_tiled", "unused_helper"}
    assert all(f.start < 36 for f in a.findings)  # nothing from the __main__ block


def test_out_of_scope_functions_become_one_info_item_and_no_kernel_facts():
    a = analyze(SOURCE, inputs=INPUTS, entry="rowsum_tiled")
    items = fact_items(a, "nki-static@1")
    kernels = [i.labels["name"] for i in items if i.kind == "nki.kernel"]
    assert kernels == ["rowsum_tiled"]
    (skipped,) = [i for i in items if i.kind == "nki.out_of_scope"]
    assert skipped.severity.value == "info"
    assert skipped.labels["kernels"] == "rowsum_naive"
    assert "rowsum_naive (kernel.py:7-12)" in skipped.title
    assert not any(i.location and 7 <= i.location.start_line <= 12 for i in items if i.kind != "nki.out_of_scope")


@pytest.mark.parametrize("source", ["def f(:\n", "x = 1\n"])
def test_unparseable_or_entryless_sources_scope_everything(source):
    assert entry_scope(source, "k").def_lines is None


def test_a_redefined_name_resolves_to_its_last_definition():
    src = "def k(x):\n    return 1\n\n\ndef k(x):\n    return helper(x)\n\n\ndef helper(x):\n    return x\n"
    assert entry_scope(src, "k").def_lines == frozenset({5, 9})


# A kernel left undecorated because the file's own harness wraps it (`nki.baremetal(...)(scale_rows)`).
UNDECORATED_ENTRY = '''\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


def scale_rows(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(x), 2.0))
    return out


@nki.jit
def wrapper(x):
    return scale_rows(x)
'''


def test_the_manifest_entry_is_a_kernel_even_without_a_decorator():
    a = analyze(UNDECORATED_ENTRY, inputs=[InputBinding("x", (128, 64), "float32")], entry="scale_rows")
    assert [(f.name, f.is_kernel) for f in a.functions] == [("scale_rows", True)]
    assert "shared-hbm-nested" not in _kinds(a)
    assert [i.labels["name"] for i in fact_items(a, "nki-static@1") if i.kind == "nki.kernel"] == ["scale_rows"]
    # reached from a decorated entry, the same function is a helper allocating an output
    called = analyze(UNDECORATED_ENTRY, inputs=[InputBinding("x", (128, 64), "float32")], entry="wrapper")
    assert [f.start for f in called.findings if f.rule == "shared-hbm-nested"] == [6]
