"""Symbolic shapes and constant propagation, checked on small hand-computed cases."""

from __future__ import annotations

from evidence.static.engine import analyze, bindings_from
from evidence.static.shapes import Tensor, promote, promote_scalar

HEAD = "import math\nimport neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\n"


def _calls(body: str, inputs: dict):
    a = analyze(HEAD + "BLOCK = 4\nTILE = nl.tile_size.pmax\n@nki.jit\n" + body, inputs=bindings_from(inputs))
    fn = next(f for f in a.functions if f.is_kernel)
    first: dict[int, object] = {}
    for c in fn.calls:  # the outermost call of each line, keyed relative to the kernel's def line
        first.setdefault(c.start - 7, c)
    return fn, first


def test_input_shapes_unpacking_constants_and_trip_counts():
    fn, calls = _calls(
        "def k(a, b):\n"                                              # 1
        "    M, K = a.shape\n"                                        # 2
        "    N = b.shape[1]\n"                                        # 3
        "    for i in nl.affine_range(M // TILE):\n"                  # 4
        "        for j in nl.sequential_range(math.ceil(N / 512)):\n"  # 5
        "            for s in nl.static_range(BLOCK * 2 - 1):\n"      # 6
        "                t = nl.load(a[i * TILE:(i + 1) * TILE, 0:K])\n",  # 7
        {"a": ((384, 96), "bfloat16"), "b": ((96, 1100), "float32")},
    )
    assert [(lp.kind, lp.trip, lp.depth) for lp in fn.loops] == [
        ("affine_range", 3, 1), ("sequential_range", 3, 2), ("static_range", 7, 3)]
    t = calls[7].tensor
    assert (t.shape, t.dtype, t.buffer, t.partitions, t.free_bytes) == ((128, 96), "bfloat16", "sbuf", 128, 192)
    assert calls[7].deps == {fn.loops[0].id}  # the load depends on i only


def test_allocations_par_dim_mgrid_matmul_and_reductions():
    fn, calls = _calls(
        "def k(x):\n"                                                                # 1
        "    buf = nl.ndarray((4, nl.par_dim(128), 512), dtype=nl.bfloat16)\n"     # 2
        "    g = nl.mgrid[0:128, 0:256]\n"                                        # 3
        "    v = nl.load(x[g.p, g.x])\n"                                           # 4
        "    r = nl.sum(v, axis=1, keepdims=True, dtype=nl.float32)\n"            # 5
        "    p = nisa.nc_matmul(buf[1, :, 0:128], buf[2])\n"                      # 6
        "    q = nl.matmul(v[:, 0:64], buf[0], transpose_x=False)\n"              # 7
        "    w = v * 0.5\n",                                                       # 8
        {"x": ((128, 256), "float16")},
    )
    buf = calls[2].tensor
    assert (buf.shape, buf.pdim, buf.partitions, buf.free_bytes) == ((4, 128, 512), 1, 128, 1024)
    assert calls[4].tensor.shape == (128, 256)
    assert (calls[5].tensor.shape, calls[5].tensor.dtype) == ((128, 1), "float32")
    assert (calls[6].tensor.shape, calls[6].tensor.buffer, calls[6].tensor.dtype) == ((128, 512), "psum", "float32")
    assert calls[7].tensor.shape == (128, 512)  # x is [M=128, K=64] without transpose_x


def test_integer_positions_keep_tile_rank():
    fn, calls = _calls(
        "def k(x, ids):\n"                                    # 1
        "    i_p = nl.arange(128)[:, None]\n"                 # 2
        "    idx = nl.load(ids[0:128, 0:1])\n"                # 3
        "    rows = nl.load(x[idx[i_p, 0], 0:64])\n"          # 4
        "    one = nl.load(x[3, :])\n",                       # 5
        {"x": ((1000, 64), "float32"), "ids": ((128, 1), "int32")},
    )
    assert calls[4].tensor.shape == (128, 64)  # indirect rows: one per partition of the index tile
    assert calls[5].tensor.shape == (1, 64)


def test_dtype_promotion_table():
    assert promote("float16", "bfloat16") == "float32"
    assert promote("float8_e4m3", "float8_e5m2") == "bfloat16"
    assert promote("int32", "float16") == "float16"
    assert promote_scalar("float16", 1.2) == "float32"
    assert promote_scalar("int8", 2) == "int32"
    assert promote_scalar("float32", 2.0) == "float32"


def test_unknown_values_stay_unknown():
    fn, calls = _calls("def k(a, n):\n    t = nl.load(a[0:n, :])\n", {"a": ((256, 64), "float32")})
    t = calls[2].tensor
    assert isinstance(t, Tensor) and t.shape == (None, 64) and t.partitions is None


def test_names_bound_in_branches_follow_the_branch_the_shapes_take():
    """A tile size clamped in an `if` the task's shapes decide keeps the value of the branch taken; a
    name an undecided `if` may or may not rebind is unknown afterwards rather than the branch's value."""
    fn, calls = _calls(
        "def k(a, flag):\n"                                            # 1
        "    M, N = a.shape\n"                                         # 2
        "    ROWS = TILE\n"                                            # 3
        "    if M < ROWS:\n"                                           # 4
        "        ROWS = M\n"                                           # 5
        "    elif M > 4096:\n"                                         # 6
        "        ROWS = 64\n"                                          # 7
        "    else:\n"                                                  # 8
        "        COLS = N // 2\n"                                      # 9
        "    if flag:\n"                                               # 10
        "        COLS = N\n"                                           # 11
        "    big = nl.ndarray((ROWS, 4), dtype=nl.float32)\n"          # 12
        "    wide = nl.ndarray((ROWS, COLS), dtype=nl.float32)\n",     # 13
        {"a": ((1024, 256), "float32")},
    )
    assert calls[12].tensor.shape == (128, 4)  # not (1024, 4): M < 128 is false for these shapes
    assert calls[13].tensor.shape == (128, None)  # COLS is N // 2 or N, or unbound: not known


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
