"""Loading kernels: import forms, sys.modules hygiene, imports inside bodies, dialect detection."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from evidence.nki import KernelLoadError, load_kernel, simulate

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
from neuronxcc import nki as nki3
import neuronxcc.nki.language as nl2
from neuronxcc.nki import isa as nisa2

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
    nisa.dma_copy(dst=out, src=t)
    return out
"""


def test_standalone_nki_dialect_loads_and_runs_through_its_own_shim():
    before = _nki_names()
    mod = load_kernel(NEW_DIALECT, display="new.py")
    assert mod.__nki_dialect__ == "standalone"
    a = np.linspace(-2, 2, 128 * 8, dtype=np.float32).reshape(128, 8)
    sim = simulate(mod.kernel, a)
    np.testing.assert_allclose(sim.outputs[0], np.exp(a), rtol=1e-6)
    assert sim.report.dialect == "standalone" and _nki_names() == before


def test_mixing_the_dialects_in_one_file_is_the_nki_compile_error():
    src = "import numpy as np\nimport neuronxcc.nki.language as nl\nimport nki.isa as nisa\n\ndef k(a):\n    return a\n"
    with pytest.raises(KernelLoadError) as info:
        load_kernel(src, display="mixed.py")
    assert info.value.code == "err_mixed_nki_dialects" and info.value.line == 3 and info.value.file == "mixed.py"


def test_using_a_dst_first_instruction_s_value_in_the_standalone_dialect_names_the_line():
    src = NEW_DIALECT.replace("    nisa.activation(dst=t, op=nl.exp, data=t)", "    u = nisa.activation(op=nl.exp, data=t)")
    with pytest.raises(KernelLoadError) as info:
        load_kernel(src, display="new.py")
    assert info.value.code == "err_dst_first_result_used" and info.value.line == 10
    assert "nisa.activation" in info.value.message


def test_beta_keyword_dst_calls_stay_beta():
    src = IMPORT_FORMS + """
@nki.jit
def k2(a, res):
    t = nl.load(a)
    nisa.dma_copy(dst=t, src=t)
    nisa.activation_reduce(op=nl.exp, data=t, reduce_op=nl.add, reduce_res=res)
    return a
"""
    assert load_kernel(src).__nki_dialect__ == "beta"


def test_load_from_path_uses_the_file_name(tmp_path):
    p = tmp_path / "my_kernel.py"
    p.write_text(IMPORT_FORMS)
    mod = load_kernel(p)
    assert mod.__nki_display__ == "my_kernel.py"
    a = np.ones((128, 64), np.float32)
    assert simulate(mod.kernel, a).outputs[0].sum() == 2 * a.size


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


def test_a_kernel_imports_helper_modules_from_its_submission_folder(tmp_path):
    """Multi-file nki 0.3+ kernels: helpers built on nl.NKIObject and dataclasses read tile sizes and dtype
    names at import time; relative and absolute imports of the folder's modules both resolve."""
    (tmp_path / "tiling").mkdir()
    (tmp_path / "tiling" / "__init__.py").write_text("")
    (tmp_path / "tiling" / "plan.py").write_text(
        "from dataclasses import dataclass\n"
        "import nki.language as nl\n\n"
        "SBUF_BYTES = nl.tile_size.total_available_sbuf_size\n"
        "PACKED = (nl.float8_e4m3fn_x4, nl.float8_e5m2_x4, nl.float4_e2m1fn_x4, nl.float8_e4m3)\n\n"
        "@dataclass(frozen=True)\n"
        "class Plan(nl.NKIObject):\n"
        "    rows: int\n"
        "    cols: int\n\n"
        "    @property\n"
        "    def fits(self):\n"
        "        return self.cols * 4 <= SBUF_BYTES\n")
    (tmp_path / "ops.py").write_text(
        "import nki.isa as nisa\nimport nki.language as nl\n\n"
        "def scaled_copy(dst, src, factor):\n"
        "    nisa.tensor_scalar(dst, src, nl.multiply, factor)\n")
    (tmp_path / "kernel.py").write_text(
        "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n"
        "from .tiling.plan import Plan, SBUF_BYTES\n"
        "import ops\n\n"
        "@nki.jit\n"
        "def kernel(a, scale=None, dtype=nl.float32):\n"
        "    plan = Plan(*a.shape)\n"
        "    assert plan.fits and SBUF_BYTES == 180224\n"
        "    out = nl.ndarray(a.shape, dtype=dtype, buffer=nl.shared_hbm)\n"
        "    t = nl.ndarray(a.shape, dtype=dtype, buffer=nl.sbuf)\n"
        "    nisa.dma_copy(dst=t, src=a)\n"
        "    ops.scaled_copy(t, t, 2.0 if scale == None else scale)\n"
        "    nisa.dma_copy(dst=out, src=t)\n"
        "    return out\n")
    before = dict(sys.modules)
    mod = load_kernel(tmp_path / "kernel.py", target="trn1")
    assert set(sys.modules) == set(before)  # helper modules are not left behind
    a = np.arange(128 * 16, dtype=np.float32).reshape(128, 16)
    sim = simulate(mod.kernel, a, target="trn1")
    np.testing.assert_array_equal(sim.outputs[0], 2 * a)
    np.testing.assert_array_equal(simulate(mod.kernel, a, scale=3.0, dtype=mod.nl.float32).outputs[0], 3 * a)
    (tmp_path / "ops.py").write_text("import neuronxcc.nki.language as nl\n")
    with pytest.raises(KernelLoadError) as info:
        load_kernel(tmp_path / "kernel.py")
    assert info.value.code == "err_mixed_nki_dialects"


def test_a_kernel_in_a_subfolder_imports_a_sibling_folder_of_the_submission(tmp_path):
    """Library-style trees (kernels/rowsum/kernel.py importing ..common.sizes, whose folder has no
    __init__.py) load with the submission folder as root; the kernel's own folder still serves
    absolute imports of its neighbours."""
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "sizes.py").write_text("ROWS_PER_TILE = 128\n\ndef tiles(n):\n    return -(-n // ROWS_PER_TILE)\n")
    (tmp_path / "kernels" / "rowsum").mkdir(parents=True)
    (tmp_path / "kernels" / "rowsum" / "scaling.py").write_text("FACTOR = 0.5\n")
    (tmp_path / "kernels" / "rowsum" / "kernel.py").write_text(
        "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n"
        "from ...common.sizes import ROWS_PER_TILE, tiles\n"
        "from scaling import FACTOR\n\n"
        "@nki.jit\n"
        "def half_row_sums(x):\n"
        "    rows, cols = x.shape\n"
        "    out = nl.ndarray((rows, 1), dtype=x.dtype, buffer=nl.shared_hbm)\n"
        "    for t in range(tiles(rows)):\n"
        "        n = min(ROWS_PER_TILE, rows - t * ROWS_PER_TILE)\n"
        "        tile = nl.ndarray((ROWS_PER_TILE, cols), dtype=x.dtype, buffer=nl.sbuf)\n"
        "        nisa.dma_copy(dst=tile[0:n, :], src=x[t * ROWS_PER_TILE:t * ROWS_PER_TILE + n, :])\n"
        "        acc = nl.ndarray((ROWS_PER_TILE, 1), dtype=x.dtype, buffer=nl.sbuf)\n"
        "        nisa.tensor_reduce(dst=acc[0:n, :], op=nl.add, data=tile[0:n, :], axis=1)\n"
        "        nisa.tensor_scalar(dst=acc[0:n, :], data=acc[0:n, :], op0=nl.multiply, operand0=FACTOR)\n"
        "        nisa.dma_copy(dst=out[t * ROWS_PER_TILE:t * ROWS_PER_TILE + n, :], src=acc[0:n, :])\n"
        "    return out\n")
    kernel_file = tmp_path / "kernels" / "rowsum" / "kernel.py"
    with pytest.raises(KernelLoadError) as info:  # the kernel's folder as root cannot reach ../../common
        load_kernel(kernel_file)
    # reaching above the folder given as the submission's is the kernel's defect, not a package we lack
    assert info.value.code == "submission_import_error" and "relative import" in info.value.message
    mod = load_kernel(kernel_file, root=tmp_path)
    x = np.arange(200 * 8, dtype=np.float32).reshape(200, 8)
    sim = simulate(mod.half_row_sums, x)
    np.testing.assert_allclose(sim.outputs[0], 0.5 * x.sum(axis=1, keepdims=True))
