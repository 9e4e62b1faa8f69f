"""Semantics the fifth public-kernel sweep found mishandled, each on a kernel written for the test."""

from __future__ import annotations

import numpy as np
import pytest

from evidence.nki import SimulationError, load_kernel, simulate

RNG = np.random.default_rng(53)

# A masked result tile ([P, F], valid only where the mask held) stored through a two-index access of a 3-D
# tensor: the access is [P, F, G] and the tile broadcasts along G.
MASKED_STORE_BROADCAST = '''
import numpy as np
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


def doubled(x, y):
    pi, fi = nl.mgrid[0:128, 0:64]
    mask = (pi < ROWS) & (fi < 64)
    data = nl.load(x[pi, fi], mask=mask)
    res = nisa.tensor_scalar(data, np.multiply, 2.0, mask=mask)
    nl.store(y[pi, fi], res, mask=mask)
'''


def test_masked_tile_stored_into_a_wider_access_broadcasts_its_valid_region():
    mod = load_kernel(MASKED_STORE_BROADCAST.replace("ROWS", "100"), display="bcast.py")
    x = RNG.standard_normal((128, 64)).astype(np.float32)
    sim = simulate(mod.doubled, x, np.zeros((128, 64, 3), np.float32))
    expect = np.zeros((128, 64, 3), np.float32)
    expect[:100] = 2 * x[:100, :, None]
    np.testing.assert_array_equal(sim.outputs[0], expect)


def test_masked_tile_stored_out_of_bounds_of_a_3d_tensor_is_the_access_error_not_a_simulator_crash():
    mod = load_kernel(MASKED_STORE_BROADCAST.replace("ROWS", "128"), display="oob.py")
    x = RNG.standard_normal((128, 64)).astype(np.float32)
    with pytest.raises(SimulationError) as exc:
        simulate(mod.doubled, x, np.zeros((2, 64, 64), np.float32))
    assert exc.value.code == "err_tensor_access_out_of_bound"


# Ragged rows through masked 128-row tiles: the masks keep 300 of the 384 rows loaded and stored.
MASKED_RAGGED_COPY = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def scaled(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    ip, jf = nl.mgrid[0:128, 0:cols]
    for t in nl.affine_range((rows + 127) // 128):
        keep = t * 128 + ip < rows
        tile = nl.load(x[t * 128 + ip, jf], mask=keep)
        res = nisa.tensor_scalar(tile, np.multiply, 3.0, mask=keep)
        nl.store(out[t * 128 + ip, jf], res, mask=keep)
    return out
'''


def test_masked_transfers_and_instructions_count_only_the_elements_their_masks_keep():
    mod = load_kernel(MASKED_RAGGED_COPY, display="ragged.py")
    x = RNG.standard_normal((300, 512)).astype(np.float32)
    sim = simulate(mod.scaled, x)
    np.testing.assert_array_equal(sim.outputs[0], 3 * x)
    rep = sim.report
    assert rep.hbm_read_bytes == x.nbytes  # not 384 rows' worth
    assert rep.hbm_write_bytes == x.nbytes
    # engine fill judges the tiling the kernel chose: a masked ragged tile's compute keeps its 128 partitions
    assert rep.partition_utilisation == 1.0


# A fp16 matmul whose moving operand is a block of an on-chip buffer allocated with `dtype=dtype`, the dtype of
# an input (`dtype = b.dtype`), and filled from a PSUM loop reduction: fp16 operands, never fp32.
FP16_BUFFER_MATMUL = '''
import numpy as np
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


def scaled_products(a_in, b_in, alpha):
    dtype = b_in.dtype
    out = nl.ndarray((128, 512), dtype=dtype, buffer=nl.shared_hbm)
    x = nl.load(a_in)
    buf = nl.zeros((2, nl.par_dim(128), 512), dtype=dtype, buffer=nl.sbuf)
    acc = nl.zeros((2, nl.par_dim(128), 512), dtype=dtype, buffer=nl.sbuf)
    for i in nl.affine_range(2):
        ps = nl.zeros((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
        ps += nisa.nc_matmul(x, nl.load(b_in))
        acc[i] = nl.loop_reduce(ps, op=np.add, loop_indices=[i])
        buf[i] = nisa.tensor_scalar(acc[i], np.multiply, alpha)
    c = nisa.nc_matmul(x, buf[1])
    nl.store(out, value=c)
    return out
'''


def _static_kinds(inputs: list[dict], source: str = FP16_BUFFER_MATMUL) -> dict[str, object]:
    from evidence.static.collectors import NkiStaticCollector
    from evidence.submission import Manifest, Submission

    manifest = Manifest.model_validate({"task": {"id": "mm", "title": "mm"},
                                        "kernel": {"file": "k.py", "entry": "scaled_products"}, "inputs": inputs})
    items = NkiStaticCollector().collect(Submission(manifest=manifest, files={"k.py": source}))
    return {i.kind: i for i in items}


def test_inputs_the_manifest_names_otherwise_bind_by_position_beside_one_named_alike():
    # "a"/"b" are not parameter names, "alpha" is: a and b still are the fp16 tensors at positions 0 and 1
    kinds = _static_kinds([{"name": "a", "shape": [128, 128], "dtype": "float16"},
                           {"name": "b", "shape": [128, 512], "dtype": "float16"},
                           {"name": "alpha", "value": 0.5}])
    assert "nki.fp32-matmul-operands" not in kinds
    # and bound they are: the same kernel given fp32 tensors at those positions is fed fp32 operands
    kinds = _static_kinds([{"name": "a", "shape": [128, 128], "dtype": "float32"},
                           {"name": "b", "shape": [128, 512], "dtype": "float32"},
                           {"name": "alpha", "value": 0.5}])
    assert kinds["nki.fp32-matmul-operands"].labels["operand_dtypes"] == "float32,float32"


def test_an_allocation_dtype_the_analysis_cannot_resolve_is_unknown_not_float32():
    from evidence.static.engine import analyze

    # no task inputs: `b_in.dtype` is unknown, so nothing says the operands are fp32
    analysis = analyze(FP16_BUFFER_MATMUL, inputs=(), entry="scaled_products")
    assert not [f for f in analysis.findings if f.rule == "fp32-matmul-operands"]
