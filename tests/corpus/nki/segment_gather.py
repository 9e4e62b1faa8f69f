"""Index instructions on GpSimd: per-core gathers, segment bounds and runtime-offset copies.

``gather_kernel`` gathers 4-element runs from each 16-partition group with
``nisa.local_gather`` (offsets are element offsets, uint16). ``bounds_kernel`` computes
each element's [start, end) segment with ``nisa.sequence_bounds`` on a single partition.
``pick_columns_kernel`` copies the columns listed in an index tensor with
``nisa.tensor_copy_dynamic_src``, the offset read from SBUF at run time.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

KERNEL = "gather_kernel"
REFERENCE = "gather_ref"


@nki.jit
def gather_kernel(src, offsets):
    P, F = src.shape
    _, n_idx = offsets.shape
    out = nl.ndarray((P, 16 * n_idx, 4), dtype=src.dtype, buffer=nl.shared_hbm)
    got = nisa.local_gather(nl.load(src), nl.load(offsets), num_elem_per_idx=4)
    nl.store(out, value=got)
    return out


@nki.jit
def bounds_kernel(segment_ids):
    m, n = segment_ids.shape
    out = nl.ndarray((m, 2, n), dtype=segment_ids.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nisa.sequence_bounds(segment_ids=nl.load(segment_ids)))
    return out


@nki.jit
def pick_columns_kernel(x, cols):
    P, F = x.shape
    _, n = cols.shape
    out = nl.ndarray((P, n), dtype=x.dtype, buffer=nl.shared_hbm)
    xt = nl.load(x)
    ct = nl.load(cols)
    picked = nl.ndarray((P, n), dtype=x.dtype)
    ip, jf = nl.mgrid[0:P, 0:1]
    for j in nl.affine_range(n):
        picked[ip, j + jf] = nisa.tensor_copy_dynamic_src(xt[ip, ct[0, j] + jf])
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
    {
        "name": "fp32_128x256_two_offsets",
        "inputs": [
            {"name": "src", "shape": [128, 256], "dtype": "float32"},
            {"name": "offsets", "shape": [128, 2], "dtype": "uint16", "dist": "randint", "low": 0, "high": 252},
        ],
    },
    {
        "name": "segments_1x96",
        "kernel": "bounds_kernel",
        "reference": "bounds_ref",
        "inputs": [{"name": "segment_ids", "shape": [1, 96], "dtype": "int32", "dist": "randint", "low": 0, "high": 4}],
    },
    {
        "name": "dynamic_columns",
        "kernel": "pick_columns_kernel",
        "reference": "pick_columns_ref",
        "inputs": [
            {"name": "x", "shape": [128, 300], "dtype": "float32"},
            {"name": "cols", "shape": [1, 12], "dtype": "int32", "dist": "randint", "low": 0, "high": 300},
        ],
    },
]
