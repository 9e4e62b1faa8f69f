"""Static collectors: `nki-static` (facts + rule findings over the NKI kernel source) and
`cuda-static` (CUDA facts + CUDA->NKI migration verdicts, when the submission has CUDA source).
Neither executes submitted code."""

from __future__ import annotations

from functools import lru_cache

from evidence.collector import Collector
from evidence.model import EvidenceItem
from evidence.static.cuda import CUDA_KINDS, cuda_items, parse_cuda
from evidence.static.migration import MIGRATION_KINDS, migration_items
from evidence.static.engine import Analysis, analyze
from evidence.static.facts import FACT_KINDS, fact_items, finding_items, rule_kinds
from evidence.static.framework import load_rules
from evidence.static.model import InputBinding
from evidence.submission import Submission

STATIC_VERSION = "1"
# A stated tolerance tighter than this needs fp32 products (bf16 keeps 8 significant bits).
FP32_RTOL = 1e-3


@lru_cache(maxsize=32)
def _analysis(source: str, file: str, inputs: tuple[tuple, ...], entry: str | None, fp32_required: bool) -> Analysis:
    bindings = [InputBinding(name, shape, dtype, value) for name, shape, dtype, value in inputs]
    return analyze(source, file=file, inputs=bindings, entry=entry, options={"fp32_required": fp32_required})


def kernel_analysis(submission: Submission) -> Analysis:
    """The (cached) static analysis of the submission's kernel file, with its input shapes and
    the task facts rules may use (fp32_required from the task's stated rtol)."""
    m = submission.manifest
    inputs = tuple((i.name, tuple(i.shape), i.dtype, i.value) for i in m.inputs)
    fp32 = m.task.rtol is not None and m.task.rtol < FP32_RTOL
    return _analysis(submission.kernel_source, m.kernel.file, inputs, m.kernel.entry, fp32)


class NkiStaticCollector(Collector):
    name = "nki-static"
    version = STATIC_VERSION
    kinds = {**FACT_KINDS, **rule_kinds(load_rules())}

    def applies(self, submission: Submission) -> bool:
        return submission.manifest.kernel.file.endswith(".py")

    def collect(self, submission: Submission) -> list[EvidenceItem]:
        a = kernel_analysis(submission)
        rules = {r.id: r for r in load_rules()}
        return fact_items(a, self.analyzer) + finding_items(a, rules, self.analyzer)


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
