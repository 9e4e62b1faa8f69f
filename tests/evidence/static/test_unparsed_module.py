"""A helper module of a multi-file submission that does not parse is evidence, not a silent gap: one
`nki.unparsed_module` item names its file:line, the parse error (one line) and the import that needs it.

Every kernel here is written for these tests."""

from __future__ import annotations

from evidence.static.collectors import NkiStaticCollector
from evidence.submission import Manifest, Submission

ENTRY = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
from .blocks import scale_block


@nki.jit
def scale_rows(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=scale_block(nl.load(x[0:128, :]), 2.0))
    return out
'''
# a missing closing bracket on line 5: Python reports the line the bracket opens on
BROKEN = '''import neuronxcc.nki.language as nl


def scale_block(t, factor):
    return nl.multiply(t, factor
'''
GOOD = '''import neuronxcc.nki.language as nl


def scale_block(t, factor):
    return nl.multiply(t, factor)
'''


def _items(files: dict[str, str]):
    manifest = Manifest.model_validate({
        "task": {"id": "rows", "title": "rows times two"},
        "kernel": {"file": "kern/entry.py", "entry": "scale_rows", "modules": sorted(set(files) - {"kern/entry.py"})},
        "inputs": [{"name": "x", "shape": [128, 512], "dtype": "float32"}],
    })
    return NkiStaticCollector().collect(Submission(manifest=manifest, files=files))


def test_an_imported_helper_module_that_does_not_parse_is_named_with_its_line_and_error():
    items = _items({"kern/entry.py": ENTRY, "kern/blocks.py": BROKEN})
    (item,) = [i for i in items if i.kind == "nki.unparsed_module"]
    assert (item.location.file, item.location.start_line) == ("kern/blocks.py", 5)
    assert item.labels["imported_by"] == "kern/entry.py:3"
    assert "syntax error" in item.labels["error"] and "\n" not in item.title
    assert item.title.startswith("Helper module blocks.py not analysed: kern/blocks.py:5: syntax error")
    assert item.severity.value == "high"
    # the kernel file itself is still analysed
    assert [i.labels["name"] for i in items if i.kind == "nki.kernel"] == ["scale_rows"]


def test_a_module_no_file_imports_is_named_but_marked_as_not_imported():
    items = _items({"kern/entry.py": ENTRY.replace("from .blocks import scale_block\n", "from .fine import scale_block\n"),
                    "kern/fine.py": GOOD, "kern/blocks.py": BROKEN})
    (item,) = [i for i in items if i.kind == "nki.unparsed_module"]
    assert item.labels["imported_by"] == "none" and item.severity.value == "medium"


def test_modules_that_parse_give_no_item():
    assert not [i for i in _items({"kern/entry.py": ENTRY, "kern/blocks.py": GOOD}) if i.kind == "nki.unparsed_module"]
