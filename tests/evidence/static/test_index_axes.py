"""Index expressions over several grid axes (third public sweep): `a[i_k, i_t * 128 + i_m]` with
i_k, i_t, i_m from one `nl.mgrid` selects a [K, 2, 128] view, and the facts report what TensorE sees."""

from __future__ import annotations

from evidence.static.engine import analyze, bindings_from
from evidence.static.practices import practice_items

HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\n"


def _calls(body: str, inputs: dict):
    a = analyze(HEAD + "@nki.jit\n" + body, inputs=bindings_from(inputs))
    fn = next(f for f in a.functions if f.is_kernel)
    first: dict[int, object] = {}
    for c in fn.calls:
        first.setdefault(c.start - 4, c)  # keyed by line within the kernel
    return a, first


def test_sums_of_one_grids_axes_span_each_axis_and_anything_else_is_unknown():
    _, calls = _calls(
        "def k(x, y):\n"                                                        # 1
        "    i_k, i_t, i_m = nl.mgrid[0:128, 0:2, 0:64]\n"                      # 2
        "    a = nl.load(x[i_k, i_t * 64 + i_m])\n"                             # 3
        "    b = nl.load(x[i_k, 5 + i_m])\n"                                    # 4
        "    g = nl.mgrid[0:128, 0:32]\n"                                       # 5
        "    c = nl.load(x[i_k, i_m + g.x])\n"                                  # 6
        "    d = nl.load(y[nl.arange(128)[:, None], nl.arange(8)[None, :] * 16 + nl.arange(16)[None, :]])\n"  # 7
        "    e = nl.load(y[nl.arange(128)[:, None] * 0 + nl.arange(4)[None, :], 0:16])\n",  # 8
        {"x": ((128, 128), "float32"), "y": ((128, 128), "float32")},
    )
    assert calls[3].tensor.shape == (128, 2, 64)
    assert calls[4].tensor.shape == (128, 64)
    assert calls[6].tensor.shape == (128, None)  # two different grids: no claim on the extent
    assert calls[7].tensor.shape == (128, None)  # the same arange axis with two extents
    assert calls[8].tensor.shape == (128, 4, 16)


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
    a = analyze(DOUBLE_ROW, inputs=bindings_from({"lhsT": ((128, 256), "float8_e4m3"), "rhs": ((128, 1024), "float8_e4m3")}),
                entry="double_row")
    tiles = {i.kind: i for i in practice_items(a, "nki-static@1")}["nki.matmul_tiles"]
    assert (tiles.metrics["stationary_free"], tiles.metrics["moving_free"]) == (128, 512)
    assert "two K rows per partition" in tiles.title and "stationary 128, moving 512" in tiles.title
    assert not [f for f in a.findings if f.rule.startswith("matmul")]
