"""Static collectors: `nki-static` (facts + rule findings over the NKI kernel source) and
`cuda-static` (CUDA facts + CUDA->NKI migration verdicts, when the submission has CUDA source).
Neither executes submitted code."""

from __future__ import annotations

from functools import lru_cache

from evidence.collector import Collector
from evidence.model import EvidenceItem
from evidence.static.cuda import parse_cuda
from evidence.static.cuda_items import CUDA_KINDS, cuda_items
from evidence.static.engine import Analysis, analyze
from evidence.static.facts import FACT_KINDS, fact_items, finding_items, rule_kinds
from evidence.static.framework import load_rules
from evidence.static.migration import MIGRATION_KINDS, migration_items
from evidence.static.model import InputBinding
from evidence.static.practices import PRACTICE_KINDS, practice_items
from evidence.static.task_shapes import any_size_dims
from evidence.submission import Submission

STATIC_VERSION = "1"
# A stated tolerance tighter than this needs fp32 products (bf16 keeps 8 significant bits).
FP32_RTOL = 1e-3


@lru_cache(maxsize=32)
def _analysis(source: str, file: str, inputs: tuple[tuple, ...], entry: str | None,
              options: tuple[tuple[str, object], ...]) -> Analysis:
    bindings = [InputBinding(name, shape, dtype, value) for name, shape, dtype, value in inputs]
    return analyze(source, file=file, inputs=bindings, entry=entry, options=dict(options))


def task_options(submission: Submission) -> dict[str, object]:
    """The task facts rules may use: fp32_required (the stated rtol is tighter than bf16 allows),
    task_rtol (None when the task states no tolerance), the SPMD grid and the Neuron SDK release
    the task targets (neuron_sdk, None when unstated), the hardware target (target), and the (input, axis) pairs its description
    lets take any size (any_size_dims, evidence.static.task_shapes)."""
    m = submission.manifest
    return {"fp32_required": m.task.rtol is not None and m.task.rtol < FP32_RTOL,
            "task_rtol": m.task.rtol, "grid": tuple(m.kernel.grid), "neuron_sdk": m.task.neuron_sdk,
            "target": m.task.target,
            "any_size_dims": any_size_dims(m.task.description, [(i.name, tuple(i.shape)) for i in m.inputs if i.is_tensor])}


def kernel_analysis(submission: Submission) -> Analysis:
    """The (cached) static analysis of the submission's kernel file, with its input shapes and
    the task facts of `task_options`."""
    m = submission.manifest
    inputs = tuple((i.name, tuple(i.shape), i.dtype, i.value) for i in m.inputs)
    options = tuple(sorted(task_options(submission).items()))
    return _analysis(submission.kernel_source, m.kernel.file, inputs, m.kernel.entry, options)


class NkiStaticCollector(Collector):
    name = "nki-static"
    version = STATIC_VERSION
    kinds = {**FACT_KINDS, **PRACTICE_KINDS, **rule_kinds(load_rules())}

    def applies(self, submission: Submission) -> bool:
        return submission.manifest.kernel.file.endswith(".py")

    def collect(self, submission: Submission) -> list[EvidenceItem]:
        a = kernel_analysis(submission)
        # The analysis is cached per source: these are the seconds it took when it ran.
        self.timings = {"analysis": a.seconds, "rules": sum(a.timings.values())}
        rules = {r.id: r for r in load_rules()}
        return fact_items(a, self.analyzer) + practice_items(a, self.analyzer) + finding_items(a, rules, self.analyzer)


class CudaStaticCollector(Collector):
    """CUDA facts of `migration.cuda_file` and the CUDA->NKI migration verdicts."""

    name = "cuda-static"
    version = STATIC_VERSION
    kinds = {**CUDA_KINDS, **MIGRATION_KINDS}

    def applies(self, submission: Submission) -> bool:
        return submission.manifest.migration is not None

    def collect(self, submission: Submission) -> list[EvidenceItem]:
        mig = submission.manifest.migration
        assert mig is not None
        facts = parse_cuda(submission.files[mig.cuda_file], mig.cuda_file)
        items = cuda_items(facts, self.analyzer)
        if submission.manifest.kernel.file.endswith(".py"):
            items += migration_items(facts, kernel_analysis(submission), self.analyzer, mig.cuda_entry)
        return items
