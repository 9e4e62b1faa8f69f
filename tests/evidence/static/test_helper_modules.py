"""Static evidence over the code the entry reaches in the submission's helper modules (`kernel.modules`).

Every kernel here is written for these tests: an entry file importing helpers from sibling modules
(by name, relatively, through a module attribute, a decorated kernel behind a plain wrapper)."""

from __future__ import annotations

from evidence.static.collectors import NkiStaticCollector
from evidence.static.engine import analyze
from evidence.static.helper_modules import resolve
from evidence.static.model import InputBinding
from evidence.submission import Manifest, Submission

_BETA = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"

ENTRY = _BETA + '''from .ops.tiles import scale_tile, make_out, head_rows
from . import stats


@nki.jit
def entry(x):
    out = nl.ndarray((128, 4096), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x[0:128, :])
    s = scale_tile(t, 2.0)
    acc = stats.psum_buffer(t)
    h = head_rows(t)
    nl.store(out, value=s)
    return out
'''
TILES = '''import neuronxcc.nki.language as nl


def scale_tile(t, factor):
    spill = nl.ndarray((256, 64), dtype=nl.float32, buffer=nl.sbuf)
    return nl.multiply(t, factor)


def make_out(shape):
    return nl.ndarray(shape, dtype=nl.float32, buffer=nl.shared_hbm)


def head_rows(x):
    rows = nl.ndarray((x.shape[0], 64), dtype=nl.float32, buffer=nl.sbuf)
    return rows


def unused(a):
    return nl.ndarray((512, 64), dtype=nl.float32, buffer=nl.sbuf)


class Pool:
    def grab(self):
        return nl.ndarray((1024, 64), dtype=nl.float32, buffer=nl.sbuf)
'''
STATS = '''import neuronxcc.nki.language as nl


def psum_buffer(t):
    return nl.ndarray((t.shape[0], t.shape[1]), dtype=nl.float32, buffer=nl.psum)
'''
MODULES = {"kern/ops/tiles.py": TILES, "kern/stats.py": STATS}
INPUTS = [{"name": "x", "shape": [256, 4096], "dtype": "float32"}]


def _submission(entry_file: str, entry: str, files: dict[str, str], inputs=INPUTS) -> Submission:
    manifest = Manifest.model_validate({
        "task": {"id": "helpers", "title": "helper modules"},
        "kernel": {"file": entry_file, "entry": entry, "modules": sorted(set(files) - {entry_file})},
        "inputs": inputs,
    })
    return Submission(manifest=manifest, files=files)


def _findings(sub: Submission) -> list[tuple[str, str, int]]:
    return sorted((i.kind, i.location.file, i.location.start_line) for i in NkiStaticCollector().collect(sub)
                  if i.severity is not None and i.severity.value != "info" and i.kind != "nki.rule_failure")


def test_defects_in_reached_helper_module_code_are_found_at_the_modules_lines():
    sub = _submission("kern/entry.py", "entry", {"kern/entry.py": ENTRY, **MODULES})
    found = _findings(sub)
    # an SBUF tile over 128 partitions in a helper imported by name from a subpackage (relative import)
    assert ("nki.partition-over-128", "kern/ops/tiles.py", 5) in found
    # a PSUM tile over one bank: its shape is the caller's tile [128, 4096], passed through a module attribute call
    assert ("nki.psum-over-bank", "kern/stats.py", 5) in found
    # `make_out` is imported but never called, `unused` never imported, the class never followed: nothing cited
    assert not [f for f in found if f[1] == "kern/ops/tiles.py" and f[2] not in (5,)]


def test_helper_parameters_are_what_the_callers_pass_never_the_tasks_inputs():
    # `head_rows(x)` gets the caller's 128-row tile; bound to the task input of its parameter's name,
    # x [256, 4096], it would allocate 256 partitions (a false critical, as when helper modules were
    # analysed as entries)
    sub = _submission("kern/entry.py", "entry", {"kern/entry.py": ENTRY, **MODULES})
    items = NkiStaticCollector().collect(sub)
    rows = [i for i in items if i.kind == "nki.alloc" and i.location.file == "kern/ops/tiles.py"
            and i.location.start_line == 14]
    assert [i.labels["shape"] for i in rows] == ["[128, 64]"]
    assert not [i for i in items if i.kind == "nki.partition-over-128" and i.location.start_line == 14]


def test_facts_cover_the_helper_modules_at_their_own_files():
    sub = _submission("kern/entry.py", "entry", {"kern/entry.py": ENTRY, **MODULES})
    items = NkiStaticCollector().collect(sub)
    calls = {(i.location.file, i.labels["function"], i.labels["api"]) for i in items if i.kind == "nki.api_call"}
    assert ("kern/ops/tiles.py", "scale_tile", "nl.multiply") in calls
    assert ("kern/stats.py", "psum_buffer", "nl.ndarray") in calls
    assert not {c for c in calls if c[1] in ("make_out", "unused", "grab")}
    assert [i.location.file for i in items if i.kind == "nki.dialect"] == ["kern/entry.py"]
    # helper modules' unreached functions are library code, not other kernels under review
    assert [i.location.file for i in items if i.kind == "nki.out_of_scope"] == []


WRITER = _BETA + '''

def copy_rows(dst, src):
    nl.store(dst, value=nl.load(src))
    return dst
'''
WRITER_ENTRY = _BETA + '''from .writer import copy_rows


@nki.jit
def entry(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    copy_rows(out, x)
    return out
'''


def test_a_helper_writing_into_the_tensor_its_caller_passes_is_not_a_kernel_writing_its_input():
    sub = _submission("entry.py", "entry", {"entry.py": WRITER_ENTRY, "writer.py": WRITER},
                      [{"name": "x", "shape": [128, 64], "dtype": "float32"}])
    items = NkiStaticCollector().collect(sub)
    assert [i for i in items if i.kind == "nki.api_call" and i.location.file == "writer.py"]  # analysed
    assert _findings(sub) == []
    # the same function as a top-level kernel taking the task's inputs writes into its input
    alone = analyze(WRITER, file="writer.py", entry="copy_rows",
                    inputs=[InputBinding("dst", (128, 64), "float32"), InputBinding("src", (128, 64), "float32")])
    assert [f.rule for f in alone.findings] == ["store-into-input"]


OUTPUTS = _BETA + '''

@nki.jit
def scaled(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(x), 2.0))
    return out


def scratch(x):
    tmp = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    return tmp
'''
HARNESS = '''from .lib.outputs import scaled


def doubled(x):
    return scaled(x)
'''
HARNESS_HELPER = _BETA + '''from .lib.outputs import scratch


@nki.jit
def entry(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    t = scratch(x)
    return out
'''


def test_kernel_level_outputs_of_a_helper_module_kernel_are_legal_and_a_helper_allocation_is_not():
    x = [{"name": "x", "shape": [128, 64], "dtype": "float32"}]
    wrapped = _submission("harness.py", "doubled", {"harness.py": HARNESS, "lib/outputs.py": OUTPUTS}, x)
    items = NkiStaticCollector().collect(wrapped)
    assert [i.labels["name"] for i in items if i.kind == "nki.kernel" and i.location.file == "lib/outputs.py"] == ["scaled"]
    assert _findings(wrapped) == []  # the decorated kernel's outputs at its own top level
    helper = _submission("entry.py", "entry", {"entry.py": HARNESS_HELPER, "lib/outputs.py": OUTPUTS}, x)
    assert _findings(helper) == [("nki.shared-hbm-nested", "lib/outputs.py", 13)]


def test_a_kernel_file_without_helper_calls_keeps_its_findings():
    alone = _submission("kern/entry.py", "entry", {"kern/entry.py": ENTRY})
    with_modules = _submission("kern/entry.py", "entry", {"kern/entry.py": ENTRY, **MODULES})
    entry_only = [f for f in _findings(with_modules) if f[1] == "kern/entry.py"]
    assert entry_only == _findings(alone)


def test_imports_resolve_as_the_loader_does():
    files = ["pkg/a.py", "pkg/sub/b.py", "pkg/sub/__init__.py", "c.py"]
    assert resolve("pkg/sub/b.py", "a", 2, files, "pkg") == "pkg/a.py"
    assert resolve("pkg/a.py", "sub.b", 1, files, "pkg") == "pkg/sub/b.py"
    assert resolve("pkg/a.py", "sub", 1, files, "pkg") == "pkg/sub/__init__.py"
    assert resolve("pkg/a.py", "c", 0, files, "pkg") == "c.py"  # absolute: the kernel's folder, then the root
    assert resolve("pkg/a.py", "sub.b", 0, files, "pkg") == "pkg/sub/b.py"
    assert resolve("pkg/a.py", "numpy", 0, files, "pkg") is None


FLAGGED = _BETA + '''from .lib.outputs import scratch


@nki.jit(experimental_flags="skip-non-top-level-shared-hbm-check")
def entry(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    t = scratch(x)
    return out
'''


def test_a_kernel_skipping_the_nested_shared_hbm_check_covers_the_helper_modules_it_reaches():
    x = [{"name": "x", "shape": [128, 64], "dtype": "float32"}]
    sub = _submission("entry.py", "entry", {"entry.py": FLAGGED, "lib/outputs.py": OUTPUTS}, x)
    assert [i for i in NkiStaticCollector().collect(sub) if i.kind == "nki.api_call" and i.location.file == "lib/outputs.py"]
    assert _findings(sub) == []


NORMS = '''import numpy as np
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


def inv_norm(tile):
    sumsq = nl.ndarray((tile.shape[0], 1), dtype=tile.dtype, buffer=nl.sbuf)
    nisa.activation_reduce(op=nl.square, data=tile, reduce_op=np.add, reduce_res=sumsq, dtype=tile.dtype)
    return nisa.activation(op=nl.rsqrt, data=sumsq, dtype=nl.float32)
'''
SCALES = '''from ..norms import inv_norm


def scale_of(t):
    return inv_norm(t)
'''
NORM_ENTRY = _BETA + '''from .lib.scales import scale_of
from .norms import inv_norm


@nki.jit
def kernel(x, y):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(x.shape[0] // 128):
        tile = nl.load(x[t * 128:(t + 1) * 128, :])
        inv = {call}
        nl.store(out[t * 128:(t + 1) * 128, :], value=nl.multiply(tile, inv))
    return out
'''


def _accumulators(call: str, x: str, y: str) -> list[tuple[str, str, int]]:
    files = {"k/entry.py": NORM_ENTRY.format(call=call), "k/norms.py": NORMS, "k/lib/scales.py": SCALES}
    sub = _submission("k/entry.py", "kernel", files, [{"name": "x", "shape": [256, 512], "dtype": x},
                                                      {"name": "y", "shape": [256, 512], "dtype": y}])
    return [f for f in _findings(sub) if f[0] == "nki.low-precision-accumulator"]


def test_a_dtype_passed_through_a_helper_of_another_helper_module_reaches_the_statistic():
    found = [("nki.low-precision-accumulator", "k/norms.py", 8)]
    assert _accumulators("scale_of(tile)", "bfloat16", "float32") == found
    assert _accumulators("scale_of(tile)", "float32", "float32") == []


def test_callers_in_different_files_passing_different_dtypes_leave_the_parameter_unknown():
    two = "inv_norm(tile)\n        other = scale_of(nl.load(y[0:128, :]))"
    assert _accumulators(two, "bfloat16", "float32") == []
    assert _accumulators(two, "bfloat16", "bfloat16") == [("nki.low-precision-accumulator", "k/norms.py", 8)]


TRANSPOSES = '''import nki.isa as nisa
import nki.language as nl


def load_keys(dst, k, cfg):
    for b in range(cfg.batches):
        nisa.dma_transpose(dst[b], k[b])
'''
TRANSPOSE_ENTRY = '''import nki
import nki.language as nl
from .transposes import load_keys


@nki.jit
def entry(k, cfg):
    t = nl.ndarray((2, 128, 128), dtype=k.dtype, buffer=nl.sbuf)
    load_keys(t, k, cfg)
    return t
'''


def test_a_dma_transpose_in_a_helper_loop_of_unknown_trip_count_does_not_claim_it_runs_once():
    sub = _submission("entry.py", "entry", {"entry.py": TRANSPOSE_ENTRY, "transposes.py": TRANSPOSES},
                      [{"name": "k", "shape": [2, 128, 128], "dtype": "bfloat16"}])
    found = [i for i in NkiStaticCollector().collect(sub) if i.kind == "nki.load-transpose-in-loop"]
    assert [(i.location.file, i.location.start_line) for i in found] == [("transposes.py", 7)]
    assert "runs once per iteration of a loop of unknown trip count" in found[0].title


CONFIG = '''from dataclasses import dataclass

import nki.language as nl


@dataclass
class KeyConfig(nl.NKIObject):
    batches: int = 2
    transposed: bool = False
    tuned: bool = False
'''
CONFIG_KEYS = '''import nki.isa as nisa
import nki.language as nl


def load_keys(dst, k, cfg):
    for b in range(cfg.batches):
        if not cfg.transposed:
            nisa.dma_copy(dst=dst[b], src=k[b])
        else:
            nisa.dma_transpose(dst[b], k[b])
'''
CONFIG_ENTRY = '''import nki
import nki.language as nl
from .config import KeyConfig
from .keys import load_keys


@nki.jit
def entry(k, transposed=False):
    t = nl.ndarray((2, 128, 128), dtype=k.dtype, buffer=nl.sbuf)
    load_keys(t, k, KeyConfig(batches=2, transposed=transposed))
    return t
'''


def _transposes(entry: str, value: bool) -> list[tuple[str, int, str]]:
    files = {"entry.py": entry, "config.py": CONFIG, "keys.py": CONFIG_KEYS}
    sub = _submission("entry.py", "entry", files, [{"name": "k", "shape": [2, 128, 128], "dtype": "bfloat16"},
                                                   {"name": "transposed", "value": value}])
    return [(i.location.file, i.location.start_line, i.title) for i in NkiStaticCollector().collect(sub)
            if i.kind == "nki.load-transpose-in-loop"]


def test_a_config_records_field_decides_a_helpers_branch():
    # the transposed layout runs the DMA transpose, twice (the record's batches); the plain layout never does
    assert _transposes(CONFIG_ENTRY, True) == [
        ("keys.py", 10, "nisa.dma_transpose inside a loop (line 6) runs 2x as a DMA transpose")]
    assert _transposes(CONFIG_ENTRY, False) == []


def test_a_field_some_code_assigns_stays_unknown():
    mutating = CONFIG_ENTRY.replace("    load_keys(t, k, KeyConfig(batches=2, transposed=transposed))",
                                    "    cfg = KeyConfig(batches=2, transposed=transposed)\n"
                                    "    cfg.transposed = not cfg.tuned\n    load_keys(t, k, cfg)")
    assert [f[:2] for f in _transposes(mutating, False)] == [("keys.py", 10)]


def test_a_function_a_package_re_exports_gets_its_callers_arguments():
    entry = ENTRY.replace("from .ops.tiles import scale_tile, make_out, head_rows", "from .ops import scale_tile, head_rows")
    files = {"kern/entry.py": entry, "kern/ops/__init__.py": "from .tiles import scale_tile, head_rows\n", **MODULES}
    items = NkiStaticCollector().collect(_submission("kern/entry.py", "entry", files))
    rows = [i.labels["shape"] for i in items if i.kind == "nki.alloc" and i.location == i.location.__class__(
        file="kern/ops/tiles.py", start_line=14, end_line=14)]
    assert rows == ["[128, 64]"]
    assert ("nki.partition-over-128", "kern/ops/tiles.py", 5) in _findings(_submission("kern/entry.py", "entry", files))


def test_a_dataclass_with_its_own_constructor_is_not_read_as_a_record():
    # its __init__ keeps the argument elsewhere: `transposed` stays at its default True, so the transpose runs
    own_init = CONFIG.replace("    transposed: bool = False\n", "    transposed: bool = True\n") + '''
    def __init__(self, transposed):
        self.plain = transposed
'''
    files = {"entry.py": CONFIG_ENTRY.replace("KeyConfig(batches=2, transposed=transposed)",
                                              "KeyConfig(transposed=transposed)"),
             "config.py": own_init, "keys.py": CONFIG_KEYS}
    sub = _submission("entry.py", "entry", files, [{"name": "k", "shape": [2, 128, 128], "dtype": "bfloat16"},
                                                   {"name": "transposed", "value": False}])
    assert [(i.location.file, i.location.start_line) for i in NkiStaticCollector().collect(sub)
            if i.kind == "nki.load-transpose-in-loop"] == [("keys.py", 10)]


def test_a_plain_wrapper_entry_reports_the_dialect_of_the_kernel_it_runs():
    scale = ("import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n@nki.jit\ndef scale(x):\n"
             "    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)\n"
             "    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)\n    nisa.dma_copy(dst=t, src=x)\n"
             "    nl.store(out, value=t)\n    return out\n")
    wrapper = "from .lib.scale import scale\n\n\ndef doubled(x):\n    return scale(x)\n"
    sub = _submission("harness.py", "doubled", {"harness.py": wrapper, "lib/scale.py": scale},
                      [{"name": "x", "shape": [128, 64], "dtype": "float32"}])
    [dialect] = [i for i in NkiStaticCollector().collect(sub) if i.kind == "nki.dialect"]
    assert (dialect.location.file, dialect.labels["dialect"], dialect.labels["version"]) == ("harness.py", "standalone", "0.3+")
    assert dialect.labels["features"] == "dst_first,load_store"


def test_the_what_ifs_get_the_helper_modules_findings_with_their_file():
    from evidence.perf.collector import static_hints
    sub = _submission("entry.py", "entry", {"entry.py": TRANSPOSE_ENTRY, "transposes.py": TRANSPOSES},
                      [{"name": "k", "shape": [2, 128, 128], "dtype": "bfloat16"}])
    assert static_hints(sub) == [("load-transpose-in-loop", 7, 7, "transposes.py")]
