"""Shared by the static benchmarks: the hand-written corpus as (path, source, inputs, entry)."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from evidence.static.model import InputBinding  # noqa: E402


def _load_loader():
    # tests/corpus is not a package: import its loader by path, registered as the corpus docs say.
    path = ROOT / "tests" / "corpus" / "loader.py"
    spec = importlib.util.spec_from_file_location("nki_corpus_loader", path)
    module = sys.modules.setdefault("nki_corpus_loader", importlib.util.module_from_spec(spec))
    if not hasattr(module, "pairs"):
        spec.loader.exec_module(module)
    return module


loader = _load_loader()


FP32_RTOL = 1e-3  # a tolerance tighter than this needs fp32 products (bf16 unit roundoff is 2^-8)


def corpus_entry(path: Path) -> tuple[str, list[InputBinding], str | None, dict]:
    """Source, input bindings (from the first case), entry kernel and rule options of one file."""
    source = path.read_text()
    cases = loader.load_cases(path)
    if not cases:
        return source, [], None, {}
    case = cases[0]
    options = {"fp32_required": case.rtol < FP32_RTOL}
    tensors = list(case.inputs) + (list(case.outputs) if case.trailing_outputs else [])
    inputs = [InputBinding(s.name, tuple(s.shape), s.dtype) for s in tensors]
    params = _params(source, case.kernel)
    extra = [InputBinding(params[len(tensors) + i], value=v) for i, v in enumerate(case.args)
             if isinstance(v, (int, float, bool)) and len(tensors) + i < len(params)]
    extra += [InputBinding(k, value=v) for k, v in case.kwargs.items() if isinstance(v, (int, float, bool))]
    return source, inputs + extra, case.kernel, options


def _params(source: str, kernel: str) -> list[str]:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == kernel:
            return [a.arg for a in node.args.args]
    return []


def all_files() -> list[Path]:
    return loader.kernel_files(include_pairs=True, include_cuda=True)


def clean_files() -> list[Path]:
    """Kernels that declare no expected finding (optimised pair halves, the faithful CUDA port and
    the general corpus kernels): any finding on them is a false positive."""
    return list(loader.clean_kernels())


def other_files() -> list[Path]:
    """General corpus kernels (simulator test material): findings there are reviewed, not counted."""
    clean, naive = set(clean_files()), {p.naive for p in loader.pairs()}
    return [p for p in all_files() if p not in clean and p not in naive and not p.stem.endswith("_threads")]


def declared_findings(path: Path) -> tuple[str, ...]:
    return loader.expected_findings(path)
