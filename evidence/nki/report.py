"""`Simulation.report`: trace statistics and findings, a pydantic model (a serialised boundary)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from evidence.model import Severity
from evidence.nki import overwrites
from evidence.nki.state import PSUM_BANKS, SBUF_USABLE_BYTES, State
from evidence.nki.trace import ENGINES


class FindingModel(BaseModel):
    model_config = ConfigDict(frozen=True)

    code: str
    message: str
    file: str | None = None
    line: int = 0
    severity: Severity  # as the simulator raised it (State.finding); the evidence item carries it unchanged


class LineStat(BaseModel):
    """What the instructions issued from one kernel line did, summed over every execution of it."""

    model_config = ConfigDict(frozen=True)

    file: str | None
    line: int
    engine: str  # of the line's first instruction
    instructions: int  # compute instructions (not DMAs)
    partitions_mean: float
    partitions_min: int
    free_elements_mean: float  # elements per partition per compute instruction
    tiny_instructions: int  # compute instructions on <= 4 elements per partition
    dma_count: int
    dma_bytes: int
    redundant_hbm_read_bytes: int
    dma_partitions_mean: float = 0.0


class Report(BaseModel):
    model_config = ConfigDict(frozen=True)

    target: str
    dialect: str = "beta"  # the kernel file's NKI dialect: beta (neuronxcc.nki) | standalone (nki 0.3+)
    trace_only: bool
    instructions: int
    instr_by_engine: dict[str, int]
    elements_by_engine: dict[str, int]
    cycles_by_engine: dict[str, float]  # engine cycles; "dma" in nanoseconds
    hbm_read_bytes: int
    hbm_write_bytes: int
    sbuf_read_bytes: int
    sbuf_write_bytes: int
    psum_read_bytes: int
    psum_write_bytes: int
    dma_count: int
    dma_bytes: int
    dma_bytes_mean: float
    dma_small_count: int  # transfers moving < 512 B per partition
    dma_bytes_per_partition_mean: float = 0.0  # bytes moved per partition per transfer
    dma_size_histogram: dict[str, int]  # "<=N bytes" power-of-two buckets -> transfers
    redundant_hbm_read_bytes: int
    matmul_flops: int
    partition_utilisation: float  # mean active partitions / 128 over compute instructions
    free_elements_mean: float = 0.0  # mean elements per partition per compute instruction
    tiny_instr_count: int = 0  # compute instructions on <= 4 elements per partition
    tiny_walk_count: int = 0  # tiny instructions (compute or DMA) walking a wider tensor (dispatch.walks_free_axis)
    tiny_any_count: int = 0  # instructions of any engine (DMAs too) on <= 4 elements per partition
    lines: tuple[LineStat, ...] = ()  # per kernel line, in source order
    sbuf_peak_bytes_per_partition: int
    sbuf_usable_bytes_per_partition: int
    psum_peak_banks: int
    findings: tuple[FindingModel, ...] = ()
    dtypes: tuple[str, ...] = ()  # dtypes the instructions produced or moved (the error model's device dtype)
    reduce_length: float = 0.0  # longest free-axis reduction, elements in per element out
    accumulation_depth: int = 0  # longest chain of element-wise additions feeding a value (evidence.nki.accumulation)
    # argument index -> float dtypes the kernel computes that argument's data in (evidence.nki.input_precision)
    input_dtypes: dict[int, tuple[str, ...]] = {}
    # the same per box of the argument: (dtype, (lo, hi) per axis, or None for the whole argument)
    input_regions: dict[int, tuple[tuple[str, tuple[tuple[int, ...], tuple[int, ...]] | None], ...]] = {}
    rounding_depth: int = 0  # most low-precision roundings before the output's own in a value stored to HBM (Roundings)
    rounding_dtypes: tuple[str, ...] = ()  # the dtypes those roundings store in (their unit roundoffs size them)
    # reversed-order run (error model): a line whose mask was built in another affine iteration, so reversing the
    # Python iterations changed what was traced; 0 when none
    order_state_line: int = 0
    # every instance ran the kernel body to its end: a run stopped only by the checks of what it returned (an output in
    # nl.hbm, a stored immutable input) traced every instruction, and its trace facts stand
    body_completed: bool = False


def build_report(st: State) -> Report:
    agg = st.recorder.agg
    overwrites.finding(st)
    findings = list(st.findings.values())
    usable = SBUF_USABLE_BYTES[st.target]
    out = [FindingModel(code=f.code, message=f.message, file=f.file, line=f.line, severity=f.severity) for f in findings]
    if st.sbuf_peak > usable and not any(f.code == "sbuf_capacity_exceeded" for f in out):
        out.append(FindingModel(
            code="sbuf_capacity_exceeded", severity="medium",
            message=f"peak live SBUF {st.sbuf_peak} B per partition exceeds the {usable} B usable on {st.target} "
            "(the compiler may spill, or allocates block dimensions per iteration, so the real need can be lower)",
        ))
    psum_peak = st.psum_peak()
    if psum_peak > PSUM_BANKS and not any(f.code == "psum_capacity_exceeded" for f in out):
        out.append(FindingModel(
            code="psum_capacity_exceeded", severity="medium",
            message=f"peak live PSUM {psum_peak} banks (tiles from first to last access) exceeds the "
            f"{PSUM_BANKS} banks per partition",
        ))
    return Report(
        target=st.target,
        dialect=st.dialect,
        trace_only=st.trace_only,
        instructions=sum(agg.instr.values()),
        instr_by_engine=dict(agg.instr),
        elements_by_engine=dict(agg.elements),
        cycles_by_engine={k: round(v, 3) for k, v in agg.cycles.items()},
        hbm_read_bytes=agg.reads[0],
        hbm_write_bytes=agg.writes[0],
        sbuf_read_bytes=agg.reads[1],
        sbuf_write_bytes=agg.writes[1],
        psum_read_bytes=agg.reads[2],
        psum_write_bytes=agg.writes[2],
        dma_count=agg.dma_count,
        dma_bytes=agg.dma_bytes,
        dma_bytes_mean=agg.dma_bytes / agg.dma_count if agg.dma_count else 0.0,
        dma_small_count=agg.dma_small,
        dma_bytes_per_partition_mean=round(agg.dma_bytes / agg.dma_partition_sum, 3) if agg.dma_partition_sum else 0.0,
        dma_size_histogram={f"<={k}": v for k, v in sorted(agg.dma_hist.items())},
        redundant_hbm_read_bytes=st.redundant_bytes,
        matmul_flops=agg.flops,
        partition_utilisation=round(agg.partition_sum / (128 * agg.compute_instr), 6) if agg.compute_instr else 0.0,
        free_elements_mean=round(agg.free_sum / agg.compute_instr, 3) if agg.compute_instr else 0.0,
        tiny_instr_count=agg.tiny_instr,
        tiny_walk_count=agg.tiny_walks,
        tiny_any_count=agg.tiny_any,
        lines=_line_stats(agg.lines),
        sbuf_peak_bytes_per_partition=st.sbuf_peak,
        sbuf_usable_bytes_per_partition=usable,
        psum_peak_banks=psum_peak,
        order_state_line=st.order_state_line,
        body_completed=st.body_completed,
        findings=tuple(out),
        dtypes=tuple(sorted(agg.dtypes)),
        reduce_length=agg.reduce_len,
        accumulation_depth=st.recorder.chains.longest,
        rounding_depth=st.recorder.roundings.longest,
        rounding_dtypes=tuple(sorted(st.recorder.roundings.stage_dtypes)) if st.recorder.roundings.longest else (),
        input_dtypes=st.recorder.input_precision.by_argument(),
        input_regions=st.recorder.input_precision.by_region(),
    )


def _line_stats(lines: dict[tuple, list]) -> tuple[LineStat, ...]:
    out = []
    for (file, line), (eng, n, psum, pmin, fsum, tiny, dmas, dbytes, red, dparts) in lines.items():
        out.append(LineStat(
            file=file, line=line, engine=eng, instructions=n, partitions_mean=round(psum / n, 3) if n else 0.0,
            partitions_min=pmin if n else 0, free_elements_mean=round(fsum / n, 3) if n else 0.0,
            tiny_instructions=tiny, dma_count=dmas, dma_bytes=dbytes, redundant_hbm_read_bytes=red,
            dma_partitions_mean=round(dparts / dmas, 3) if dmas else 0.0,
        ))
    return tuple(sorted(out, key=lambda s: (s.file or "", s.line)))


__all__ = ["ENGINES", "FindingModel", "LineStat", "Report", "build_report"]
