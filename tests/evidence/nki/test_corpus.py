"""Run every hand-written corpus kernel through the simulator and compare with numpy.

Each case of ``tests/corpus`` (see ``tests/corpus/loader.py`` for the CASES format) is
simulated with seeded inputs and compared with the module's numpy reference: relative
L2 error within the case's bound (2e-5 for fp32 paths unless stated), ``np.allclose``
within its rtol/atol, same shape and dtype, no NaN where the reference has none, and no
high/critical (correctness) findings in the simulation report (these kernels are all valid).
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

_LOADER_PATH = Path(__file__).resolve().parents[2] / "corpus" / "loader.py"
_spec = importlib.util.spec_from_file_location("nki_corpus_loader", _LOADER_PATH)
loader = sys.modules.setdefault("nki_corpus_loader", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(loader)

CASES = loader.all_cases()
_MODULES: dict[Path, object] = {}


def _module(path: Path):
    if path not in _MODULES:
        _MODULES[path] = loader.load_module(path)
    return _MODULES[path]


def _as_tuple(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _severity(finding) -> str:
    sev = finding.get("severity") if isinstance(finding, dict) else getattr(finding, "severity", "")
    return str(getattr(sev, "value", sev)).lower()


# Correctness-level findings (uninitialised reads, illegal affine_range write conflicts, unwritten outputs)
# are reported at these severities; lower ones (e.g. deprecated block dimensions) are advice.
_ERROR_SEVERITIES = {"high", "critical"}


def _error_findings(report) -> list:
    findings = report.get("findings", []) if isinstance(report, dict) else getattr(report, "findings", [])
    return [f for f in findings if _severity(f) in _ERROR_SEVERITIES]


def _compare(case, index: int, got: np.ndarray, want: np.ndarray) -> None:
    where = f"{case.id} output {index}"
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, f"{where}: shape {got.shape} != reference {want.shape}"
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype} != reference {want.dtype}"
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    assert not np.isnan(g).any() or np.isnan(w).any(), f"{where}: {int(np.isnan(g).sum())} NaN elements"
    denom = np.linalg.norm(w)
    rel_l2 = np.linalg.norm(g - w) / denom if denom else np.linalg.norm(g - w)
    assert rel_l2 <= case.rel_l2, f"{where}: relative L2 error {rel_l2:.3g} > {case.rel_l2:g}"
    bad = ~np.isclose(g, w, rtol=case.rtol, atol=case.atol)
    assert not bad.any(), (
        f"{where}: {int(bad.sum())}/{bad.size} elements outside rtol={case.rtol:g} atol={case.atol:g}; "
        f"first at {tuple(int(i) for i in np.argwhere(bad)[0])}: got {g[bad][0]!r}, want {w[bad][0]!r}"
    )


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_corpus_kernel_matches_reference(case):
    from evidence.nki import simulate

    mod = _module(case.path)
    kernel = getattr(mod, case.kernel)
    reference = getattr(mod, case.reference)

    inputs = case.make_inputs()
    trailing = case.make_outputs()
    # The kernel gets copies: a mutable parameter may be written back in place.
    call_args = [a.copy() for a in inputs] + trailing + list(case.args)
    sim = simulate(kernel, *call_args, grid=case.grid, **case.kwargs)

    got = trailing if case.trailing_outputs else list(_as_tuple(sim.outputs))
    want = _as_tuple(reference(*inputs, *case.args, **case.kwargs))
    assert len(got) == len(want), f"{case.id}: {len(got)} outputs, reference has {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        _compare(case, i, g, w)

    errors = _error_findings(sim.report)
    assert not errors, f"{case.id}: valid kernel got error findings: {errors}"


_TRACE_FIELDS = ("instructions", "instr_by_engine", "hbm_read_bytes", "hbm_write_bytes", "dma_count", "dma_bytes",
                 "redundant_hbm_read_bytes", "matmul_flops", "sbuf_peak_bytes_per_partition", "psum_peak_banks")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_trace_only_report_matches_full_simulation(case):
    """Beta control flow never depends on tensor values, so trace-only mode must report the same trace
    (up to the value-derived addresses of indirect DMA)."""
    from evidence.nki import simulate

    kernel = getattr(_module(case.path), case.kernel)
    inputs = case.make_inputs()

    def run(trace_only):
        args = [a.copy() for a in inputs] + case.make_outputs() + list(case.args)
        return simulate(kernel, *args, grid=case.grid, trace_only=trace_only, **case.kwargs).report

    full, trace = run(False), run(True)
    # Indirect DMA addresses come from tensor values, which trace-only mode does not compute.
    fields = [f for f in _TRACE_FIELDS if not (case.data_dependent_addresses and f == "redundant_hbm_read_bytes")]
    for name in fields:
        assert getattr(trace, name) == getattr(full, name), f"{case.id}: {name} differs in trace-only mode"


def test_corpus_inventory():
    """The corpus keeps its promised breadth: >= 24 kernels, >= 4 pairs, CUDA ports."""
    kernels = loader.kernel_files(include_pairs=False, include_cuda=False)
    assert len(kernels) >= 24
    for path in loader.kernel_files():
        lits = loader.module_literals(path)
        assert lits.get("CASES"), f"{path.name}: no CASES"
        src = path.read_text()
        for case in loader.load_cases(path):
            assert f"def {case.kernel}(" in src, f"{path.name}: kernel {case.kernel} missing"
            assert f"def {case.reference}(" in src, f"{path.name}: reference {case.reference} missing"
    pairs = loader.pairs()
    assert len(pairs) >= 4
    for pair in pairs:
        assert pair.expected_findings, f"{pair.naive.name}: EXPECTED_FINDINGS is empty"
        assert all(rule.startswith("nki.") for rule in pair.expected_findings)
        assert loader.module_literals(pair.optimised).get("EXPECTED_FINDINGS") == []
    readme = (loader.CORPUS_ROOT / "README.md").read_text()
    undocumented = [p.name for p in loader.kernel_files() if p.relative_to(loader.CORPUS_ROOT).as_posix() not in readme]
    assert not undocumented, f"tests/corpus/README.md does not list {undocumented}"
    cuda = sorted(loader.CUDA_DIR.glob("*.cu"))
    assert cuda, "no CUDA source in the corpus"
    ports = [p for p in loader.CUDA_DIR.glob("*.py") if loader.module_literals(p).get("CUDA_SOURCE")]
    assert len(ports) >= 2


def test_standalone_ports_mirror_the_beta_corpus():
    """nki_standalone/ holds ports (same file names) of the beta kernels and of every beta pair, each
    detected as the standalone dialect when loaded."""
    ports = sorted(loader.STANDALONE_DIR.glob("*.py"))
    assert len(ports) >= 30
    for path in ports + sorted(loader.STANDALONE_PAIRS_DIR.glob("*.py")):
        beta = loader.NKI_DIR / path.relative_to(loader.STANDALONE_DIR)
        assert beta.exists(), f"{path.name} is not a port of a beta corpus file"
        assert "neuronxcc" not in path.read_text()
        assert _module(path).__nki_dialect__ == "standalone", path.name
    topics = {p.topic for p in loader.pairs()}
    beta_topics = {t for t in topics if not t.startswith("standalone/")}
    assert {"standalone/" + t for t in beta_topics} <= topics


def test_case_inputs_are_seeded_and_reproducible():
    case = CASES[0]
    first, second = case.make_inputs(), case.make_inputs()
    assert all(np.array_equal(a, b) for a, b in zip(first, second))
    assert len({c.seed for c in CASES}) == len(CASES), "two cases share an input seed"
    assert len({c.id for c in CASES}) == len(CASES), "duplicate case ids"


def test_loader_rejects_malformed_cases(tmp_path):
    bad = tmp_path / "bad_kernel.py"
    bad.write_text("SIZE = 4\nCASES = [{'name': 'a', 'inputs': [], 'kernel': 'k', 'reference': 'r', 'grid': [SIZE]}]\n")
    with pytest.raises(ValueError, match=r"bad_kernel.py:2: CASES must be a literal"):
        loader.load_cases(bad)
    missing = tmp_path / "no_cases.py"
    missing.write_text("KERNEL = 'k'\n")
    with pytest.raises(ValueError, match="no module-level CASES"):
        loader.load_cases(missing)
    unknown = tmp_path / "bad_dtype.py"
    unknown.write_text("CASES = [{'name': 'a', 'kernel': 'k', 'reference': 'r', "
                       "'inputs': [{'name': 'x', 'shape': [2, 2], 'dtype': 'float64'}]}]\n")
    (case,) = loader.load_cases(unknown)
    with pytest.raises(ValueError, match="unknown corpus dtype 'float64'"):
        case.make_inputs()
