"""Product batches (evidence.nki.product_batch): consecutive matmuls and their PSUM `+=` run as one
worker job of a few numpy calls, and give exactly what one call per instruction gives."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from evidence.nki import load_kernel, simulate
from evidence.nki import pipeline as pipeline_module
from evidence.nki.product_batch import ProductBatch

from .conftest import run_source

LAYOUTS = """
    def kernel(lhsT, rhs, small):
        K, M = lhsT.shape
        _, N = rhs.shape
        out = nl.ndarray((M, 5 * 256 + 2), dtype=nl.float32, buffer=nl.shared_hbm)
        KT = K // 128
        stat = nl.ndarray((KT, nl.par_dim(128), M), dtype=lhsT.dtype)
        movs = nl.ndarray((KT, nl.par_dim(128), N), dtype=rhs.dtype)
        for k in nl.affine_range(KT):
            stat[k] = nl.load(lhsT[k * 128:(k + 1) * 128, :])
            movs[k] = nl.load(rhs[k * 128:(k + 1) * 128, :])
        # operands at equal steps in block tensors (a strided stack); bf16 ones converted once per stack
        acc = nl.zeros((M, 512), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(KT):
            acc += nisa.nc_matmul(stat[k], movs[k, :, 0:512])
        nl.store(out[:, 0:512], value=nl.copy(acc))
        # fresh tiles per step (stacked by copying), two accumulators taking turns, one of them a
        # column slice of a wider PSUM tile
        wide = nl.zeros((M, 512), dtype=nl.float32, buffer=nl.psum)
        other = nl.zeros((M, 256), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(KT):
            s = nl.load(lhsT[k * 128:(k + 1) * 128, :])
            m = nl.load(rhs[k * 128:(k + 1) * 128, 256:512])
            wide[:, 0:256] += nisa.nc_matmul(s, m)
            other += nisa.nc_matmul(stat[k], m)
        nl.store(out[:, 512:768], value=nl.copy(wide[:, 0:256]))
        nl.store(out[:, 768:1024], value=nl.copy(other))
        # x untransposed ([M, K] on the partitions), free axes of 3-D tiles flattened
        last = nl.zeros((M, 256), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(KT):
            x = nl.transpose(stat[k])
            y = nl.ndarray((nl.par_dim(128), 2, 128), dtype=rhs.dtype)
            y[:, 0, :] = nl.load(rhs[k * 128:(k + 1) * 128, 512:640])
            y[:, 1, :] = nl.load(rhs[k * 128:(k + 1) * 128, 640:768])
            last += nl.matmul(x, y, transpose_x=False)
        nl.store(out[:, 1024:1280], value=nl.copy(last))
        # single-element products: accumulated one by one (no reduction over tiny items)
        one = nl.zeros((1, 1), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(KT):
            v = nl.load(small[k * 128:(k + 1) * 128, 0:1])
            one += nisa.nc_matmul(v, v)
        nl.store(out[0:1, 1280:1281], value=nl.copy(one))
        # a product read on its own after the accumulation: its slot keeps its values
        part = nisa.nc_matmul(stat[0], movs[0, :, 0:1])
        nl.store(out[:, 1281:1282], value=nl.copy(part))
        return out
"""


def _operands(dtype):
    rng = np.random.default_rng(11)
    scale = np.float32(1e3)  # large magnitudes: any change in summation order shows in the low bits
    lhsT = (rng.standard_normal((1024, 128), dtype=np.float32) * scale).astype(dtype)
    rhs = (rng.standard_normal((1024, 768), dtype=np.float32) * scale).astype(dtype)
    small = rng.standard_normal((1024, 1), dtype=np.float32).astype(dtype)
    return lhsT, rhs, small


def _serial_and_batched(monkeypatch, run):
    """`run()` inline (no worker threads: one call per instruction) and with two workers (batches)."""
    runs = []
    for workers in ("0", "2"):
        monkeypatch.setenv("NKI_SIM_WORKERS", workers)
        runs.append(run())
    return runs


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_batched_products_give_the_serial_results_bit_for_bit(monkeypatch, dtype):
    args = _operands(dtype)
    serial, batched = _serial_and_batched(monkeypatch, lambda: run_source(LAYOUTS, "kernel", *args)[0])
    assert serial.outputs[0].view(np.int32).tolist() == batched.outputs[0].view(np.int32).tolist()
    assert serial.report.model_dump() == batched.report.model_dump()
    assert serial.trace == batched.trace
    a, b, s = (x.astype(np.float64) for x in args)
    ref = a.T @ b[:, 0:512]
    assert np.abs(batched.outputs[0][:, 0:512] - ref).max() <= 1e-5 * np.abs(ref).max()
    np.testing.assert_allclose(batched.outputs[0][0, 1280], (s * s).sum(), rtol=1e-5)


def _eight_tiles_kernel(cols: int, body: str) -> str:
    """A kernel that loads 8 stationary [128, 128] and 8 moving [128, 512] tiles, then runs `body`."""
    return f"""
    def kernel(lhsT, rhs):
        out = nl.ndarray((128, {cols}), dtype=nl.float32, buffer=nl.shared_hbm)
        stat = nl.ndarray((8, nl.par_dim(128), 128), dtype=lhsT.dtype)
        movs = nl.ndarray((8, nl.par_dim(128), 512), dtype=rhs.dtype)
        for k in nl.affine_range(8):
            stat[k] = nl.load(lhsT[k * 128:(k + 1) * 128, :])
            movs[k] = nl.load(rhs[k * 128:(k + 1) * 128, :])
{body}        return out
"""


def _eight_tiles_bit_identical(monkeypatch, source: str, seed: int):
    """An `_eight_tiles_kernel` run inline and with workers on large-magnitude fp32 operands: the outputs
    must agree bit for bit. The batched output and the operands in float64."""
    rng = np.random.default_rng(seed)
    lhsT = rng.standard_normal((1024, 128), dtype=np.float32) * np.float32(1e3)
    rhs = rng.standard_normal((1024, 512), dtype=np.float32) * np.float32(1e3)
    serial, batched = (sim.outputs[0] for sim in _serial_and_batched(
        monkeypatch, lambda: run_source(source, "kernel", lhsT, rhs)[0]))
    assert serial.view(np.int32).tolist() == batched.view(np.int32).tolist()
    return batched, lhsT.astype(np.float64), rhs.astype(np.float64)


ZEROS_THEN_WRITTEN = _eight_tiles_kernel(1536, """
        # a group onto fresh zeros, then a second group onto what the first left
        twice = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(8):
            twice += nisa.nc_matmul(stat[k], movs[k])
        for k in nl.affine_range(8):
            twice += nisa.nc_matmul(stat[k], movs[k])
        nl.store(out[:, 0:512], value=nl.copy(twice))
        # zeros, then written by a copy before the group: the group adds onto the copied values
        copied = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
        copied[...] = nl.copy(movs[3])
        for k in nl.affine_range(8):
            copied += nisa.nc_matmul(stat[k], movs[k])
        nl.store(out[:, 512:1024], value=nl.copy(copied))
        # zeros, then one product added on its own, then a group
        single = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
        single += nisa.nc_matmul(stat[7], movs[0])
        part = nl.copy(single)
        for k in nl.affine_range(8):
            single += nisa.nc_matmul(stat[k], movs[k])
        nl.store(out[:, 1024:1536], value=nl.add(single, part))
""")


def test_groups_onto_zeros_and_onto_written_accumulators(monkeypatch):
    """A group into a fresh `nl.zeros` tile starts from +0.0 without reading it; once any instruction
    wrote the tile (an earlier group, a copy, a single product), groups add onto its values."""
    batched, a, b = _eight_tiles_bit_identical(monkeypatch, ZEROS_THEN_WRITTEN, seed=12)
    group = a.T @ b
    scale = np.abs(group).max()
    assert np.abs(batched[:, 0:512] - 2 * group).max() <= 1e-5 * scale
    assert np.abs(batched[:, 512:1024] - (b[384:512] + group)).max() <= 1e-5 * scale
    single = a[896:1024].T @ b[0:128]
    assert np.abs(batched[:, 1024:1536] - (2 * single + group)).max() <= 1e-5 * scale


COPIES_OUT_OF_PSUM = _eight_tiles_kernel(2048, """
        blocks = nl.ndarray((4, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
        for b in nl.affine_range(3):
            acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(8):
                acc += nisa.nc_matmul(stat[(k + b) % 8], movs[k])
            if b == 0:  # the copy's result dropped at once: written straight into its block
                blocks[b] = nl.copy(acc, dtype=nl.float32)
            elif b == 1:  # kept and read again after the assignment: its own storage is filled too
                kept = nl.copy(acc, dtype=nl.float32)
                blocks[b] = kept
                nl.store(out[:, 1536:2048], value=kept)
            else:  # rounded to bf16 by the copy, widened again by the assignment
                blocks[b] = nl.copy(acc, dtype=nl.bfloat16)
        for b in nl.affine_range(3):
            nl.store(out[:, b * 512:(b + 1) * 512], value=blocks[b])
""")


def test_copies_out_of_psum_written_straight_into_their_destination(monkeypatch):
    """`dst[...] = nl.copy(psum)`: the pending copy writes its values into dst itself (one copy, not two),
    exactly as the serial run does; a copy result still held afterwards gets its values as well."""
    from evidence.nki.ops import memory

    folded = []
    real_run = memory.PendingCopy.run
    monkeypatch.setattr(memory.PendingCopy, "run", lambda self: (folded.append(self.dst is not None), real_run(self)))
    batched, a, b = _eight_tiles_bit_identical(monkeypatch, COPIES_OUT_OF_PSUM, seed=13)
    assert folded == [True, True, True]  # only the run with workers has pending copies
    group = [sum(a[((k + i) % 8) * 128:((k + i) % 8 + 1) * 128].T @ b[k * 128:(k + 1) * 128] for k in range(8))
             for i in range(3)]
    scale = np.abs(group[0]).max()
    assert np.abs(batched[:, 0:512] - group[0]).max() <= 1e-5 * scale
    assert np.abs(batched[:, 512:1024] - group[1]).max() <= 1e-5 * scale
    assert np.abs(batched[:, 1536:2048] - group[1]).max() <= 1e-5 * scale  # the kept copy's own values
    bf16 = batched[:, 1024:1536]
    assert (bf16.astype(ml_dtypes.bfloat16).astype(np.float32) == bf16).all()  # bf16 values, widened
    assert np.abs(bf16 - group[2]).max() <= 2.0**-8 * scale


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_an_accumulation_group_runs_as_one_job(monkeypatch, dtype):
    """The point of batching: a worker takes the GIL a few times per group, not twice per matmul."""
    submitted = []
    real_submit = pipeline_module.Pipeline._submit

    def counting_submit(self):
        if self.held is not None:
            submitted.append(self.held)
        real_submit(self)

    monkeypatch.setattr(pipeline_module.Pipeline, "_submit", counting_submit)
    monkeypatch.setenv("NKI_SIM_WORKERS", "2")
    body = _eight_tiles_kernel(512, """
        acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(8):
            acc += nisa.nc_matmul(stat[k], movs[k])
        nl.store(out, value=nl.copy(acc))
""")
    rng = np.random.default_rng(3)
    lhsT = rng.standard_normal((1024, 128), dtype=np.float32).astype(dtype)
    rhs = rng.standard_normal((1024, 512), dtype=np.float32).astype(dtype)
    sim, _ = run_source(body, "kernel", lhsT, rhs)
    expected = lhsT.astype(np.float64).T @ rhs.astype(np.float64)
    np.testing.assert_allclose(sim.outputs[0], expected, rtol=1e-4, atol=1e-3)
    # the 8 products with their 8 accumulations, the copy out of PSUM and the store: one job
    assert len(submitted) == 1


@pytest.mark.parametrize("shape", [(128, 512), (64, 48), (128, 1), (1, 1)])
def test_batch_run_matches_one_call_per_product(shape):
    """ProductBatch.run against np.matmul + np.add per instruction, including an accumulator that
    is not contiguous; this also pins numpy's in-order reduction over the stack's leading axis."""
    rng = np.random.default_rng(5)
    m, n = shape
    k, count = 128, 9
    xs_base = (rng.standard_normal((count + 2, k, m), dtype=np.float32) * np.float32(1e4))
    ys = [rng.standard_normal((k, n), dtype=np.float32) for _ in range(count)]  # separate arrays: copied
    wide = rng.standard_normal((m, 2 * n), dtype=np.float32) * np.float32(1e4)
    acc = wide[:, ::2]  # every other column
    expected = acc.copy()
    for i in range(count):
        np.add(expected, np.matmul(xs_base[i + 1].T, ys[i]), out=expected)
    batch = ProductBatch(("k",), (m, n), count, transpose_x=True)
    slots = [np.empty((m, n), np.float32) for _ in range(count)]
    for i in range(count):
        batch.add_product(xs_base[i + 1], ys[i], slots[i])  # `slots` holds them: their values are delivered
    batch.adds.extend((acc, i + 1, True) for i in range(count))
    batch.run()
    assert acc.view(np.int32).tolist() == expected.view(np.int32).tolist()
    last = np.matmul(xs_base[count].T, ys[-1])
    assert slots[-1].view(np.int32).tolist() == last.view(np.int32).tolist()  # the result tile's values



def test_only_products_still_held_are_delivered(monkeypatch):
    """A result tile nothing holds when the job runs (the usual `acc += nc_matmul(...)`) is not filled:
    its copy would be wasted work on every product; one still held gets the product's values."""
    rng = np.random.default_rng(6)
    xs = [rng.standard_normal((128, 64), dtype=np.float32) for _ in range(4)]
    ys = [rng.standard_normal((128, 96), dtype=np.float32) for _ in range(4)]
    batch = ProductBatch(("k",), (64, 96), 4, transpose_x=True)
    sentinel = np.float32(-7.5)
    kept = np.full((64, 96), sentinel, np.float32)
    batch.add_product(xs[0], ys[0], kept)
    for i in range(1, 4):
        batch.add_product(xs[i], ys[i], np.full((64, 96), sentinel, np.float32))  # dropped at once
    seen = []
    real_copyto = np.copyto

    def spy(dst, src, *args, **kwargs):
        seen.append(dst.shape)
        return real_copyto(dst, src, *args, **kwargs)

    monkeypatch.setattr(np, "copyto", spy)
    batch.run()
    monkeypatch.undo()
    assert seen == [(64, 96)]  # one delivery: the held tile's
    assert kept.view(np.int32).tolist() == np.matmul(xs[0].T, ys[0]).view(np.int32).tolist()


DST_FIRST = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    KT = K // 128
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    stat = nl.ndarray((128, KT * M), dtype=lhsT.dtype, buffer=nl.sbuf)
    movs = nl.ndarray((128, KT * N), dtype=rhs.dtype, buffer=nl.sbuf)
    for k in range(KT):
        nisa.dma_copy(dst=stat[:, k * M:(k + 1) * M], src=lhsT[k * 128:(k + 1) * 128, :])
        nisa.dma_copy(dst=movs[:, k * N:(k + 1) * N], src=rhs[k * 128:(k + 1) * 128, :])
    for n in range(N // 256):
        acc = nl.ndarray((M, 256), dtype=nl.float32, buffer=nl.psum)
        for k in range(KT):  # the first matmul into the fresh allocation overwrites, later ones add
            nisa.nc_matmul(dst=acc, stationary=stat[:, k * M:(k + 1) * M],
                           moving=movs[:, k * N + n * 256:k * N + (n + 1) * 256])
        again = nl.ndarray((M, 256), dtype=nl.float32, buffer=nl.psum)
        for k in range(KT):
            nisa.nc_matmul(dst=again, stationary=stat[:, k * M:(k + 1) * M],
                           moving=movs[:, k * N + n * 256:k * N + (n + 1) * 256])
        for k in range(2):  # forced: written over, then added
            nisa.nc_matmul(dst=again, stationary=stat[:, k * M:(k + 1) * M],
                           moving=movs[:, k * N + n * 256:k * N + (n + 1) * 256], accumulate=k > 0)
        first = nl.ndarray((M, 256), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=first, src=acc)
        res = nl.ndarray((M, 256), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=res, data1=first, data2=again, op=nl.add)
        nisa.dma_copy(dst=out[:, n * 256:(n + 1) * 256], src=res)
    return out
'''


def test_dst_first_matmuls_batch_with_the_serial_results(monkeypatch):
    rng = np.random.default_rng(9)
    lhsT = rng.standard_normal((512, 128), dtype=np.float32) * np.float32(1e3)
    rhs = rng.standard_normal((512, 512), dtype=np.float32) * np.float32(1e3)
    serial, batched = _serial_and_batched(
        monkeypatch, lambda: simulate(load_kernel(DST_FIRST, display="k.py").matmul, lhsT, rhs))
    assert serial.outputs[0].view(np.int32).tolist() == batched.outputs[0].view(np.int32).tolist()
    assert serial.report.model_dump() == batched.report.model_dump()
    assert serial.trace == batched.trace
    a, b = lhsT.astype(np.float64), rhs.astype(np.float64)
    ref = a.T @ b + a[:256].T @ b[:256]  # acc, plus `again` written over by its last two matmuls
    assert np.abs(batched.outputs[0] - ref).max() <= 1e-5 * np.abs(ref).max()
