"""False findings seen on kernels built from `@nki.jit(mode='trace')` helpers (a public flash
attention, sweep 6), each next to the true positive the rule must keep:

- python-logic-on-tile: a helper's flag parameter is what its calls pass, not a tile;
- shared-hbm-nested: an output allocated under a top-level `if` on a Python value;
- sequential-without-dependency: state carried through a helper call;
- load-transpose-in-loop: a DMA transpose behind an off-by-default flag.
"""

from __future__ import annotations

from evidence.model import Severity
from evidence.static.engine import analyze
from evidence.static.model import InputBinding

HEAD = """import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
"""

X = [InputBinding("x", (512, 128), "float32")]


def _findings(source: str, rule: str, inputs=X, entry: str = "kernel"):
    a = analyze(source, inputs=inputs, entry=entry)
    assert not a.failures, a.failures
    return [f for f in a.findings if f.rule == rule]


def _line(source: str, marker: str = "# <-") -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if line.rstrip().endswith(marker))


# -- python-logic-on-tile -------------------------------------------------------------------

SCALE_HELPER = HEAD + """
@nki.jit(mode='trace')
def accumulate(acc, t, twice, window):
    if twice:  # <-
        acc[...] = nl.add(acc, nl.multiply(t, 2.0))
    else:
        acc[...] = nl.add(acc, t)
    if window > 0:
        acc[...] = nl.add(acc, t)


@nki.jit
def kernel(x, window=-1):
    out = nl.ndarray((128, 128), dtype=np.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 128), dtype=np.float32, buffer=nl.sbuf)
    for i in nl.affine_range(4):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        accumulate(acc, t, {twice}, window)
    nl.store(out, acc)
    return out
"""


def test_a_trace_helpers_python_flag_and_scalar_parameters_are_not_tiles():
    assert _findings(SCALE_HELPER.format(twice="True"), "python-logic-on-tile") == []


def test_a_flag_the_calls_leave_unknown_is_not_a_tile_either():
    # `cfg.twice` is unknown to the analysis: without evidence the parameter is no tile
    src = SCALE_HELPER.format(twice="cfg.twice").replace("def kernel(x, window=-1):", "def kernel(x, cfg, window=-1):")
    assert _findings(src, "python-logic-on-tile") == []


def test_a_tile_passed_to_a_trace_helper_and_tested_with_if_is_still_flagged():
    src = SCALE_HELPER.format(twice="t")
    assert [f.start for f in _findings(src, "python-logic-on-tile")] == [_line(src)]


def test_a_helper_parameter_used_as_a_tile_is_a_tile_when_the_calls_do_not_say():
    src = HEAD + """
@nki.jit(mode='trace')
def clip(t, mask):
    if mask:  # <-
        t[...] = nl.multiply(t, mask[...])


@nki.jit
def kernel(x, masks):
    t = nl.load(x[0:128, :])
    clip(t, masks.pick)
"""
    assert [f.start for f in _findings(src, "python-logic-on-tile")] == [_line(src)]


# -- shared-hbm-nested ----------------------------------------------------------------------

TRAINING_OUTPUT = HEAD + """
@nki.jit
def kernel(x, training=True):
    out = nl.ndarray((128, 128), dtype=np.float32, buffer=nl.shared_hbm)
    {prefix}if training:
    {prefix}    stats = nl.ndarray((128, 1), dtype=np.float32, buffer=nl.shared_hbm)  # <-
    {prefix}else:
    {prefix}    stats = None
    t = nl.load(x[0:128, :])
    nl.store(out, t)
    return out, stats
"""


def test_an_output_allocated_under_a_top_level_python_if_is_kernel_level():
    assert _findings(TRAINING_OUTPUT.format(prefix=""), "shared-hbm-nested") == []


def test_an_output_allocated_under_an_if_inside_a_loop_is_still_flagged():
    src = TRAINING_OUTPUT.format(prefix="    ").replace(
        "    out = nl.ndarray((128, 128), dtype=np.float32, buffer=nl.shared_hbm)\n",
        "    out = nl.ndarray((128, 128), dtype=np.float32, buffer=nl.shared_hbm)\n    for i in nl.affine_range(2):\n")
    found = _findings(src, "shared-hbm-nested")
    assert [f.start for f in found] == [_line(src)]
    assert "inside a loop" in found[0].message


# -- sequential-without-dependency ----------------------------------------------------------

CARRY_THROUGH_HELPER = HEAD + """
@nki.jit(mode='trace')
def update(acc, t, scale):
    acc[...] = nl.add(acc, nl.multiply(t, scale))


@nki.jit
def kernel(x):
    out = nl.ndarray((128, 128), dtype=np.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 128), dtype=np.float32, buffer=nl.sbuf)
    for i in nl.sequential_range(4):  # <-
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        {call}
    nl.store(out, acc)
    return out
"""


def test_a_sequential_loop_carrying_a_buffer_through_a_helper_call_is_not_flagged():
    assert _findings(CARRY_THROUGH_HELPER.format(call="update(acc, t, 2.0)"), "sequential-without-dependency") == []


def test_a_sequential_loop_whose_helper_call_gets_only_its_own_tiles_is_still_flagged():
    call = "fresh = nl.zeros((128, 128), dtype=np.float32, buffer=nl.sbuf)\n        update(fresh, t, 2.0)\n" \
           "        nl.store(out, fresh)"
    src = CARRY_THROUGH_HELPER.format(call=call)
    assert [f.start for f in _findings(src, "sequential-without-dependency")] == [_line(src)]


def test_a_builtin_reading_an_outer_tile_carries_nothing():
    call = "n = len(acc.shape)\n        nl.store(out, nl.multiply(t, 2.0))"
    src = CARRY_THROUGH_HELPER.format(call=call)
    assert [f.start for f in _findings(src, "sequential-without-dependency")] == [_line(src)]


# -- load-transpose-in-loop -----------------------------------------------------------------

# the entry both transpose helpers are driven from: {calls} invokes the helper
TRANSPOSE_ENTRY = """

@nki.jit
def kernel(x):
    out = nl.ndarray((128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    src = nl.load(x[0:128, :])
    dst = nl.ndarray((128, 512), dtype=np.float32, buffer=nl.sbuf)
    {calls}
    nl.store(out, dst)
    return out
"""
FLAGGED_TRANSPOSE = HEAD + """
@nki.jit(mode='trace')
def transpose_blocks(dst, src, use_dma_transpose=False):
    for j in nl.affine_range(4):
        if use_dma_transpose and nisa.get_nc_version() >= nisa.nc_version.gen3:
            dst[:, nl.ds(j * 128, 128)] = nisa.dma_transpose(src[:, nl.ds(j * 128, 128)])  # <-
        else:
            dst[:, nl.ds(j * 128, 128)] = nisa.nc_transpose(src[:, nl.ds(j * 128, 128)])

""" + TRANSPOSE_ENTRY
WIDE = [InputBinding("x", (128, 512), "float32")]


def test_a_dma_transpose_behind_a_flag_no_call_sets_is_not_flagged():
    src = FLAGGED_TRANSPOSE.format(calls="transpose_blocks(dst, src)")
    assert _findings(src, "load-transpose-in-loop", WIDE) == []


def test_a_dma_transpose_behind_a_flag_the_calls_disagree_on_is_low_and_says_so():
    src = FLAGGED_TRANSPOSE.format(calls="transpose_blocks(dst, src)\n    transpose_blocks(dst, src, use_dma_transpose=True)")
    [f] = _findings(src, "load-transpose-in-loop", WIDE)
    assert f.start == _line(src) and f.severity is Severity.low
    assert "nisa.dma_transpose" in f.message and "load_transpose2d" not in f.message
    assert "only when 'use_dma_transpose' is set (it defaults to False)" in f.message


def test_a_dma_transpose_the_calls_enable_is_flagged_at_full_severity():
    src = FLAGGED_TRANSPOSE.format(calls="transpose_blocks(dst, src, use_dma_transpose=True)")
    [f] = _findings(src, "load-transpose-in-loop", WIDE)
    assert f.severity is Severity.medium and "only when" not in f.message
    assert f.labels["api"] == "nisa.dma_transpose"


def test_an_entry_flag_the_task_does_not_pass_disables_the_branch_and_one_it_sets_enables_it():
    src = HEAD + """
@nki.jit
def kernel(x, use_dma=False):
    out = nl.ndarray((512, 128), dtype=np.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        if use_dma:
            t = nisa.dma_transpose(x[0:128, nl.ds(i * 128, 128)])  # <-
        else:
            t = nisa.nc_transpose(nl.load(x[0:128, nl.ds(i * 128, 128)]))
        nl.store(out[nl.ds(i * 128, 128), :], t)
    return out
"""
    assert _findings(src, "load-transpose-in-loop", WIDE) == []
    [f] = _findings(src, "load-transpose-in-loop", WIDE + [InputBinding("use_dma", value=True)])
    assert f.start == _line(src) and f.severity is Severity.medium


def test_a_helper_that_only_reads_a_kernel_input_carries_nothing():
    src = HEAD + """
@nki.jit(mode='trace')
def load_block(x, i):
    return nl.load(x[i * 128:(i + 1) * 128, :])


@nki.jit
def kernel(x):
    out = nl.ndarray((512, 128), dtype=np.float32, buffer=nl.shared_hbm)
    for i in nl.sequential_range(4):  # <-
        t = load_block(x, i)
        nl.store(out[i * 128:(i + 1) * 128, :], nl.exp(t))
    return out
"""
    assert [f.start for f in _findings(src, "sequential-without-dependency")] == [_line(src)]


def test_a_dma_transpose_in_the_else_of_a_negated_flag_is_guarded_by_that_flag():
    src = HEAD + """
@nki.jit(mode='trace')
def transpose_blocks(dst, src, enable_dma=False):
    for j in nl.affine_range(4):
        if nisa.get_nc_version() == nisa.nc_version.gen2 or not enable_dma:
            dst[:, nl.ds(j * 128, 128)] = nisa.nc_transpose(src[:, nl.ds(j * 128, 128)])
        else:
            dst[:, nl.ds(j * 128, 128)] = nisa.dma_transpose(src[:, nl.ds(j * 128, 128)])  # <-

""" + TRANSPOSE_ENTRY
    assert _findings(src.format(calls="transpose_blocks(dst, src)"), "load-transpose-in-loop", WIDE) == []
    both = src.format(calls="transpose_blocks(dst, src)\n    transpose_blocks(dst, src, enable_dma=True)")
    [f] = _findings(both, "load-transpose-in-loop", WIDE)
    assert f.start == _line(both) and f.severity is Severity.low and "'enable_dma'" in f.message
