"""Evidence items read off the simulation report beyond the `sim.trace` summary.

- `sim.line`: what each kernel line's instructions did (instructions, partitions, free size per
  instruction, DMAs and bytes). Reviewers see the hot lines; the corroboration step
  (`evidence.corroborate`) checks static findings against them.
- `sim.reuse`, `sim.dma_sizes`, `sim.partition_use`: the trace's verdict on locality, transfer
  sizes and engine fill, stated as facts with numbers, so a high score can cite why it is high
  (and a low one the measured defect). They are emitted whatever the numbers are; what counts as
  good is the rubric's business.
"""

from __future__ import annotations

from collections.abc import Callable

from evidence.model import EvidenceItem, Location, Severity, make_id
from evidence.nki.report import Report
from evidence.nki.state import PSUM_BANKS
from evidence.nki.trace import SMALL_DMA_BYTES_PER_PARTITION

TRACE_FACT_KINDS = {
    "sim.line": "what one kernel line's instructions did over the run: compute instructions with their mean/min "
                "partitions and elements per partition, tiny (<= 4 elements per partition) instructions, DMAs with "
                "bytes, partitions and already-loaded bytes (labels: engine)",
    "sim.reuse": "HBM locality from the trace: bytes read, bytes read again (redundant_ratio), SBUF peak against "
                 "the target's capacity (sbuf_peak_fraction), PSUM banks at peak",
    "sim.dma_sizes": "DMA transfer sizes from the trace: count, mean bytes per partition per transfer, the fraction "
                     "under 512 B per partition (small_fraction), the lines issuing such transfers repeatedly (small_lines) and the "
                     "share of bytes they move (small_byte_fraction); label small_transfers = none | pattern (small lines moving "
                     "under half the bytes) | mostly",
    "sim.partition_use": "engine fill from the trace (kernels with compute instructions): mean partitions used by "
                         "compute instructions (partition_utilisation), mean elements per partition per instruction "
                         "(free_elements_mean) and per instruction (elements_mean), the fraction of tiny instructions "
                         "(<= 4 elements per partition)",
}
MAX_LINE_ITEMS = 64
_ENGINE = {"tensor": "TensorE", "vector": "VectorE", "scalar": "ScalarE", "gpsimd": "GpSimdE", "dma": "DMA"}


def human_bytes(n: float) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def trace_fact_items(report: Report, kernel_file: str, analyzer: str, loc: Location | None,
                     located: Callable[[str | None, int], Location | None]) -> list[EvidenceItem]:
    """`located(file, line)` gives a Location inside the submission (or None for lines outside it)."""
    items = [_line_item(s, analyzer, located) for s in report.lines if s.instructions or s.dma_count]
    items = [i for i in items if i is not None]
    items.sort(key=lambda i: -(i.metrics["instructions"] + i.metrics["dma_count"]))
    # whether every line that ran has its item: a line without one then issued nothing (evidence.corroborate)
    kept = "all" if len(items) <= MAX_LINE_ITEMS else f"top {MAX_LINE_ITEMS}"
    items = sorted((i.model_copy(update={"labels": {**i.labels, "lines": kept}}) for i in items[:MAX_LINE_ITEMS]),
                   key=lambda i: (i.location.file, i.location.start_line))

    def fact(kind: str, title: str, metrics: dict[str, float]) -> EvidenceItem:
        return EvidenceItem(id=make_id(kind, kernel_file), kind=kind, analyzer=analyzer, severity=Severity.info,
                            title=title, location=loc, metrics={k: float(v) for k, v in metrics.items()})

    read = report.hbm_read_bytes
    redundant = report.redundant_hbm_read_bytes / read if read else 0.0
    sbuf = report.sbuf_peak_bytes_per_partition / report.sbuf_usable_bytes_per_partition
    items.append(fact("sim.reuse", f"HBM reads: {human_bytes(read)} read, {redundant:.0%} of it already read before; SBUF peak "
                      f"{human_bytes(report.sbuf_peak_bytes_per_partition)} of {human_bytes(report.sbuf_usable_bytes_per_partition)} "
                      f"per partition ({sbuf:.0%}); PSUM peak {report.psum_peak_banks} of {PSUM_BANKS} banks",
                      {"hbm_read_bytes": read, "redundant_hbm_read_bytes": report.redundant_hbm_read_bytes,
                       "redundant_ratio": round(redundant, 6), "sbuf_peak_fraction": round(sbuf, 6),
                       "psum_peak_banks": report.psum_peak_banks}))
    n = report.dma_count
    small = report.dma_small_count / n if n else 0.0
    small_lines, small_bytes = _small_transfer_lines(report)
    small_share = small_bytes / report.dma_bytes if report.dma_bytes else 0.0
    dma_sizes_at = len(items)
    items.append(fact("sim.dma_sizes", f"DMA sizes: {n} transfers, {human_bytes(report.dma_bytes_per_partition_mean)} per "
                      f"partition per transfer on average, {small:.0%} under 512 B per partition; {small_lines} line(s) "
                      f"issue such transfers repeatedly (a line's single transfer counts as batched), moving "
                      f"{small_share:.0%} of the bytes",
                      {"dma_count": n, "bytes_per_partition_mean": report.dma_bytes_per_partition_mean,
                       "bytes_mean": report.dma_bytes_mean, "small_fraction": round(small, 6),
                       "small_lines": small_lines, "small_byte_fraction": round(small_share, 6)}))
    # the rubric's words: "mostly small transfers" (most bytes) vs "one avoidable small transfer pattern"
    pattern = "none" if not small_lines else "mostly" if small_share >= 0.5 else "pattern"
    items[dma_sizes_at] = items[dma_sizes_at].model_copy(update={"labels": {"small_transfers": pattern}})
    compute = sum(s.instructions for s in report.lines)
    if compute:  # a pure-DMA kernel has no engine fill to judge
        tiny = report.tiny_instr_count / compute
        elements = sum(n for eng, n in report.elements_by_engine.items() if eng != "dma") / compute
        work = _tiny_work(report)
        said = {"walked": f"; {report.tiny_walk_count} tiny instruction(s) take a few elements of a wider tensor",
                "data_bounded": "; every tiny instruction covers its tensors' narrowest free axis whole (the data "
                                "is that small)" if not report.tiny_walk_count else
                                f"; {report.tiny_walk_count} of the {report.tiny_any_count} tiny instructions (transfers "
                                "included) take a few elements of a wider tensor, the rest are as wide as the data "
                                "allows"}.get(work, "")
        use = fact("sim.partition_use", f"Engine fill: compute instructions use {report.partition_utilisation:.0%} "
                   f"of the 128 partitions and {report.free_elements_mean:.4g} elements per partition on average "
                   f"({elements:.4g} elements per instruction); {tiny:.0%} of {compute} are tiny (<= 4 elements "
                   "per partition)" + said,
                   {"partition_utilisation": report.partition_utilisation,
                    "free_elements_mean": report.free_elements_mean, "elements_mean": round(elements, 3),
                    "tiny_fraction": round(tiny, 6), "compute_instructions": compute,
                    "tiny_walks": float(report.tiny_walk_count)})
        items.append(use.model_copy(update={"labels": {"tiny_work": work}}))
    return items


# Walks must be at least this share of the tiny instructions for per-element work to be what makes the kernel's
# instructions tiny (a per-column loop is about half: its temporaries are narrow whole tiles)
WALK_SHARE = 0.25


def _tiny_work(report: Report) -> str:
    """The rubric's question about tiny instructions: "walked" when per-element work by choice makes them tiny (at
    least WALK_SHARE of the tiny instructions, transfers included, take a few elements of a wider tensor: per-element
    loops, thread-per-lane work, column-by-column loads), "data_bounded" when the rest are as wide as the data allows
    (a decode step's 4 tokens as the moving free size, beside a few per-head layout copies), "none"."""
    if not report.tiny_instr_count and not report.tiny_walk_count:
        return "none"
    return "walked" if report.tiny_walk_count >= WALK_SHARE * max(report.tiny_any_count, 1) else "data_bounded"


def _small_transfer_lines(report: Report) -> tuple[int, int]:
    """(lines that issue transfers under 512 B per partition again and again, the bytes they move). A
    small-transfer *pattern* is a line: a tiny per-tile store beside large loads is one pattern moving
    few bytes, not "mostly small transfers" however many tiles repeat it; a line issuing one small
    transfer (the whole [rows, 1] result stored once) is as batched as the data allows."""
    lines = bytes_ = 0
    for s in report.lines:
        if repeats_small_transfers(s.dma_count, s.dma_bytes, s.dma_partitions_mean):
            lines += 1
            bytes_ += s.dma_bytes
    return lines, bytes_


def repeats_small_transfers(dma_count: float, dma_bytes: float, partitions_mean: float) -> bool:
    """Does a line issue transfers under 512 B per partition more than once (a line of the small-transfer
    pattern; evidence.corroborate asks it of a `sim.line` item's metrics)?"""
    return dma_count > 1 and dma_bytes / dma_count / max(partitions_mean, 1.0) < SMALL_DMA_BYTES_PER_PARTITION


def _line_item(s, analyzer: str, located) -> EvidenceItem | None:
    where = located(s.file, s.line)
    if where is None:
        return None
    parts = []
    if s.instructions:
        parts.append(f"{s.instructions} {_ENGINE.get(s.engine, s.engine)} instruction(s) on {s.partitions_mean:.4g} "
                     f"partitions x {s.free_elements_mean:.4g} elements" + (f" ({s.tiny_instructions} tiny)"
                                                                          if s.tiny_instructions else ""))
    if s.dma_count:
        parts.append(f"{s.dma_count} DMA(s), {human_bytes(s.dma_bytes)} on {s.dma_partitions_mean:.4g} partitions"
                     + (f", {human_bytes(s.redundant_hbm_read_bytes)} already loaded" if s.redundant_hbm_read_bytes else ""))
    return EvidenceItem(
        id=make_id("sim.line", where.file, where.start_line), kind="sim.line", analyzer=analyzer, severity=Severity.info,
        title=f"{where}: " + "; ".join(parts), location=where, labels={"engine": s.engine},
        metrics={"instructions": float(s.instructions), "partitions_mean": s.partitions_mean,
                 "partitions_min": float(s.partitions_min), "free_elements_mean": s.free_elements_mean,
                 "tiny_instructions": float(s.tiny_instructions), "dma_count": float(s.dma_count),
                 "dma_bytes": float(s.dma_bytes), "dma_partitions_mean": s.dma_partitions_mean,
                 "redundant_hbm_read_bytes": float(s.redundant_hbm_read_bytes)},
    )
