"""An `nl.*` / `nisa.*` name no documented NKI release has (in either dialect) is the kernel's defect in the
beta dialect: the run stops with `undocumented_api` at the call's line (neuronx-cc's tracer would raise
AttributeError there), told as `sim.error`. A documented op the simulator lacks stays `unsupported_op`
(`sim.incomplete`: our gap), and so does any unknown name in the standalone package, which still grows.

Kernels written for these tests."""

from __future__ import annotations

import numpy as np
import pytest

from evidence.nki import load_kernel, simulate
from evidence.documented_nki_api import documented
from evidence.nki.errors import EvidenceError, UnsupportedOpError
from evidence.nki.ops import OPS
from evidence.nki.sim_evidence import SIMULATOR_LIMIT_CODES

BETA = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa


@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    y = CALL
    nl.store(out, value=y)
    return out
'''
STANDALONE = '''import nki
import nki.language as nl
import nki.isa as nisa


@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    y = CALL
    nisa.dma_copy(dst=out, src=t)
    return out
'''


def _stop(source: str, call: str) -> EvidenceError:
    mod = load_kernel(source.replace("CALL", call), display="kernel.py")
    with pytest.raises(EvidenceError) as info:
        simulate(mod.k, np.ones((128, 64), np.float32))
    return info.value


@pytest.mark.parametrize("call, public", [("nl.fast_exp(t)", "nl.fast_exp"), ("nisa.tensor_exp(t)", "nisa.tensor_exp")])
def test_a_beta_call_of_a_name_no_release_documents_is_the_kernels_error_at_its_line(call, public):
    err = _stop(BETA, call)
    assert not isinstance(err, UnsupportedOpError)
    assert (err.code, err.file, err.line) == ("undocumented_api", "kernel.py", 10)
    assert f"'{public}' is in no documented NKI release" in err.message and "AttributeError" in err.message
    assert "\n" not in err.message and err.code not in SIMULATOR_LIMIT_CODES  # sim.error, not sim.incomplete


def test_a_documented_op_the_simulator_lacks_stays_our_limit():
    err = _stop(BETA, "nisa.quantize_mx(t)")
    assert isinstance(err, UnsupportedOpError) and err.code == "unsupported_op" and err.line == 10


def test_an_unknown_name_in_the_still_growing_standalone_package_stays_our_limit():
    err = _stop(STANDALONE, "nl.fast_exp(t)")
    assert err.code == "unsupported_op" and err.line == 11


def test_every_name_the_simulator_implements_is_documented():
    from evidence.nki.shim import isa, language
    from evidence.nki.shim.standalone import isa as sa_isa
    from evidence.nki.shim.standalone import language as sa_language

    internal = {"assign", "iadd", "inplace", "reshape", "view", "astype"}  # tile methods and operators, not nl names
    ops = {("" if n.startswith("nisa.") else "nl.") + n for n in OPS if n not in internal}
    public = {f"{space}.{n}" for space, mods in (("nl", (language, sa_language)), ("nisa", (isa, sa_isa)))
              for m in mods for n, v in vars(m).items()
              if not n.startswith("_") and getattr(v, "__module__", m.__name__) == m.__name__ and n.islower()}
    public -= {"nl.loop_iterator", "nl.missing_attribute", "nl.op_function", "nisa.op_function", "nisa.op_name",
               "nisa.reject_removed", "nisa.dispatch", "nisa.np", "nl.np", "nl.math", "nl.ml_dtypes", "nl.dataclasses",
               "nl.annotations", "nisa.annotations", "nisa.missing_attribute"}
    assert sorted(n for n in ops | public if not documented(n)) == []
