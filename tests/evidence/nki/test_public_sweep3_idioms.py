"""Semantics the third public-kernel sweep found mishandled, each on a kernel written for the test."""

from __future__ import annotations

import numpy as np
import pytest

from evidence.nki import SimulationError, load_kernel, simulate

RNG = np.random.default_rng(23)

ROW_BROADCAST = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def offset_rows(x, row):
    p, f = x.shape
    row_sb = nl.ndarray((1, f), dtype=row.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=row_sb, src=row)
    wide = nl.broadcast_to(row_sb, (p, f), nl.float32)
    x_sb = nl.ndarray((p, f), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x_sb, src=x)
    res = nl.ndarray((p, f), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=res, data1=x_sb, data2=wide, op=nl.subtract)
    out = nl.ndarray((p, f), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)
    return out
'''


def test_standalone_broadcast_to_takes_shape_and_dtype_positionally():
    x = RNG.standard_normal((64, 24)).astype(np.float32)
    row = RNG.integers(-5, 5, (1, 24)).astype(np.int32)
    sim = simulate(load_kernel(ROW_BROADCAST, display="bc.py").offset_rows, x, row)
    np.testing.assert_allclose(sim.outputs[0], x - row.astype(np.float32), rtol=1e-6, atol=1e-6)


def test_beta_broadcast_to_with_a_positional_shape_is_a_kernel_error_at_its_line():
    beta = ROW_BROADCAST.replace("import nki\n", "from neuronxcc import nki\n").replace(
        "import nki.isa", "import neuronxcc.nki.isa").replace("import nki.language", "import neuronxcc.nki.language")
    with pytest.raises(SimulationError) as err:
        simulate(load_kernel(beta, display="bc.py").offset_rows, np.zeros((8, 4), np.float32), np.zeros((1, 4), np.int32))
    assert err.value.code == "err_broadcast_to_arguments" and (err.value.file, err.value.line) == ("bc.py", 12)
    assert "shape=" in err.value.message
