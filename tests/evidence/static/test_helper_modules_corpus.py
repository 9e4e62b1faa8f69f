"""The same kernel code gives the same findings whether it is the kernel file or a helper module
behind a plain wrapper entry (the way library kernels are submitted): every corpus kernel, wrapped."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from _corpus import _params, all_files, corpus_entry  # noqa: E402

from evidence.static.engine import analyze  # noqa: E402
from evidence.static.helper_modules import analyze_modules  # noqa: E402

FILES = [p for p in all_files() if p.suffix == ".py" and corpus_entry(p)[2] is not None]


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_a_kernel_behind_a_wrapper_in_another_file_keeps_its_findings(path):
    src, inputs, entry, opts = corpus_entry(path)
    direct = sorted((f.rule, f.start, f.message) for f in analyze(src, file="kern.py", inputs=inputs, entry=entry,
                                                                  options=opts).findings)
    names = [i.name for i in inputs]
    args = ", ".join(f"{p}={p}" for p in _params(src, entry) if p in names)
    wrapper = f"from .kern import {entry}\n\n\ndef wrapper({', '.join(names)}):\n    return {entry}({args})\n"
    top, helpers = analyze_modules({"w.py": wrapper, "kern.py": src}, "w.py", ["kern.py"], "wrapper", opts, inputs)
    assert top.findings == [] and [h.file for h in helpers] == ["kern.py"]
    assert sorted((f.rule, f.start, f.message) for f in helpers[0].findings) == direct
