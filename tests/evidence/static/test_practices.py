"""Positive facts (issue 10.4): what a good kernel does right, as citable items with lines."""

from __future__ import annotations

from evidence.static.engine import analyze, bindings_from
from evidence.static.practices import practice_items

HEAD = "import numpy as np\nimport neuronxcc.nki as nki\nimport neuronxcc.nki.isa as nisa\nimport neuronxcc.nki.language as nl\n"

SOFTMAX = HEAD + """
@nki.jit
def softmax(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(cols)[None, :]
    for t in nl.affine_range((rows + 127) // 128):
        r = t * 128 + i_p
        tile = nl.load(x[r, i_f], mask=r < rows)
        neg_max = nisa.tensor_reduce(np.max, tile, axis=[1], negate=True, keepdims=True, dtype=nl.float32, mask=r < rows)
        total = nl.ndarray((128, 1), dtype=nl.float32)
        e = nisa.activation_reduce(op=nl.exp, data=tile, bias=neg_max, reduce_op=np.add, reduce_res=total,
                                   dtype=nl.float32, mask=r < rows)
        y = nisa.tensor_scalar(e, np.multiply, nl.reciprocal(total), dtype=x.dtype, mask=r < rows)
        nl.store(out[r, i_f], value=y, mask=r < rows)
    return out
"""

MATMUL = HEAD + """
@nki.jit
def matmul(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // TN):
            acc = nl.zeros((128, TN), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                a = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                b = nl.load(rhs[k * 128:(k + 1) * 128, n * TN:(n + 1) * TN])
                acc += nisa.nc_matmul(a, b)
            nl.store(out[m * 128:(m + 1) * 128, n * TN:(n + 1) * TN], value=nl.copy(acc, dtype=lhsT.dtype))
    return out
"""


def _practices(src, inputs, entry):
    a = analyze(src, inputs=bindings_from(inputs), entry=entry)
    return {i.kind: i for i in practice_items(a, "nki-static@1")}


def test_a_masked_softmax_with_fp32_statistics_shows_its_masks_statistics_and_fused_instructions():
    got = _practices(SOFTMAX, {"x": ((300, 1024), "bfloat16")}, "softmax")
    assert set(got) == {"nki.masked_tail", "nki.fp32_statistics", "nki.fused_instructions", "nki.platform_idioms"}
    assert got["nki.masked_tail"].labels["lines"] == "14,15,17,19,20"
    assert got["nki.masked_tail"].metrics["masked_dmas"] == 2
    stats = got["nki.fp32_statistics"]
    assert stats.labels["lines"] == "15,17" and stats.metrics["on_low_precision_data"] == 2
    assert "activation_reduce" in got["nki.fused_instructions"].title


def test_bf16_statistics_are_not_shown_as_fp32_statistics():
    src = SOFTMAX.replace("reduce_res=total,", "reduce_res=total_bf16,").replace(
        "total = nl.ndarray((128, 1), dtype=nl.float32)", "total_bf16 = nl.ndarray((128, 1), dtype=nl.bfloat16)")
    src = src.replace("keepdims=True, dtype=nl.float32", "keepdims=True, dtype=nl.bfloat16").replace(
        "nl.reciprocal(total)", "nl.reciprocal(total_bf16)")
    assert "nki.fp32_statistics" not in _practices(src, {"x": ((300, 1024), "bfloat16")}, "softmax")


def test_a_full_tile_bf16_matmul_accumulating_in_psum():
    got = _practices(MATMUL.replace("TN", "512"), {"lhsT": ((256, 256), "bfloat16"), "rhs": ((256, 1024), "bfloat16")},
                     "matmul")
    assert set(got) == {"nki.psum_accumulation", "nki.matmul_tiles", "nki.low_precision_operands", "nki.platform_idioms"}
    assert got["nki.platform_idioms"].labels["idioms"] == "affine_range loops,kernel-level shared_hbm outputs,nisa instructions"
    tiles = got["nki.matmul_tiles"]
    assert (tiles.metrics["moving_free"], tiles.metrics["stationary_free"]) == (512, 128)
    assert got["nki.psum_accumulation"].location.start_line == 17


def test_narrow_moving_tiles_and_fp32_operands_earn_no_tile_or_dtype_fact():
    got = _practices(MATMUL.replace("TN", "128"), {"lhsT": ((256, 256), "float32"), "rhs": ((256, 1024), "float32")},
                     "matmul")
    assert set(got) == {"nki.psum_accumulation", "nki.platform_idioms"}


DOUBLE_ROW = HEAD + """
@nki.jit
def double_row(lhsT, rhs):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.load(lhsT)
    b = nl.load(rhs)
    acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
    i_k, i_t, i_m = nl.mgrid[0:128, 0:2, 0:128]
    j_k, j_t, j_n = nl.mgrid[0:128, 0:2, 0:512]
    acc += nisa.nc_matmul(a[i_k, i_t * 128 + i_m], b[j_k, j_t * 512 + j_n], perf_mode='double_row_gen3')
    nl.store(out, value=nl.copy(acc))
    return out
"""


def test_double_row_matmul_tiles_are_reported_per_row():
    inputs = {"lhsT": ((128, 256), "float8_e4m3"), "rhs": ((128, 1024), "float8_e4m3")}
    tiles = _practices(DOUBLE_ROW, inputs, "double_row")["nki.matmul_tiles"]
    assert (tiles.metrics["stationary_free"], tiles.metrics["moving_free"]) == (128, 512)
    assert "two K rows per partition" in tiles.title and "stationary 128, moving 512" in tiles.title
    a = analyze(DOUBLE_ROW, inputs=bindings_from(inputs), entry="double_row")
    assert not [f for f in a.findings if f.rule.startswith("matmul")]  # [K, 2, 128] x [K, 2, 512] is in limits
