"""GpSimd gathers, nki 0.3+ style: ``nisa.local_gather`` (per-core 4-element segments),
``nisa.sequence_bounds`` of segment ids, and dynamic-column copies with
``nisa.tensor_copy_dynamic_src`` whose source is an ``.ap()`` pattern moved by a [1, 1] offset tile."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "gather_kernel"
REFERENCE = "gather_ref"


@nki.jit
def gather_kernel(src, offsets):
    P, F = src.shape
    _, n_idx = offsets.shape
    out = nl.ndarray((P, 16 * n_idx, 4), dtype=src.dtype, buffer=nl.shared_hbm)
    got = nl.ndarray((P, 16 * n_idx, 4), dtype=src.dtype, buffer=nl.sbuf)
    nisa.local_gather(dst=got, src_buffer=nl.load(src), index=nl.load(offsets), num_elem_per_idx=4)
    nl.store(out, value=got)
    return out


@nki.jit
def bounds_kernel(segment_ids):
    m, n = segment_ids.shape
    out = nl.ndarray((m, 2, n), dtype=segment_ids.dtype, buffer=nl.shared_hbm)
    bounds = nl.ndarray((m, 2, n), dtype=segment_ids.dtype, buffer=nl.sbuf)
    nisa.sequence_bounds(dst=bounds, segment_ids=nl.load(segment_ids))
    nl.store(out, value=bounds)
    return out


@nki.jit
def pick_columns_kernel(x, cols):
    P, F = x.shape
    _, n = cols.shape
    out = nl.ndarray((P, n), dtype=x.dtype, buffer=nl.shared_hbm)
    xt = nl.load(x)
    ct = nl.load(cols)
    picked = nl.ndarray((P, n), dtype=x.dtype, buffer=nl.sbuf)
    for j in range(n):
        nisa.tensor_copy_dynamic_src(dst=picked[:, j:j + 1],
                                     src=xt.ap(pattern=[[F, P], [1, 1]], scalar_offset=ct[0:1, j:j + 1],
                                               indirect_dim=1))
    nl.store(out, value=picked)
    return out


def gather_ref(src, offsets):
    P = src.shape[0]
    out = np.empty((P, 16 * offsets.shape[1], 4), dtype=src.dtype)
    for core in range(0, P, 16):
        starts = offsets[core:core + 16].astype(np.int64).flatten(order="F")
        cols = starts[:, None] + np.arange(4)[None, :]
        out[core:core + 16] = src[core:core + 16][:, cols]
    return out


def bounds_ref(segment_ids):
    out = np.empty((segment_ids.shape[0], 2, segment_ids.shape[1]), dtype=segment_ids.dtype)
    for r, seq in enumerate(segment_ids):
        n = len(seq)
        for i in range(n):
            if seq[i] == 0:
                out[r, 0, i], out[r, 1, i] = n, -1
                continue
            s0 = i
            while s0 > 0 and seq[s0 - 1] == seq[i]:
                s0 -= 1
            e0 = i + 1
            while e0 < n and seq[e0] == seq[i]:
                e0 += 1
            out[r, 0, i], out[r, 1, i] = s0, e0
    return out


def pick_columns_ref(x, cols):
    return x[:, cols[0].astype(np.int64)]


CASES = [
    {"name": "fp32_128x256_two_offsets", "inputs": [
        {"name": "src", "shape": [128, 256], "dtype": "float32"},
        {"name": "offsets", "shape": [128, 2], "dtype": "uint16", "dist": "randint", "low": 0, "high": 252}]},
    {"name": "segments_1x96", "kernel": "bounds_kernel", "reference": "bounds_ref", "inputs": [
        {"name": "segment_ids", "shape": [1, 96], "dtype": "int32", "dist": "randint", "low": 0, "high": 4}]},
    {"name": "dynamic_columns", "kernel": "pick_columns_kernel", "reference": "pick_columns_ref", "inputs": [
        {"name": "x", "shape": [128, 300], "dtype": "float32"},
        {"name": "cols", "shape": [1, 12], "dtype": "int32", "dist": "randint", "low": 0, "high": 300}]},
]
