"""The nki-static and cuda-static collectors: declared kinds, stable ids, gather integration."""

from __future__ import annotations

from pathlib import Path

import pytest

from evidence.gather import gather
from evidence.static.collectors import CudaStaticCollector, NkiStaticCollector
from evidence.submission import Manifest, Submission
from grader.submission import load_submission

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted(p for p in (ROOT / "examples").iterdir() if (p / "submission.toml").is_file())
CUDA_DIR = ROOT / "tests" / "corpus" / "cuda"


@pytest.mark.parametrize("folder", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_items_are_declared_unique_located_and_deterministic(folder):
    sub = load_submission(folder)
    for cls in (NkiStaticCollector, CudaStaticCollector):
        if not cls().applies(sub):
            continue
        items = cls().collect(sub)
        assert items and all(i.kind in cls.kinds for i in items)
        assert len({i.id for i in items}) == len(items)
        assert all(i.location is not None for i in items)
        assert [i.model_dump() for i in items] == [i.model_dump() for i in cls().collect(sub)]


def test_required_kinds_are_declared():
    kinds = set(NkiStaticCollector.kinds) | set(CudaStaticCollector.kinds)
    required = {"nki.kernel", "nki.loop", "nki.alloc", "nki.dialect", "cuda.kernel", "cuda.shared_memory", "cuda.sync",
                "cuda.atomic", "cuda.warp_primitive", "cuda.tensor_core", "cuda.accumulator", "cuda.loop",
                "cuda.thread_indexing", "migration.accumulation", "migration.tiling", "migration.atomics",
                "migration.thread_indexing", "migration.idioms"}
    rules = {"partition-over-128", "psum-over-bank", "matmul-operand-limits", "matmul-underfilled",
             "matmul-implicit-transpose", "psum-accumulate-not-inplace", "affine-loop-carried-dependency",
             "hoistable-load", "thread-emulation", "fp32-matmul-operands", "low-precision-accumulator",
             "ragged-without-mask", "load-transpose-in-loop", "python-logic-on-tile", "large-static-range",
             "sequential-without-dependency", "unfused-activation", "small-dma", "underused-partitions", "device-print",
             "shared-hbm-nested", "store-into-input", "large-buffer-outside-loop", "dtype-promotion"}
    assert required | {"nki." + r for r in rules} <= kinds


def _port_submission(port: str) -> Submission:
    manifest = Manifest.model_validate({
        "task": {"id": "softmax-rows", "title": "Row softmax", "rtol": 2e-2},
        "kernel": {"file": port, "entry": "softmax_rows_tiled_kernel" if "faithful" in port else "softmax_rows_threads_kernel"},
        "inputs": [{"name": "x", "shape": [256, 512], "dtype": "float16"}],
        "migration": {"cuda_file": "softmax_rows.cu", "cuda_entry": "softmax_rows_kernel"},
    })
    files = {port: (CUDA_DIR / port).read_text(), "softmax_rows.cu": (CUDA_DIR / "softmax_rows.cu").read_text()}
    return Submission(manifest=manifest, files=files)


def test_gather_tells_the_two_ports_apart():
    verdicts = {}
    for port in ("softmax_rows_faithful.py", "softmax_rows_threads.py"):
        bundle = gather(_port_submission(port), collectors=[NkiStaticCollector, CudaStaticCollector])
        assert bundle.failures == ()
        verdicts[port] = {i.kind: i.labels["verdict"] for i in bundle.of_kind("migration.*")}
        assert bundle.of_kind("cuda.kernel")[0].labels["name"] == "softmax_rows_kernel"
    assert verdicts["softmax_rows_faithful.py"]["migration.thread_indexing"] == "tile_level"
    assert verdicts["softmax_rows_threads.py"]["migration.thread_indexing"] == "thread_emulation"
    assert verdicts["softmax_rows_faithful.py"]["migration.tiling"] != verdicts["softmax_rows_threads.py"]["migration.tiling"]


def test_unparseable_kernel_becomes_an_analyzer_failure():
    sub = _port_submission("softmax_rows_faithful.py")
    broken = Submission(manifest=sub.manifest, files={**sub.files, "softmax_rows_faithful.py": "def k(:\n"})
    bundle = gather(broken, collectors=[NkiStaticCollector])
    assert [f.error_type for f in bundle.failures] == ["StaticAnalysisError"]
    assert "softmax_rows_faithful.py:1: syntax error" in bundle.failures[0].message


def test_fp32_operands_are_accepted_when_the_task_tolerance_needs_fp32():
    kernel = ("import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\n"
              "@nki.jit\ndef k(a, b):\n    x = nl.load(a)\n    y = nl.load(b)\n    c = nisa.nc_matmul(x, y)\n"
              "    return c\n")

    def kinds(rtol):
        manifest = Manifest.model_validate({
            "task": {"id": "mm", "title": "mm", "rtol": rtol}, "kernel": {"file": "k.py", "entry": "k"},
            "inputs": [{"name": "a", "shape": [128, 128], "dtype": "float32"},
                       {"name": "b", "shape": [128, 512], "dtype": "float32"}]})
        return {i.kind for i in NkiStaticCollector().collect(Submission(manifest=manifest, files={"k.py": kernel}))}

    assert "nki.fp32-matmul-operands" in kinds(2e-2)
    assert "nki.fp32-matmul-operands" not in kinds(1e-5)


_MM = ("import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"
       "@nki.jit\ndef k(a, b):\n    out = nl.ndarray((128, 512), dtype=nl.{out}, buffer=nl.shared_hbm)\n"
       "    x = nl.load(a)\n    y = nl.load(b)\n    c = nl.matmul(x, y, transpose_x=True)\n"
       "    nl.store(out, value=c)\n    return out\n")


def _fp32_finding(rtol, out="float32"):
    manifest = Manifest.model_validate({
        "task": {"id": "mm", "title": "mm", **({"rtol": rtol} if rtol is not None else {})},
        "kernel": {"file": "k.py", "entry": "k"},
        "inputs": [{"name": "a", "shape": [128, 128], "dtype": "float32"},
                   {"name": "b", "shape": [128, 512], "dtype": "float32"}]})
    items = NkiStaticCollector().collect(Submission(manifest=manifest, files={"k.py": _MM.format(out=out)}))
    found = [i for i in items if i.kind == "nki.fp32-matmul-operands"]
    return found[0] if found else None


def test_fp32_operands_message_states_the_tolerance_reasoning():
    stated = _fp32_finding(2e-2)
    assert stated.severity.value == "medium" and stated.labels["tolerance"] == "stated"
    assert "stated rtol 0.02" in stated.title
    # No stated tolerance, fp32 output: the fp32 default applies, so fp32 operands are a defensible
    # accuracy choice; still a (low) rate cost, and the message says why.
    unstated = _fp32_finding(None)
    assert unstated.severity.value == "low" and unstated.labels["tolerance"] == "unstated"
    assert "states no tolerance" in unstated.title and "may not meet" in unstated.title
    assert unstated.labels["output_dtype"] == "float32"
    # No stated tolerance but a bf16 output: its bf16 default is met by bf16 operands.
    bf16_out = _fp32_finding(None, out="bfloat16")
    assert bf16_out.severity.value == "medium" and "which bf16 operands meet" in bf16_out.title
    assert _fp32_finding(1e-5) is None


def test_manifest_grid_reaches_the_thread_emulation_rule():
    kernel = ("import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n@nki.jit\ndef k(x):\n"
              "    out = nl.ndarray((256, 1), dtype=nl.float32, buffer=nl.shared_hbm)\n    row = nl.program_id(0)\n"
              "    t = nl.load(x[row:row + 1, :])\n    nl.store(out[row:row + 1, :], value=nl.sum(t, axis=[1], keepdims=True))\n"
              "    return out\n")

    def finding(grid):
        manifest = Manifest.model_validate({
            "task": {"id": "rs", "title": "rs"}, "kernel": {"file": "k.py", "entry": "k", "grid": grid},
            "inputs": [{"name": "x", "shape": [256, 1024], "dtype": "float32"}]})
        items = NkiStaticCollector().collect(Submission(manifest=manifest, files={"k.py": kernel}))
        return [i for i in items if i.kind == "nki.thread-emulation"]

    [item] = finding([256])
    assert item.labels["pattern"] == "spmd_instance_per_row" and item.metrics["grid_instances"] == 256
    assert item.location.start_line == 7 and "grid of 256 instances" in item.title
    assert finding([1]) == []


def test_a_crashing_rule_becomes_a_rule_failure_item(monkeypatch):
    from evidence.static import collectors
    from evidence.static.rules.hoistable_load import HoistableLoad

    def boom(self, call):
        raise ValueError("broken rule")

    monkeypatch.setattr(HoistableLoad, "on_call", boom)
    collectors._analysis.cache_clear()
    try:
        manifest = Manifest.model_validate({
            "task": {"id": "mm", "title": "mm"}, "kernel": {"file": "k.py", "entry": "matmul_naive_kernel"},
            "inputs": [{"name": "lhsT", "shape": [512, 512], "dtype": "bfloat16"},
                       {"name": "rhs", "shape": [512, 1024], "dtype": "bfloat16"}]})
        naive = (ROOT / "tests" / "corpus" / "nki" / "pairs" / "matmul_hoist_naive.py").read_text()
        items = NkiStaticCollector().collect(Submission(manifest=manifest, files={"k.py": naive}))
    finally:
        collectors._analysis.cache_clear()
    failures = [i for i in items if i.kind == "nki.rule_failure"]
    assert [f.labels["rule"] for f in failures] == ["hoistable-load"]
    assert "ValueError: broken rule" in failures[0].title
    assert not any(i.kind == "nki.hoistable-load" for i in items)
    assert any(i.kind == "nki.small-dma" for i in items)  # the other rules still reported


def _kernel_submission(source: str, entry: str, **task) -> Submission:
    manifest = Manifest.model_validate({
        "task": {"id": "copy", "title": "Copy", **task},
        "kernel": {"file": "kernel.py", "entry": entry},
        "inputs": [{"name": "a", "shape": [256, 512], "dtype": "float32"}],
    })
    return Submission(manifest=manifest, files={"kernel.py": source})


_BETA_COPY = ("import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n\n\n@nki.jit\ndef copy(a):\n"
              "    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n"
              "    for i in nl.affine_range(2):\n"
              "        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.load(a[i * 128:(i + 1) * 128, :]))\n"
              "    return out\n")
_STANDALONE_COPY = ("import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n@nki.jit\ndef copy(a):\n"
                    "    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n"
                    "    for i in nl.affine_range(2):\n"
                    "        t = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)\n"
                    "        nisa.dma_copy(dst=t, src=a.ap(pattern=[[512, 128], [1, 512]], offset=i * 128 * 512))\n"
                    "        nl.store(out[i * 128:(i + 1) * 128, :], value=t)\n"
                    "    return out\n")


def test_dialect_evidence_names_version_features():
    (beta,) = [i for i in NkiStaticCollector().collect(_kernel_submission(_BETA_COPY, "copy")) if i.kind == "nki.dialect"]
    assert beta.labels["dialect"] == "beta" and beta.labels["version"] == "beta"
    assert beta.labels["features"] == "affine_range"
    sub = _kernel_submission(_STANDALONE_COPY, "copy")
    (sa,) = [i for i in NkiStaticCollector().collect(sub) if i.kind == "nki.dialect"]
    assert sa.labels["dialect"] == "standalone" and sa.labels["version"] == "0.3+"  # nl.store came back in 0.3
    assert sa.labels["features"].split(",") == ["access_patterns", "deprecated_iterators", "dst_first", "load_store"]


def test_deprecated_nki_api_follows_the_task_sdk():
    def deprecated(source, **task):
        items = NkiStaticCollector().collect(_kernel_submission(source, "copy", **task))
        return sorted(i.labels["what"] for i in items if i.kind == "nki.deprecated-nki-api")

    assert deprecated(_BETA_COPY) == []  # no SDK stated: beta is the project's default dialect
    assert deprecated(_BETA_COPY, neuron_sdk="2.27") == []
    assert deprecated(_BETA_COPY, neuron_sdk="2.29") == ["beta_dialect"]
    assert deprecated(_STANDALONE_COPY) == ["range_iterator"]
    assert deprecated(_STANDALONE_COPY.replace("nl.affine_range(2)", "range(2)"), neuron_sdk="2.30") == []
