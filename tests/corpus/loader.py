"""Enumerate the hand-written NKI corpus and its run cases.

Every corpus module (``tests/corpus/nki/*.py``, ``tests/corpus/nki/pairs/*.py``, their ports to
the standalone nki 0.3+ dialect in ``tests/corpus/nki_standalone/`` (same file names, ``pairs/``
too), ``tests/corpus/cuda/*.py``) holds one ``@nki.jit`` kernel, a numpy reference and a
module-level ``CASES`` literal.  ``CASES`` is read with ``ast.literal_eval`` so this
loader (and the static analyzer's tests) never execute kernel source; the kernel and
reference functions themselves are obtained through ``evidence.nki.load_kernel``.

A case is a dict with these keys (defaults in brackets):

- ``name``: case id, unique within the module.
- ``kernel`` / ``reference``: function names [module ``KERNEL`` / ``REFERENCE``].
- ``inputs``: list of dicts ``{name, shape, dtype, dist [normal], mean [0], std [1],
  low [-1], high [1]}``; ``dist`` is ``normal``, ``uniform`` or ``randint``.
- ``outputs``: ``"return"`` [default] when the kernel returns its outputs, or a list of
  ``{name, shape, dtype}`` for the old style where outputs are trailing parameters
  (pre-filled with NaN so unwritten elements show) and the kernel returns nothing.
- ``args`` [()] / ``kwargs`` [{}]: plain Python values passed after inputs (and after
  trailing outputs).
- ``grid`` [None]: SPMD launch grid, e.g. ``[3]`` or ``[2, 2]``.
- ``rel_l2`` [2e-5], ``rtol`` [1e-5], ``atol`` [1e-5]: a case passes when every output
  has relative L2 error <= ``rel_l2`` and ``np.allclose(got, ref, rtol, atol)``.
- ``data_dependent_addresses`` [False]: the kernel indexes HBM with loaded values (indirect DMA,
  atomics), so address-derived statistics (redundant reads) cannot be known in trace-only mode.

The reference is called as ``reference(*inputs, *args, **kwargs)`` with the generated
input arrays (low-precision inputs arrive as ml_dtypes arrays) and returns one array or
a tuple in the kernel's output order.

Any module may carry ``EXPECTED_FINDINGS``: the static finding kinds (``nki.<rule id>``) the
file triggers on purpose. Naive pair halves (``pairs/<topic>_naive.py``) must list theirs; a
module without the constant (every ``_opt`` half, the faithful CUDA port, most general kernels)
is *clean*: any static finding on it is a false positive.
The CUDA ports in ``cuda/`` name their source in ``CUDA_SOURCE`` / ``CUDA_ENTRY``.

``tests/corpus`` is not a package; import this file by path and register it in
``sys.modules`` before executing it (its dataclasses need that)::

    spec = importlib.util.spec_from_file_location("nki_corpus_loader", path)
    loader = sys.modules.setdefault("nki_corpus_loader", importlib.util.module_from_spec(spec))
    spec.loader.exec_module(loader)
"""
from __future__ import annotations

import ast
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

CORPUS_ROOT = Path(__file__).resolve().parent
NKI_DIR = CORPUS_ROOT / "nki"
PAIRS_DIR = NKI_DIR / "pairs"
STANDALONE_DIR = CORPUS_ROOT / "nki_standalone"
STANDALONE_PAIRS_DIR = STANDALONE_DIR / "pairs"
CUDA_DIR = CORPUS_ROOT / "cuda"

_DTYPES: dict[str, Any] = {
    "float32": np.float32,
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float8_e4m3": ml_dtypes.float8_e4m3,
    "float8_e5m2": ml_dtypes.float8_e5m2,
    "int8": np.int8,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "int16": np.int16,
    "int32": np.int32,
    "uint32": np.uint32,
}


def np_dtype(name: str) -> np.dtype:
    try:
        return np.dtype(_DTYPES[name])
    except KeyError:
        raise ValueError(f"unknown corpus dtype {name!r}; known: {sorted(_DTYPES)}") from None


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str
    dist: str = "normal"
    mean: float = 0.0
    std: float = 1.0
    low: float = -1.0
    high: float = 1.0

    def generate(self, rng: np.random.Generator) -> np.ndarray:
        if self.dist == "normal":
            data = rng.normal(self.mean, self.std, self.shape)
        elif self.dist == "uniform":
            data = rng.uniform(self.low, self.high, self.shape)
        elif self.dist == "randint":
            data = rng.integers(int(self.low), int(self.high), self.shape)
        else:
            raise ValueError(f"input {self.name}: unknown distribution {self.dist!r}")
        return data.astype(np.float32 if self.dist != "randint" else np.int64).astype(np_dtype(self.dtype))


@dataclass(frozen=True)
class Case:
    path: Path
    name: str
    kernel: str
    reference: str
    inputs: tuple[TensorSpec, ...]
    outputs: str | tuple[TensorSpec, ...]
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    grid: tuple[int, ...] | None = None
    rel_l2: float = 2e-5
    rtol: float = 1e-5
    atol: float = 1e-5
    data_dependent_addresses: bool = False

    @property
    def id(self) -> str:
        try:
            rel = self.path.relative_to(CORPUS_ROOT).with_suffix("").as_posix()
        except ValueError:  # a kernel file outside the corpus tree
            rel = self.path.stem
        return f"{rel}::{self.name}"

    @property
    def trailing_outputs(self) -> bool:
        return self.outputs != "return"

    @property
    def seed(self) -> int:
        return zlib.crc32(self.id.encode())

    def make_inputs(self) -> list[np.ndarray]:
        rng = np.random.default_rng(self.seed)
        return [spec.generate(rng) for spec in self.inputs]

    def make_outputs(self) -> list[np.ndarray]:
        """Pre-allocated trailing output arrays (NaN / sentinel filled); [] for returned outputs."""
        if not self.trailing_outputs:
            return []
        outs = []
        for spec in self.outputs:
            dt = np_dtype(spec.dtype)
            if dt.kind in "fV":  # ml_dtypes floats report kind "V"
                outs.append(np.full(spec.shape, np.nan, dtype=np.float32).astype(dt))
            else:
                outs.append(np.full(spec.shape, -7, dtype=dt))
        return outs


def module_literals(path: Path) -> dict[str, Any]:
    """Module-level constant assignments (CASES, KERNEL, REFERENCE, EXPECTED_FINDINGS, ...)."""
    tree = ast.parse(Path(path).read_text(), filename=str(path))
    found: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name.isupper():
                try:
                    found[name] = ast.literal_eval(node.value)
                except ValueError as exc:
                    raise ValueError(f"{path}:{node.lineno}: {name} must be a literal ({exc})") from None
    return found


def _spec(raw: dict, where: str) -> TensorSpec:
    try:
        return TensorSpec(**{**raw, "shape": tuple(raw["shape"])})
    except (TypeError, KeyError) as exc:
        raise ValueError(f"{where}: bad tensor spec {raw!r} ({exc})") from None


def load_cases(path: Path) -> list[Case]:
    path = Path(path).resolve()
    lits = module_literals(path)
    if "CASES" not in lits:
        raise ValueError(f"{path}: no module-level CASES list")
    cases = []
    for raw in lits["CASES"]:
        raw = dict(raw)
        where = f"{path.name} case {raw.get('name')!r}"
        outputs = raw.pop("outputs", "return")
        if outputs != "return":
            outputs = tuple(_spec(o, where) for o in outputs)
        grid = raw.pop("grid", None)
        cases.append(Case(
            path=path,
            name=raw.pop("name"),
            kernel=raw.pop("kernel", lits.get("KERNEL")),
            reference=raw.pop("reference", lits.get("REFERENCE")),
            inputs=tuple(_spec(i, where) for i in raw.pop("inputs")),
            outputs=outputs,
            args=tuple(raw.pop("args", ())),
            kwargs=dict(raw.pop("kwargs", {})),
            grid=tuple(grid) if grid else None,
            **raw,
        ))
        if not cases[-1].kernel or not cases[-1].reference:
            raise ValueError(f"{where}: kernel/reference name missing (set KERNEL/REFERENCE)")
    return cases


def kernel_files(include_pairs: bool = True, include_cuda: bool = True, include_standalone: bool = True) -> list[Path]:
    files = sorted(NKI_DIR.glob("*.py"))
    if include_pairs:
        files += sorted(PAIRS_DIR.glob("*.py"))
    if include_standalone:
        files += sorted(STANDALONE_DIR.glob("*.py"))
        if include_pairs:
            files += sorted(STANDALONE_PAIRS_DIR.glob("*.py"))
    if include_cuda:
        files += sorted(CUDA_DIR.glob("*.py"))
    return files


def all_cases(**kw) -> list[Case]:
    return [case for path in kernel_files(**kw) for case in load_cases(path)]


@dataclass(frozen=True)
class Pair:
    topic: str
    naive: Path
    optimised: Path
    expected_findings: tuple[str, ...]


def pairs() -> list[Pair]:
    """Naive-vs-optimised pairs for the static analyzer (``<topic>_naive.py`` / ``<topic>_opt.py``);
    the standalone ports' topics are prefixed ``standalone/``."""
    out = []
    for directory, prefix in ((PAIRS_DIR, ""), (STANDALONE_PAIRS_DIR, "standalone/")):
        for naive in sorted(directory.glob("*_naive.py")):
            topic = naive.name[: -len("_naive.py")]
            opt = directory / f"{topic}_opt.py"
            if not opt.exists():
                raise ValueError(f"{naive}: missing optimised partner {opt.name}")
            expected = tuple(module_literals(naive).get("EXPECTED_FINDINGS", ()))
            out.append(Pair(prefix + topic, naive, opt, expected))
    return out


def expected_findings(path: Path) -> tuple[str, ...]:
    """The static finding kinds a corpus module declares it triggers on purpose (empty: clean)."""
    return tuple(module_literals(path).get("EXPECTED_FINDINGS", ()))


def clean_kernels() -> list[Path]:
    """Every corpus kernel that declares no expected finding: the false-positive denominator.

    The thread-emulating CUDA port is excluded as it is a deliberately poor port whose findings
    the migration tests check instead."""
    candidates = kernel_files(include_pairs=True, include_cuda=True)
    return [p for p in candidates if not p.stem.endswith(("_naive", "_threads")) and not expected_findings(p)]


def load_module(path: Path):
    """Load a corpus module under the NKI simulator (imports evidence.nki lazily)."""
    from evidence.nki import load_kernel

    return load_kernel(str(path))
