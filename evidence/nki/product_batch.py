"""Matmul products issued one after another, and the PSUM accumulations that consume them, as one job.

A worker thread needs the GIL back after every numpy call it makes, and while the simulating thread
runs the kernel's Python it gets it only at the interpreter's switch interval: a job of two numpy calls
per matmul (the product, then the `+=` into PSUM) spent most of its time waiting for the GIL, and the
simulating thread paid for every hand-off too. So consecutive matmuls with the same operand layout
join one open batch, and their accumulations join it with them; the batch runs as a single pipeline
job of a few numpy calls: one batched matmul (numpy calls BLAS once per product, exactly as for a
single matmul) and one sequential reduction per accumulator. Results are bit-identical to the
one-call-per-instruction path (`tests/evidence/nki/test_product_batch.py` pins that).

Operands of other dtypes (bf16, fp8) are converted to fp32 once per stack, exactly as a single matmul
converts its own (bench (a), bf16: 0.28-0.33 s batched against 0.34-0.38 s one job per matmul, once
dropped products were no longer copied into their result tiles).

The batch is open while its job is the pipeline's held job and its step is that job's last: any other
pipeline work, or anything that waits for data, submits it (`Pipeline.submit`, `settle`).
"""

from __future__ import annotations

import math
import sys
import threading

import numpy as np
from numpy.lib.stride_tricks import as_strided

MAX_PRODUCTS = 32
_STACK_BYTES = 16 << 20
# np.add.reduce over the stack's leading axis adds the items in order, element by element, as the
# separate `+=` calls did; for tiny items numpy may switch to pairwise summation, so those add one by one
_REDUCE_MIN_ELEMENTS = 1024
# an accumulation's mode (beside True: add, False: write over) when the accumulator holds +0.0 everywhere
# and nothing wrote it since (`Alloc.zeros`): a reduction with initial value 0.0 adds in the same order
# without reading it, which saves a copy of it into the stack and the worker's GIL round trip for that
ONTO_ZEROS = 2
_scratch = threading.local()  # per worker thread: the stack products are computed into, reused


class ProductBatch:
    """Products computed into a stack of the worker's own (slot 0: an accumulator's starting values, for
    the reduction), then added into their accumulators. Each result tile has storage of its own, filled
    only if something still holds it when the job runs: the usual `acc += nc_matmul(...)` drops its
    result at once, so pending products cost no memory but their (untouched) buffers."""

    __slots__ = ("key", "shape", "bufs", "capacity", "xs", "ys", "adds", "job", "step", "transpose_x")

    def __init__(self, key: tuple, shape: tuple, capacity: int, transpose_x: bool) -> None:
        self.key = key
        self.shape = shape  # of each product
        self.capacity = capacity
        self.bufs: list[np.ndarray | None] = []  # each product's result storage (None: a dst-first call's)
        self.xs: list[np.ndarray] = []
        self.ys: list[np.ndarray] = []
        # (PSUM array, slot, add): the product in that slot added into the array (add True or ONTO_ZEROS),
        # or (add False) written over it, in program order
        self.adds: list[tuple[np.ndarray, int, bool]] = []
        self.job = None
        self.step = -1
        self.transpose_x = transpose_x

    @property
    def count(self) -> int:
        return len(self.bufs)

    @property
    def full(self) -> bool:
        return self.count >= self.capacity

    def open_in(self, pipeline) -> bool:
        job = pipeline.held
        return job is not None and job is self.job and len(job.steps) - 1 == self.step

    def accepts(self, pipeline, key: tuple, x, y) -> bool:
        """The next matmul can join: same layout, room left, and its operands are not written by this job."""
        return (key == self.key and not self.full and self.open_in(pipeline)
                and x.alloc.writer is not self.job and y.alloc.writer is not self.job)

    def add_product(self, xv: np.ndarray, yv: np.ndarray, buf: np.ndarray | None) -> None:
        """The next product: of `xv` and `yv`, its values delivered into `buf` (if still held then)."""
        self.xs.append(xv)
        self.ys.append(yv)
        self.bufs.append(buf)

    def slot_of(self, arr: np.ndarray) -> int:
        """The slot (1..) of the product whose storage `arr` is; 0: none of this batch's."""
        bufs = self.bufs
        for i in range(len(bufs) - 1, -1, -1):
            if bufs[i] is arr:
                return i + 1
        return 0

    def run(self) -> None:
        """The worker's part: every product, then every accumulation in program order."""
        n, xs, ys, bufs, adds = self.count, self.xs, self.ys, self.bufs, self.adds
        self.xs = self.ys = self.bufs = self.adds = []  # the arrays go with the job
        x, y = _fp32(_stacked(xs), "x"), _fp32(_stacked(ys), "y")  # one conversion per operand stack
        del xs, ys
        stack = _scratch_array("products", (n + 1,) + self.shape)
        a = x.reshape(n, x.shape[1], -1)
        a = a if self.transpose_x else a.transpose(0, 2, 1)  # stationary [K, M] per product
        b = y.reshape(n, y.shape[1], -1)
        # one BLAS call per product, exactly as a single matmul makes it
        np.matmul(a.transpose(0, 2, 1), b, out=stack[1:].reshape(n, a.shape[2], -1))
        buf = None
        for k in range(n):  # not enumerate: its cached (k, buf) tuple would count as one more holder
            buf = bufs[k]
            if buf is not None and sys.getrefcount(buf) > 3:  # held beyond `bufs`, `buf` and the call
                np.copyto(buf, stack[k + 1])
        del bufs, buf
        i = 0
        while i < len(adds):
            acc, slot, add = adds[i]
            j = i + 1  # a run of additions of the next products into the same array
            while j < len(adds) and adds[j][2] and adds[j][1] == slot + (j - i) and _same_array(adds[j][0], acc):
                j += 1
            if j - i > 1 and acc.size >= _REDUCE_MIN_ELEMENTS and (slot == 1 or add is not True):  # slot 0 is free
                if add == ONTO_ZEROS:  # ((0.0 + p1) + p2) + ..., without reading acc
                    items = stack[slot:slot + j - i].reshape((j - i,) + acc.shape)
                    np.add.reduce(items, axis=0, out=acc, initial=0.0)
                elif add:  # ((acc + p1) + p2) + ..., element by element
                    items = stack[:j - i + 1].reshape((j - i + 1,) + acc.shape)
                    np.copyto(items[0], acc)
                    np.add.reduce(items, axis=0, out=acc)
                else:  # written over by the first product: (p1 + p2) + ...
                    items = stack[slot:slot + j - i].reshape((j - i,) + acc.shape)
                    np.add.reduce(items, axis=0, out=acc)
            else:
                for acc_k, slot_k, add_k in adds[i:j]:
                    p = stack[slot_k].reshape(acc_k.shape)
                    if add_k:
                        np.add(acc_k, p, out=acc_k)
                    else:
                        np.copyto(acc_k, p)
            i = j


def _scratch_array(name: str, shape: tuple) -> np.ndarray:
    """This worker's scratch array `name` (the product stack, converted operands) as fp32 of `shape`: kept
    from one batch to the next, so its pages stay resident and mostly in cache."""
    size = math.prod(shape)
    buf = getattr(_scratch, name, None)
    if buf is None or buf.size < size:
        buf = np.empty(size, np.float32)
        setattr(_scratch, name, buf)
    return buf[:size].reshape(shape)


def _fp32(stack: np.ndarray, name: str) -> np.ndarray:
    """The operand stack in fp32 (engine arithmetic, REFERENCE §4), converted into scratch `name`."""
    if stack.dtype == np.float32:
        return stack
    out = _scratch_array(name, stack.shape)
    out[...] = stack
    return out


def _same_array(a: np.ndarray, b: np.ndarray) -> bool:
    return (a is b or a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.shape == b.shape and a.strides == b.strides)


def _root(a: np.ndarray):
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a.base if a.base is not None else a


def _stacked(arrays: list[np.ndarray]) -> np.ndarray:
    """The arrays as one [n, ...] array: a strided view when they sit at equal steps in one buffer
    (tiles of a block-dimension tensor indexed by the loop variable), else a copy."""
    first = arrays[0]
    if len(arrays) == 1:
        return first[None]
    addr0 = first.__array_interface__["data"][0]
    step = arrays[1].__array_interface__["data"][0] - addr0
    root = _root(first)
    for k, a in enumerate(arrays[1:], 1):
        if (a.shape != first.shape or a.strides != first.strides or a.dtype != first.dtype
                or a.__array_interface__["data"][0] != addr0 + k * step or _root(a) is not root):
            return np.stack(arrays)
    return as_strided(first, shape=(len(arrays),) + first.shape, strides=(step,) + first.strides, writeable=False)


def capacity(slot_bytes: int) -> int:
    """Products per batch: room for the longest accumulation group worth batching, within a worker's
    scratch stack of at most _STACK_BYTES."""
    return max(2, min(MAX_PRODUCTS, _STACK_BYTES // max(slot_bytes, 1)))
