"""Issue 8.4: one path-safety helper, and manifest specs validated where they are defined."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from evidence.paths import UnsafePath, resolve_inside, safe_relpath
from evidence.submission import InputSpec, Manifest, Submission

MANIFEST = {"task": {"id": "t", "title": "t"}, "kernel": {"file": "kernel.py", "entry": "k"},
            "inputs": [{"name": "x", "shape": [4]}], "reference": {"file": "ref.py", "entry": "r"}}


@pytest.mark.parametrize("bad", ["", ".", "/etc/passwd", "../x.py", "a/../../x.py", "a\\b.py", "a\x00.py"])
def test_unsafe_paths_are_refused(bad):
    with pytest.raises(UnsafePath, match="must be relative and stay inside the submission"):
        safe_relpath(bad)


def test_safe_paths_are_normalised_and_symlinks_out_are_refused(tmp_path):
    assert safe_relpath("./lib//helpers.py") == "lib/helpers.py"
    (tmp_path / "sub").mkdir()
    (tmp_path / "secret.txt").write_text("s")
    (tmp_path / "sub" / "link.py").symlink_to(tmp_path / "secret.txt")
    (tmp_path / "sub" / "ok.py").write_text("x = 1")
    assert resolve_inside(tmp_path / "sub", "ok.py") == (tmp_path / "sub" / "ok.py").resolve()
    with pytest.raises(UnsafePath, match="links outside the submission folder"):
        resolve_inside(tmp_path / "sub", "link.py")


@pytest.mark.parametrize("field, value", [("kernel", {"file": "../k.py", "entry": "k"}),
                                          ("reference", {"file": "/abs/ref.py", "entry": "r"}),
                                          ("notes", {"file": "..\\notes.md"})])
def test_manifest_file_fields_use_the_helper(field, value):
    with pytest.raises(ValidationError, match="must be relative and stay inside the submission"):
        Manifest.model_validate({**MANIFEST, field: value})


def test_submission_files_keys_use_the_helper():
    manifest = Manifest.model_validate(MANIFEST)
    with pytest.raises(ValidationError, match="must be relative"):
        Submission(manifest=manifest, files={"../../etc/cron.d/x": "boom"})


@pytest.mark.parametrize("spec, message", [
    ({"dtype": "float64"}, "unknown dtype 'float64'; expected one of float32, bfloat16"),
    ({"distribution": "cauchy"}, "unknown distribution 'cauchy'"),
    ({"shape": [4, 0]}, "shape must be a list of positive integers, got [4, 0]"),
    ({"shape": []}, "input 'x' is a tensor (no value) and needs a non-empty shape"),
])
def test_input_specs_validate_themselves(spec, message):
    with pytest.raises(ValidationError) as info:
        InputSpec(**{"name": "x", "shape": (4,), **spec})
    assert message in str(info.value)
    InputSpec(name="n", value=3)  # a plain value needs no shape


def test_grid_and_input_names_are_checked_in_the_manifest():
    with pytest.raises(ValidationError, match="grid sizes must be positive"):
        Manifest.model_validate({**MANIFEST, "kernel": {"file": "k.py", "entry": "k", "grid": [2, 0]}})
    with pytest.raises(ValidationError, match="input names must be unique"):
        Manifest.model_validate({**MANIFEST, "inputs": [{"name": "x", "shape": [4]}, {"name": "x", "shape": [4]}]})
