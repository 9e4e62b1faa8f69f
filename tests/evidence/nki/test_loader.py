"""Loading kernels: import forms, sys.modules hygiene, imports inside bodies, dialect detection."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from evidence.nki import KernelLoadError, UnsupportedDialectError, load_kernel, simulate

IMPORT_FORMS = """\
import numpy as np
import neuronxcc.nki as nki
from neuronxcc import nki as nki2
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.typing as nt
import neuronxcc.nki.compiler as ncc
from neuronxcc.nki.language import par_dim
from neuronxcc.nki import trace, baremetal, benchmark, simulate_kernel
import nki.language as nl2
from nki import isa as nisa2

@nki.jit
def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((par_dim(128), 64), dtype=nl.float32, buffer=ncc.sbuf)
    t[...] = nl2.load(a)
    nl.store(out, value=nisa2.tensor_scalar(t, np.multiply, 2.0))
    return out
"""


def _nki_names():
    return {k: v for k, v in sys.modules.items() if k == "nki" or k.startswith(("nki.", "neuronxcc"))}


def test_all_import_forms_resolve_to_the_shim_and_sys_modules_is_restored():
    sentinel = types.ModuleType("nki")
    sys.modules["nki"] = sentinel
    try:
        before = _nki_names()
        mod = load_kernel(IMPORT_FORMS)
        a = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
        out = simulate(mod.kernel, a).outputs[0]
        np.testing.assert_array_equal(out, 2 * a)
        assert _nki_names() == before and sys.modules["nki"] is sentinel
        assert "neuronxcc" not in sys.modules
    finally:
        sys.modules.pop("nki", None)


def test_imports_inside_the_kernel_body_resolve_at_run_time():
    src = """
def kernel(a):
    import neuronxcc.nki.language as nl
    from neuronxcc.nki import isa as nisa
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nisa.activation(op=nl.exp, data=nl.load(a)))
    return out
"""
    mod = load_kernel(src)
    a = np.zeros((4, 8), np.float32)
    np.testing.assert_array_equal(simulate(mod.kernel, a).outputs[0], np.ones((4, 8)))
    assert "neuronxcc" not in sys.modules and "nki" not in sys.modules


def test_kernel_file_with_extra_module_level_imports_loads_when_they_are_stubbed(monkeypatch):
    src = "import torch\nfrom torch_neuronx import nki_jit\n" + IMPORT_FORMS
    with pytest.raises(KernelLoadError) as info:
        load_kernel(src, display="tut.py")
    assert info.value.code == "import_error" and info.value.line == 1 and info.value.file == "tut.py"
    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    stub = types.ModuleType("torch_neuronx")
    stub.nki_jit = lambda f: f
    monkeypatch.setitem(sys.modules, "torch_neuronx", stub)
    assert load_kernel(src).kernel is not None


def test_syntax_error_has_a_line():
    with pytest.raises(KernelLoadError) as info:
        load_kernel("import numpy\n\ndef k(:\n    pass\n", display="bad.py")
    assert info.value.code == "syntax_error" and info.value.line == 3


NEW_DIALECT = """\
import nki
import nki.language as nl
import nki.isa as nisa

@nki.jit
def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(t, a)
    nisa.activation(dst=t, op=nl.exp, data=t)
    return out
"""


def test_standalone_nki_dst_first_dialect_is_reported_with_its_line():
    with pytest.raises(UnsupportedDialectError) as info:
        load_kernel(NEW_DIALECT, display="new.py")
    assert info.value.code == "unsupported_dialect" and info.value.line == 9 and info.value.file == "new.py"


def test_beta_keyword_dst_calls_are_not_mistaken_for_the_new_dialect():
    src = IMPORT_FORMS + """
@nki.jit
def k2(a, res):
    t = nl.load(a)
    nisa.dma_copy(dst=t, src=t)
    nisa.activation_reduce(op=nl.exp, data=t, reduce_op=nl.add, reduce_res=res)
    return a
"""
    assert load_kernel(src).k2 is not None


def test_load_from_path_uses_the_file_name(tmp_path):
    p = tmp_path / "my_kernel.py"
    p.write_text(IMPORT_FORMS)
    mod = load_kernel(p)
    assert mod.__nki_display__ == "my_kernel.py"
    a = np.ones((128, 64), np.float32)
    assert simulate(mod.kernel, a).outputs[0].sum() == 2 * a.size


def test_dst_keyword_on_a_compute_instruction_is_the_new_dialect():
    src = "import nki.isa as nisa\nimport nki.language as nl\n\ndef k(a):\n    t = nl.load(a)\n    nisa.tensor_copy(dst=t, src=t)\n"
    with pytest.raises(UnsupportedDialectError) as info:
        load_kernel(src)
    assert info.value.line == 6 and "tensor_copy(dst=...)" in info.value.message


def test_dataclasses_and_trace_mode_helper_kernels_in_kernel_files():
    src = """
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
from dataclasses import dataclass

@dataclass(frozen=True)
class Config:
    scale: float = 2.0

@nki.jit(mode="trace")
def scale_into(dst, src, factor):
    dst[...] = nl.multiply(src, factor)

@nki.jit
def kernel(a, config=None):
    config = config or Config()
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype)
    scale_into(t, nl.load(a), config.scale)
    nl.store(out, value=t)
    return out
"""
    before = set(sys.modules)
    mod = load_kernel(src)
    assert set(sys.modules) == before  # the module is registered only while it executes
    a = np.ones((4, 4), np.float32)
    np.testing.assert_array_equal(simulate(mod.kernel, a).outputs[0], 2 * a)
    np.testing.assert_array_equal(simulate(mod.kernel, a, config=mod.Config(3.0)).outputs[0], 3 * a)
