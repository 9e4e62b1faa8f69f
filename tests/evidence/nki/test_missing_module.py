"""Whose defect a failing import is: a module of the submission's own namespace it does not include is the
kernel's (`submission_import_error` -> `sim.error` at the import line); a package the sandbox does not install
stays the simulator's limit (`import_error` -> `sim.incomplete`)."""

from __future__ import annotations

import pytest

from evidence.nki import load_kernel
from evidence.nki.errors import KernelLoadError
from evidence.nki.sim_evidence import SIMULATOR_LIMIT_CODES
from evidence.submission import Manifest, Submission

KERNEL = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
{imports}

@nki.jit
def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(a))
    return out
"""


def _load(tmp_path, imports: str, files: dict[str, str] | None = None):
    for rel, text in (files or {}).items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    path = tmp_path / "kernel.py"
    path.write_text(KERNEL.format(imports=imports))
    with pytest.raises(KernelLoadError) as info:
        load_kernel(path, display="kernel.py", root=tmp_path)
    err = info.value
    assert "\n" not in err.message and "nki_submission" not in err.message
    return err


def test_a_relative_import_of_a_helper_the_submission_lacks_is_the_kernels_defect(tmp_path):
    err = _load(tmp_path, "from .tile_helpers import plan")
    assert (err.code, err.file, err.line) == ("submission_import_error", "kernel.py", 3)
    assert ".tile_helpers" in err.message and "does not include" in err.message
    assert err.code not in SIMULATOR_LIMIT_CODES
    err = _load(tmp_path, "from . import tile_helpers")
    assert err.code == "submission_import_error" and ".tile_helpers" in err.message


def test_a_missing_module_under_a_folder_the_submission_has_is_the_kernels_defect(tmp_path):
    err = _load(tmp_path, "from tiles.plan import plan", {"tiles/__init__.py": "", "tiles/shapes.py": "X = 1\n"})
    assert (err.code, err.line) == ("submission_import_error", 3) and "tiles.plan" in err.message


def test_a_sibling_helper_kept_in_another_folder_is_the_kernels_defect(tmp_path):
    err = _load(tmp_path, "import my_tile_utils", {"lib/my_tile_utils.py": "X = 1\n"})
    assert err.code == "submission_import_error" and "lib/my_tile_utils.py" in err.message


def test_a_name_a_helper_does_not_define_is_the_kernels_defect_at_the_helpers_line(tmp_path):
    helper = "import numpy as np\nfrom .shapes import TILE\n"
    err = _load(tmp_path, "from .helpers import plan", {"helpers.py": helper, "shapes.py": "ROWS = 128\n"})
    assert (err.code, err.file, err.line) == ("submission_import_error", "helpers.py", 2)
    assert "TILE" in err.message and ".shapes" in err.message


def test_an_uninstalled_third_party_package_stays_the_simulators_limit(tmp_path):
    # no file or folder of that name anywhere in the submission: a vendor package and a missing helper look the
    # same, and a false defect is worse than an unobserved criterion (evidence.nki.import_failure)
    err = _load(tmp_path, "import acme_vendor_kernels_sdk", {"helpers.py": "X = 1\n"})
    assert (err.code, err.line) == ("import_error", 3) and err.code in SIMULATOR_LIMIT_CODES
    assert "acme_vendor_kernels_sdk" in err.message and "does not install" in err.message


def test_a_module_the_nki_shim_lacks_stays_the_simulators_limit(tmp_path):
    err = _load(tmp_path, "import neuronxcc.nki.kernels_we_lack")
    assert err.code == "import_error"


def _submission(imports: str, files: dict[str, str]) -> Submission:
    manifest = Manifest.model_validate({
        "task": {"id": "t", "title": "t"},
        "kernel": {"file": "kernel.py", "entry": "kernel"},
        "inputs": [{"name": "a", "shape": [128, 64]}],
        "reference": {"file": "ref.py", "entry": "ref"},
    })
    return Submission(manifest=manifest, files={"kernel.py": KERNEL.format(imports=imports),
                                                "ref.py": "def ref(a):\n    return a\n", **files})


def test_the_collector_reports_a_missing_helper_as_sim_error_and_a_missing_package_as_incomplete():
    from evidence.nki.collector import SimulationCollector

    items = {i.kind: i for i in SimulationCollector().collect(_submission("from .tile_helpers import plan", {}))}
    err = items["sim.error"]
    assert err.labels["code"] == "submission_import_error" and "sim.incomplete" not in items
    assert (err.location.file, err.location.start_line) == ("kernel.py", 3)
    items = {i.kind: i for i in SimulationCollector().collect(_submission("import acme_vendor_kernels_sdk", {}))}
    assert items["sim.incomplete"].labels["code"] == "import_error" and "sim.error" not in items


BODY_IMPORT = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(a):
    {imports}
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(a))
    return out
"""


@pytest.mark.parametrize("line, code", [("from .tile_helpers import plan", "submission_import_error"),
                                        ("import acme_vendor_kernels_sdk", "import_error")])
def test_an_import_in_the_kernels_body_is_judged_as_at_load_time(tmp_path, line, code):
    # it failed as the kernel's own python_error (sim.error) whatever it imported
    import numpy as np

    from evidence.nki import simulate
    from evidence.nki.errors import EvidenceError

    path = tmp_path / "kernel.py"
    path.write_text(BODY_IMPORT.format(imports=line))
    mod = load_kernel(path, display="kernel.py", root=tmp_path)
    with pytest.raises(EvidenceError) as info:
        simulate(mod.kernel, np.ones((128, 8), np.float32))
    err = info.value
    assert (err.code, err.file, err.line) == (code, "kernel.py", 7) and "\n" not in err.message


def test_a_helper_the_submission_has_imported_in_the_body_still_runs(tmp_path):
    import numpy as np

    from evidence.nki import simulate

    (tmp_path / "tile_helpers.py").write_text("plan = 2.0\n")
    path = tmp_path / "kernel.py"
    path.write_text(BODY_IMPORT.format(imports="from .tile_helpers import plan").replace(
        "value=nl.load(a)", "value=nl.multiply(nl.load(a), plan)"))
    mod = load_kernel(path, display="kernel.py", root=tmp_path)
    np.testing.assert_array_equal(simulate(mod.kernel, np.ones((128, 8), np.float32)).outputs[0], 2.0)
