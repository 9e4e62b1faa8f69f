"""psum-over-bank: a PSUM tile larger than one 2 KiB bank per partition."""

from __future__ import annotations

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import CallInfo
from evidence.static.rulekit import PSUM_BANK_BYTES, psum_tile_bytes, shape_text
from evidence.static.shapes import ALLOC_CALLS


class PsumOverBank(Rule):
    """Flags PSUM allocations whose free size per partition exceeds one 2 KiB bank.

    PSUM has 8 banks of 2 KiB per partition (512 fp32); a PSUM tile, and every matmul output,
    must fit in one bank (TC#2) on trn1/trn2; NeuronCore-v4 (a trn3 task) takes matmul outputs up to
    4096 fp32, so there the limit is the 8 banks of a partition. Larger tiles are rejected, or under direct allocation collide
    with other accumulation groups.

    Fix: split the free axis into chunks of nl.tile_size.psum_fmax (512 fp32) and accumulate
    each chunk in its own PSUM tile, or use leading block dimensions before par_dim.
    """

    id = "psum-over-bank"
    severity = Severity.critical
    dialects = (BETA, STANDALONE)
    performance = False
    VALID = [
        "acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)\n",
        "acc = nl.zeros((128, 1024), nl.bfloat16, buffer=nl.psum)\n",
        "acc = nl.zeros((4, nl.par_dim(128), 512), nl.float32, buffer=nl.psum)\n",
        Valid("acc = nl.zeros((128, 4096), nl.float32, buffer=nl.psum)\n", options={"target": "trn3"}),
    ]
    INVALID = [
        Invalid("acc = nl.zeros((128, 1024), nl.float32, buffer=nl.psum)\n", line=1),
        "acc = nl.ndarray((128, 2, 512), dtype=nl.float32, buffer=nl.psum)\n",
    ]

    def on_call(self, call: CallInfo) -> None:
        if call.name not in ALLOC_CALLS:
            return
        t = call.tensor
        if t is None or t.buffer != "psum" or t.shape is None:
            return
        # Dimensions before an explicit par_dim are block dimensions: one bank-sized tile each.
        pdim = t.pdim
        rest = t.shape[pdim + 1:]
        if any(d is None for d in rest) or t.itemsize is None:
            return
        free = t.itemsize
        for d in rest:
            free *= d  # type: ignore[operator]
        limit = psum_tile_bytes(self.ctx.options)
        if free > limit:
            held = "one bank holds 2048 B" if limit == PSUM_BANK_BYTES else f"a partition's 8 banks hold {limit} B"
            self.report(call.node, f"PSUM tile {shape_text(t)} {t.dtype} needs {free} B per partition; {held}",
                        metrics={"free_bytes_per_partition": free, "bank_bytes": PSUM_BANK_BYTES})

