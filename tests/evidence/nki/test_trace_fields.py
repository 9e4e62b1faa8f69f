"""Per-event trace fields a scheduler needs: regions read/written, forwards, DMA buffer runs,
redundant bytes, loop iteration marks, allocation sizes and releases."""

from __future__ import annotations

from evidence.nki.shim import language as nl
from evidence.nki.shim import typing as nt

from .conftest import marked_line, run_source

BLOCKS = """
    def kernel(a, b):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        buf = nl.ndarray((4, nl.par_dim(128), 512), dtype=b.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(4):
            buf[k] = nl.load(b[k * 128:(k + 1) * 128, :])  # <-load
        acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
        for k in nl.sequential_range(4):
            lhs = nl.load(a[k * 128:(k + 1) * 128, :])
            acc += nl.matmul(lhs, buf[k], transpose_x=True)  # <-mm
        nl.store(out, value=nl.copy(acc))
        return out
"""


def _blocks():
    sim, src = run_source(BLOCKS, "kernel", nt.tensor[[512, 128], nl.bfloat16], nt.tensor[[512, 512], nl.bfloat16],
                          trace_only=True)
    return sim, src, sim.trace


def test_block_views_give_region_keys_and_loads_forward_into_them():
    sim, src, ev = _blocks()
    loads = [e for e in ev if e.line == marked_line(src, "# <-load")]
    mms = [e for e in ev if e.line == marked_line(src, "# <-mm")]
    assert len(loads) == 4 and len(mms) == 4
    rec_forwards = sim_forwards(sim)
    buf_id = mms[0].rd[1][0]
    # every k: the load's fresh result is bound to buf[k]; the matmul reads exactly buf[k]
    for k, (ld, mm) in enumerate(zip(loads, mms)):
        assert mm.rd[1] == (buf_id, (k,))
        assert ((buf_id, (k,)), (ld.wr,)) in rec_forwards
    # psum `+=` forwards the matmul's fresh result into the accumulator
    acc_keys = {dst for dst, srcs in rec_forwards if any(s in [m.wr for m in mms] for s in srcs)}
    assert len(acc_keys) == 1


def sim_forwards(sim):
    return [(dst, srcs) for _, dst, srcs in sim.recorder.forwards]


def test_loop_marks_name_the_iterator_kind_and_iteration():
    sim, _, _ = _blocks()
    _, src, _ = _blocks()
    kinds = [(kind, it) for _, _, kind, it, _ in sim.recorder.marks]
    assert kinds == [("affine", i) for i in range(4)] + [("sequential", i) for i in range(4)]
    lines = {line for *_, line in sim.recorder.marks}
    assert lines == {marked_line(src, "for k in nl.affine_range(4)"), marked_line(src, "for k in nl.sequential_range(4)")}


def test_onchip_allocations_have_sizes_and_releases():
    sim, _, ev = _blocks()
    rec = sim.recorder
    buf_id = [e for e in ev if e.op == "matmul"][0].rd[1][0]
    assert rec.allocs[buf_id] == ("sbuf", 4 * 512 * 2)  # bytes per partition
    acc_id = [e for e in ev if e.op == "zeros"][0].wr[0]
    assert rec.allocs[acc_id] == ("psum", 1)  # banks
    released = {uid for _, uid in rec.frees}
    lhs_ids = {e.wr[0] for e in ev if e.op == "load" and e.partitions == 128 and e.shapes[-1] == (128, 128)}
    assert len(lhs_ids) == 4 and lhs_ids & released  # tiles rebound each iteration are released


def test_dma_run_is_the_contiguous_hbm_run_capped_by_bytes_per_partition():
    body = """
        def kernel(x):
            out = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.shared_hbm)
            a = nl.load(x[0:128, 0:512])          # <-rows
            b = nl.load(x[0:128, :])              # <-whole
            i_p, i_f = nl.mgrid[0:128, 0:128]
            t = nl.load(x[i_f, i_p])              # <-transposed
            c = nl.load(x[0:128, 0:512])          # <-again
            nl.store(out, value=t)
            return out
    """
    sim, src = run_source(body, "kernel", nt.tensor[[128, 2048], nl.bfloat16], trace_only=True)
    by_line = {e.line: e for e in sim.trace if e.op == "load"}
    assert by_line[marked_line(src, "# <-rows")].run == 512 * 2
    assert by_line[marked_line(src, "# <-whole")].run == 2048 * 2  # contiguous rows, one partition each
    assert by_line[marked_line(src, "# <-transposed")].run == 2  # one element per DMA buffer
    assert by_line[marked_line(src, "# <-rows")].redundant == 0
    assert by_line[marked_line(src, "# <-again")].redundant == 128 * 512 * 2


def test_report_keeps_per_line_partitions_free_sizes_and_dma_bytes():
    """The per-line statistics that corroborate static findings (issue 10.3): a row vector loaded once
    per tile and broadcast runs its compute at 128 partitions; a column walk runs at 1 element each."""
    import numpy as np

    from evidence.nki import load_kernel, simulate

    src = (
        "import numpy as np\nimport neuronxcc.nki as nki\nimport neuronxcc.nki.isa as nisa\nimport neuronxcc.nki.language as nl\n"
        "@nki.jit\ndef k(x, g):\n    out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)\n"
        "    t = nl.load(x)\n    row = nl.load(g)\n    gb = nl.broadcast_to(row, shape=(128, 64))\n"
        "    y = nl.multiply(t, gb)\n    s = nl.zeros((128, 1), dtype=nl.float32)\n"
        "    for j in nl.sequential_range(64):\n        s[...] = nisa.tensor_tensor(s, y[:, j:j + 1], np.add)\n"
        "    nl.store(out, value=s)\n    return out\n"
    )
    mod = load_kernel(src)
    x, g = np.ones((128, 64), np.float32), np.full((1, 64), 2.0, np.float32)
    r = simulate(mod.k, x, g).report
    by_line = {s.line: s for s in r.lines}
    assert by_line[9].dma_count == 1 and by_line[9].dma_bytes == 256  # the [1, 64] fp32 row
    assert by_line[11].partitions_mean == 128 and by_line[11].free_elements_mean == 64
    walk = by_line[14]
    assert (walk.instructions, walk.tiny_instructions, walk.free_elements_mean) == (64, 64, 1.0)
    assert r.tiny_instr_count >= 64 and 0 < r.free_elements_mean < 64


def test_dma_run_of_a_masked_grid_with_a_trailing_unit_axis_is_the_row():
    """A ragged-tile load through a three-axis grid whose last axis has one element (the unit axis
    lifts a [1, F] parameter row) still moves whole rows: the run is the row, not one element."""
    body = """
        def kernel(x):
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            rows_p, cols_f, unit = nl.mgrid[0:128, 0:x.shape[1], 0:1]
            for t in nl.affine_range(2):
                keep = t * 128 + rows_p < x.shape[0]
                tile = nl.load(x[t * 128 + rows_p, cols_f], mask=keep)  # <-ragged
                nl.store(out[t * 128 + rows_p, cols_f], value=nl.exp(tile), mask=keep)
            return out
    """
    sim, src = run_source(body, "kernel", nt.tensor[[200, 96], nl.float32], trace_only=True)
    runs = [e.run for e in sim.trace if e.line == marked_line(src, "# <-ragged")]
    assert runs == [96 * 4, 96 * 4]  # the full tile and the masked last tile
