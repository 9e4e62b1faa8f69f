"""Evidence items from CUDA facts (`evidence.static.cuda`): one item per kernel, shared array, sync site,
atomic, warp primitive, tensor-core call, accumulator, loop and parse error, with the kinds' documentation."""

from __future__ import annotations

from collections import Counter

from evidence.model import EvidenceItem, Location, Severity, make_id
from evidence.static.cuda_model import CudaFacts

CUDA_KINDS = {
    "cuda.kernel": "a __global__ kernel (labels: name, inputs = element dtypes of its const pointer parameters, ? for a "
                   "template or typedef'd type, launch grid/block/line of its first launch when one is found, "
                   "template launches included; metrics: launch_sites, block_threads when every launch agrees)",
    "cuda.shared_memory": "a __shared__ array (labels: name, dtype, dims, dynamic; metrics: bytes when constant)",
    "cuda.sync": "barriers and fences (__syncthreads, cg::sync(g), g.sync(), __syncwarp, __threadfence) in one function "
                 "(labels: primitive, scope = block|warp|fence, lines; metrics: count)",
    "cuda.atomic": "an atomic operation (labels: op, function)",
    "cuda.warp_primitive": "warp shuffles/votes in one function (labels: primitive, lines; metrics: count)",
    "cuda.tensor_core": "tensor-core (wmma/mma) calls in one function (labels: op, lines; metrics: count)",
    "cuda.accumulator": "a variable accumulated in a loop, a register array a kernel passes to a device helper that "
                        "accumulates into it, or a wmma accumulator fragment fed by mma_sync "
                        "(labels: name, input_dtype, accumulator_dtype, op, function, register_array_of)",
    "cuda.loop": "a loop (labels: pattern = thread_stride|grid_stride|tree_reduction|log_step|serial|spin_wait|atomic_retry|unknown; "
                 "tree_reduction: geometric steps that combine values, log_step: geometric steps that do not, e.g. "
                 "a sorting network's merge stages; atomic_retry: an atomicCAS loop retrying one update; macro: the macro a loop is written through, e.g. "
                 "CUDA_KERNEL_LOOP, unknown when its definition is not in the file; metrics: depth)",
    "cuda.parse_error": "lines tree-sitter could not parse (macro-generated code, unbalanced braces, a truncated file): "
                        "facts there may be missing (labels: lines)",
    "cuda.thread_indexing": "threadIdx/blockIdx use in a kernel (labels: pattern, builtins; metrics: uses per builtin)",
}


def cuda_items(facts: CudaFacts, analyzer: str) -> list:
    """Evidence items for the CUDA facts."""
    f = facts.file

    def item(kind: str, key: object, title: str, line: int, end: int | None = None, **kw: object) -> EvidenceItem:
        return EvidenceItem(id=make_id(kind, f, line, key), kind=kind, analyzer=analyzer, title=title,
                            location=Location(file=f, start_line=line, end_line=end or line), **kw)

    items = []
    definitions = Counter(k.name for k in facts.kernels)
    if facts.parse_errors:
        spans = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in facts.parse_errors)
        items.append(item("cuda.parse_error", spans, f"CUDA source did not parse at lines {spans}: facts there may "
                          "be missing", facts.parse_errors[0][0], facts.parse_errors[-1][1],
                          severity=Severity.low, labels={"lines": spans},
                          metrics={"error_spans": float(len(facts.parse_errors))}))
    done: set[str] = set()
    for k in facts.kernels:
        if k.name in done:
            continue
        done.add(k.name)
        sites = [e for e in facts.launches if e.what == k.name]
        launch = sites[0] if sites else None
        labels = {"name": k.name, "inputs": ",".join(k.input_dtypes)}
        metrics = {}
        if launch is not None:
            labels.update({"grid": launch.labels["grid"], "block": launch.labels["block"], "launch_line": str(launch.line)})
            metrics["launch_sites"] = float(len(sites))  # the labels show the first; others may differ
            if launch.value is not None and all(e.value == launch.value for e in sites):
                metrics["block_threads"] = float(launch.value)
        title = f"__global__ {k.name}" + (f" <<<{labels['grid']}, {labels['block']}>>>" if launch else "")
        if definitions[k.name] > 1:
            # Defined in several #if/#else branches, which are not evaluated: every body's facts are kept.
            labels["definitions"] = str(definitions[k.name])
            title += f" ({definitions[k.name]} definitions, e.g. #if branches; facts from all of them)"
        items.append(item("cuda.kernel", k.name, title, k.start, k.end, labels=labels, metrics=metrics))
        # A grid-stride loop starts at blockIdx * blockDim + threadIdx too: the loop decides.
        pattern = "grid_stride" if any(e.labels["pattern"] == "grid_stride" for e in facts.loops if e.function == k.name) else (
            "global_index" if k.global_index
            else "block_per_tile_thread_stride" if any(b.startswith("threadIdx") for b in k.builtins) else "none")
        items.append(item("cuda.thread_indexing", k.name, f"{k.name}: {sum(k.builtins.values())} threadIdx/blockIdx/"
                          f"blockDim uses ({pattern})", k.start, k.end,
                          labels={"pattern": pattern, "builtins": ",".join(sorted(k.builtins))},
                          metrics={b: float(n) for b, n in sorted(k.builtins.items())}))
    for e in facts.shared:
        items.append(item("cuda.shared_memory", e.what, f"__shared__ {e.labels['dtype']} {e.what}[{e.labels['dims']}]",
                          e.line, labels={"name": e.what, **e.labels, "function": e.function},
                          metrics={"bytes": float(e.value)} if e.value is not None else {}))
    for kind, events in (("cuda.sync", facts.syncs), ("cuda.warp_primitive", facts.warp), ("cuda.tensor_core", facts.tensor_core)):
        groups: dict[tuple[str, str, str], list[int]] = {}
        for e in events:
            groups.setdefault((e.function, e.what, e.labels.get("scope", "")), []).append(e.line)
        for (fn, what, scope), lines in sorted(groups.items()):
            # A barrier's scope (block | warp | fence) is part of the fact: cg::sync(tile) is not cg::sync(block).
            key, extra = (f"{fn}:{what}:{scope}", {"scope": scope}) if scope else (f"{fn}:{what}", {})
            items.append(item(kind, key, f"{what} x{len(lines)} in {fn}" + (f" ({scope})" if scope else ""),
                              min(lines), max(lines),
                              labels={"primitive": what, "function": fn, "lines": ",".join(map(str, lines)), **extra},
                              metrics={"count": float(len(lines))}))
    for e in facts.atomics:
        items.append(item("cuda.atomic", e.what, f"{e.what} in {e.function}", e.line, labels={"op": e.what, "function": e.function}))
    for e in facts.accumulators:
        items.append(item("cuda.accumulator", f"{e.function}:{e.what}", f"{e.labels['accumulator_dtype']} accumulator "
                          f"'{e.what}' over {e.labels['input_dtype']} inputs in {e.function}", e.line,
                          labels={"name": e.what, "function": e.function, **e.labels}))
    for e in facts.loops:
        items.append(item("cuda.loop", "", f"{e.what} loop ({e.labels['pattern']}) in {e.function}", e.line, e.end,
                          labels={**e.labels, "function": e.function}, metrics={"depth": e.value or 1.0}))
    return items
