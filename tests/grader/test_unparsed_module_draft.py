"""A helper module that does not parse is not scored as if it were clean: the criteria whose evidence reads the
kernel's code say the module was not analysed (citing its file:line) and carry the `unobserved` flag. The
simulation stops where the kernel imports it (Python's SyntaxError: a defect of the kernel, not a limit of
the simulator).

Every kernel here is written for these tests (rows times two, 128 x 512 fp32)."""

from __future__ import annotations

from pathlib import Path

from tests.grader.scale_rows import drafted, gathered, write

KERNEL = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
from blocks import scale_block


@nki.jit
def scale_rows(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=scale_block(nl.load(x), 2.0))
    return out
'''
BLOCKS = '''import neuronxcc.nki.language as nl


def scale_block(t, factor):
    return nl.multiply(t, factor
'''


def test_criteria_reading_the_code_say_the_unparsed_module_was_not_analysed(tmp_path: Path):
    sub, bundle = gathered(write(tmp_path, KERNEL, modules={"blocks.py": BLOCKS}))
    (item,) = bundle.of_kind("nki.unparsed_module")
    assert (item.location.file, item.location.start_line, item.labels["imported_by"]) == ("blocks.py", 5, "kernel.py:3")
    (stop,) = bundle.of_kind("sim.error")  # the kernel does not load: its defect, not the simulator's limit
    assert stop.labels["code"] == "syntax_error" and stop.location.file == "blocks.py"
    d = drafted(sub, bundle)
    assert d.criterion("kernel_correctness").score == 1
    for cid in ("tiling", "precision", "neuron_platform"):
        c = d.criterion(cid)
        assert c.status == "scored", cid
        assert "helper module the kernel imports does not parse" in c.rationale, cid
        assert f"[{item.id}] at blocks.py:5" in c.rationale, cid
        assert "unobserved" in {f.code for f in c.flags} and item.id in {x.evidence_id for x in c.citations}, cid
