"""Static collectors: `nki-static` (facts + rule findings over the NKI kernel source and the code it
reaches in the submission's helper modules) and
`cuda-static` (CUDA facts + CUDA->NKI migration verdicts, when the submission has CUDA source).
Neither executes submitted code."""

from __future__ import annotations

from functools import lru_cache

from evidence.collector import Collector
from evidence.model import EvidenceItem
from evidence.static.cuda import parse_cuda
from evidence.static.cuda_items import CUDA_KINDS, cuda_items
from evidence.static.engine import Analysis, StaticAnalysisError
from evidence.static.facts import FACT_KINDS, fact_items, finding_items, function_items, rule_kinds
from evidence.static.framework import load_rules
from evidence.static.helper_modules import analyze_modules
from evidence.static.migration import MIGRATION_KINDS, migration_items
from evidence.static.model import InputBinding
from evidence.static.practices import PRACTICE_KINDS, practice_items
from evidence.static.task_shapes import any_size_dims
from evidence.static.unparsed import UNPARSED_KINDS, unparsed_items
from evidence.submission import Submission

STATIC_VERSION = "2"  # 2: an entry reaching no NKI call is an nki.wrapper, not an nki.kernel
# A stated tolerance tighter than this needs fp32 products (bf16 keeps 8 significant bits).
FP32_RTOL = 1e-3


@lru_cache(maxsize=32)
def _analysis(files: tuple[tuple[str, str], ...], file: str, modules: tuple[str, ...], inputs: tuple[tuple, ...],
              entry: str | None, options: tuple[tuple[str, object], ...]) -> tuple[Analysis, list[Analysis]]:
    bindings = [InputBinding(name, shape, dtype, value) for name, shape, dtype, value in inputs]
    return analyze_modules(dict(files), file, modules, entry, dict(options), bindings)


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


def submission_analyses(submission: Submission) -> tuple[Analysis, list[Analysis]]:
    """The (cached) static analyses of the submission's kernel file, with its input shapes and
    the task facts of `task_options`, and of the helper modules (`kernel.modules`) it reaches
    (`helper_modules.analyze_modules`)."""
    m = submission.manifest
    inputs = tuple((i.name, tuple(i.shape), i.dtype, i.value) for i in m.inputs)
    options = tuple(sorted(task_options(submission).items()))
    names = (m.kernel.file, *m.kernel.modules)
    files = tuple((n, submission.files[n]) for n in names if n in submission.files)
    return _analysis(files, m.kernel.file, tuple(m.kernel.modules), inputs, m.kernel.entry, options)


def kernel_analysis(submission: Submission) -> Analysis:
    """The (cached) static analysis of the submission's kernel file (`submission_analyses`)."""
    return submission_analyses(submission)[0]


class NkiStaticCollector(Collector):
    name = "nki-static"
    version = STATIC_VERSION
    kinds = {**FACT_KINDS, **PRACTICE_KINDS, **UNPARSED_KINDS, **rule_kinds(load_rules())}

    def applies(self, submission: Submission) -> bool:
        return submission.manifest.kernel.file.endswith(".py")

    def collect(self, submission: Submission) -> list[EvidenceItem]:
        a, helpers = submission_analyses(submission)
        # The analysis is cached per source: these are the seconds it took when it ran.
        self.timings = {"analysis": a.seconds + sum(h.seconds for h in helpers),
                        "rules": sum(sum(x.timings.values()) for x in (a, *helpers))}
        rules = {r.id: r for r in load_rules()}
        items = fact_items(a, self.analyzer, helpers) + practice_items(a, self.analyzer)
        items += finding_items(a, rules, self.analyzer) + unparsed_items(a.unparsed_modules, self.analyzer)
        for h in helpers:  # helper modules: the code the entry reaches there, cited at the module's lines
            items += function_items(h, self.analyzer) + practice_items(h, self.analyzer)
            items += finding_items(h, rules, self.analyzer)
        return items


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
        facts = parse_cuda(submission.files[mig.cuda_file], mig.cuda_file,
                           {h: submission.files[h] for h in mig.cuda_headers if h in submission.files})
        items = cuda_items(facts, self.analyzer)
        if submission.manifest.kernel.file.endswith(".py"):
            try:
                kernel = kernel_analysis(submission)
            except StaticAnalysisError:  # nki-static reports why; the CUDA facts stand without the verdicts
                return items
            items += migration_items(facts, kernel, self.analyzer, mig.cuda_entry)
        return items
