"""Row maximum inside a per-row column window [lo, hi), nki 0.3+ style: ``nisa.range_select``
over column tiles accumulates into the engine's reduce register (reset on the first tile, written
to ``reduce_res`` on the last); a second kernel does a predicate max with ``nisa.select_reduce``."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "windowed_row_max_kernel"
REFERENCE = "windowed_row_max_ref"


@nki.jit
def windowed_row_max_kernel(x, lo, hi):
    rows, cols = x.shape
    TF = 256
    out = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    lo_t = nl.load(lo)
    hi_t = nl.load(hi)
    res = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
    n_tiles = cols // TF
    for j in range(n_tiles):
        tile = nl.load(x[:, j * TF:(j + 1) * TF])
        kept = nl.ndarray((rows, TF), dtype=nl.float32, buffer=nl.sbuf)
        cmd = nisa.reduce_cmd.reset_reduce if j == 0 else nisa.reduce_cmd.reduce
        nisa.range_select(dst=kept, on_true_tile=tile, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=lo_t,
                          bound1=hi_t, reduce_cmd=cmd, reduce_res=res if j == n_tiles - 1 else None,
                          reduce_op=nl.maximum, range_start=j * TF, on_false_value=nl.fp32.min)
    nl.store(out, value=res)
    return out


@nki.jit
def masked_row_max_kernel(x, keep):
    rows, cols = x.shape
    out = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    picked = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.shared_hbm)
    sel = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.sbuf)
    res = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.select_reduce(dst=sel, predicate=nl.load(keep), on_true=nl.load(x), on_false=nl.fp32.min,
                       reduce_res=res, reduce_cmd=nisa.reduce_cmd.reset_reduce, reduce_op=nl.maximum)
    nl.store(out, value=res)
    nl.store(picked, value=sel)
    return out, picked


def windowed_row_max_ref(x, lo, hi):
    idx = np.arange(x.shape[1])[None, :]
    inside = (idx >= lo) & (idx < hi)
    return np.where(inside, x, np.finfo(np.float32).min).max(axis=1, keepdims=True).astype(np.float32)


def masked_row_max_ref(x, keep):
    picked = np.where(keep != 0, x, np.finfo(np.float32).min).astype(np.float32)
    return picked.max(axis=1, keepdims=True), picked


CASES = [
    {"name": "fp32_128x768", "inputs": [
        {"name": "x", "shape": [128, 768], "dtype": "float32"},
        {"name": "lo", "shape": [128, 1], "dtype": "float32", "dist": "randint", "low": 0, "high": 300},
        {"name": "hi", "shape": [128, 1], "dtype": "float32", "dist": "randint", "low": 301, "high": 768}]},
    {"name": "select_reduce_64x200", "kernel": "masked_row_max_kernel", "reference": "masked_row_max_ref", "inputs": [
        {"name": "x", "shape": [64, 200], "dtype": "float32"},
        {"name": "keep", "shape": [64, 200], "dtype": "uint8", "dist": "randint", "low": 0, "high": 2}]},
]
