"""Submission loading: every malformed input is a one-line error naming file and field."""

from __future__ import annotations

import pytest

from grader.errors import SubmissionError, SubmissionTooLarge
from grader.submission import Limits, load_submission, submission_from_upload
from tests.conftest import EXAMPLE_NAMES, EXAMPLES


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_examples_load(name):
    sub = load_submission(EXAMPLES / name)
    assert sub.manifest.kernel.file in sub.files
    assert sub.content_hash.startswith("sha256:")


def test_content_hash_is_stable_and_content_sensitive(example_copy):
    root = example_copy("matmul-tiled")
    first = load_submission(root).content_hash
    assert load_submission(root).content_hash == first
    (root / "kernel.py").write_text((root / "kernel.py").read_text() + "\n# edited\n")
    assert load_submission(root).content_hash != first


def _edit_manifest(root, old, new):
    path = root / "submission.toml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _error(root, limits=Limits()) -> SubmissionError:
    with pytest.raises(SubmissionError) as info:
        load_submission(root, limits)
    message = str(info.value)
    assert "\n" not in message
    return info.value


def test_malformed_toml_is_named(example_copy):
    root = example_copy("matmul-tiled")
    _edit_manifest(root, 'id = "matmul-tiled-bf16"', 'id = "matmul-tiled-bf16')
    assert "submission.toml" in str(_error(root)) and "invalid TOML" in str(_error(root))


def test_unknown_key(example_copy):
    root = example_copy("matmul-tiled")
    _edit_manifest(root, 'target = "trn2"', 'target = "trn2"\ncolour = "blue"')
    assert str(_error(root)) == "submission.toml: task.colour: unknown key"


def test_missing_key(example_copy):
    root = example_copy("matmul-tiled")
    _edit_manifest(root, 'entry = "matmul_tiled"', "")
    assert str(_error(root)) == "submission.toml: kernel.entry: missing required key"


def test_unknown_target(example_copy):
    root = example_copy("matmul-tiled")
    _edit_manifest(root, 'target = "trn2"', 'target = "h100"')
    message = str(_error(root))
    assert message.startswith("submission.toml: task.target:") and "trn1" in message


def test_bad_dtype_names_the_input(example_copy):
    root = example_copy("matmul-tiled")
    _edit_manifest(root, 'dtype = "bfloat16"', 'dtype = "float64"')
    message = str(_error(root))
    assert message.startswith("submission.toml: inputs[0].dtype: unknown dtype 'float64'")


def test_bad_shape(example_copy):
    root = example_copy("matmul-tiled")
    _edit_manifest(root, "shape = [256, 256]", "shape = [256, 0]")
    assert "inputs[0].shape" in str(_error(root))


def test_missing_kernel_file(example_copy):
    root = example_copy("matmul-tiled")
    (root / "kernel.py").unlink()
    assert str(_error(root)) == "submission.toml: kernel.file: file 'kernel.py' not found"


def test_kernel_syntax_error_names_file_and_line(example_copy):
    root = example_copy("softmax-ragged-defect")
    lines = (root / "kernel.py").read_text().splitlines()
    lines[9] = "    rows, cols = x.shape +"
    (root / "kernel.py").write_text("\n".join(lines) + "\n")
    message = str(_error(root))
    assert message.startswith("kernel.py:10: Python syntax error")


def test_missing_entry_function(example_copy):
    root = example_copy("softmax-ragged-defect")
    _edit_manifest(root, 'entry = "softmax_rows"', 'entry = "softmax"')
    assert "kernel.entry" in str(_error(root)) and "'softmax'" in str(_error(root))


def test_oversize_file(example_copy):
    root = example_copy("matmul-tiled")
    (root / "kernel.py").write_text("# padding\n" * 5000)
    err = _error(root, Limits(max_file_bytes=20_000))
    assert isinstance(err, SubmissionTooLarge)
    assert str(err).startswith("kernel.py:") and "per-file limit of 20000" in str(err)


def test_path_escape_is_refused(example_copy):
    root = example_copy("matmul-tiled")
    _edit_manifest(root, 'file = "kernel.py"', 'file = "../../etc/passwd"')
    assert "must be relative and stay inside the submission" in str(_error(root))


def test_not_a_folder(tmp_path):
    with pytest.raises(SubmissionError, match="not a submission folder"):
        load_submission(tmp_path / "nope")


def test_upload_matches_folder():
    root = EXAMPLES / "rmsnorm-cuda-port"
    folder = load_submission(root)
    upload = submission_from_upload((root / "submission.toml").read_text(), dict(folder.files))
    assert upload.content_hash == folder.content_hash


def test_upload_missing_file():
    root = EXAMPLES / "matmul-tiled"
    with pytest.raises(SubmissionError, match="reference.file: file 'reference.py' not found"):
        submission_from_upload((root / "submission.toml").read_text(), {"kernel.py": (root / "kernel.py").read_text()})


def test_non_utf8_sources_and_manifest_are_named(example_copy):
    root = example_copy("matmul-tiled")
    (root / "reference.py").write_bytes(b"def matmul_ref(a, b):\n    return a  # \xff\n")
    assert str(_error(root)) == "reference.py: not UTF-8 text (byte 38)"
    (root / "submission.toml").write_bytes(b"[task]\nid = \"\xfe\"\n")
    assert str(_error(root)) == "submission.toml: not UTF-8 text (byte 13)"


def test_unreadable_file_is_a_clear_error(example_copy):
    root = example_copy("matmul-tiled")
    (root / "kernel.py").unlink()
    (root / "kernel.py").mkdir()  # a directory where a file should be
    assert str(_error(root)) == "kernel.py: not a regular file"


def test_symlink_out_of_the_folder_is_refused(example_copy, tmp_path):
    root = example_copy("matmul-tiled")
    outside = tmp_path / "secret.py"
    outside.write_text("def matmul_ref(a, b):\n    return a\n")
    (root / "reference.py").unlink()
    (root / "reference.py").symlink_to(outside)
    assert str(_error(root)) == "reference.py: links outside the submission folder"


def test_cuda_headers_of_the_migration_are_read_with_the_cuda_file():
    root = EXAMPLES / "rmsnorm-cuda-port"
    folder = load_submission(root)
    manifest = (root / "submission.toml").read_text().replace(
        "[migration]\n", '[migration]\ncuda_headers = ["common.cuh"]\n')
    files = {**folder.files, "common.cuh": "#define DEVICE_FN __device__\n"}
    upload = submission_from_upload(manifest, files)
    assert upload.files["common.cuh"] == "#define DEVICE_FN __device__\n"
    assert upload.manifest.migration.cuda_headers == ("common.cuh",)
    with pytest.raises(SubmissionError, match=r"migration.cuda_headers\[0\]: file 'common.cuh' not found"):
        submission_from_upload(manifest, dict(folder.files))


def _library_upload(modules: int, module_bytes: int = 200) -> tuple[str, dict[str, str]]:
    """A library-style submission: a kernel entry importing `modules` helper modules, and a reference."""
    names = [f"lib/mod_{i:02d}.py" for i in range(modules)]
    files = {name: f"X{i} = {i}\n" + "#" * module_bytes + "\n" for i, name in enumerate(names)}
    files["kernel.py"] = "def entry(x):\n    return x\n"
    files["reference.py"] = "def ref(x):\n    return x\n"
    manifest = (
        '[task]\nid = "lib"\ntitle = "lib"\n\n'
        f'[kernel]\nfile = "kernel.py"\nentry = "entry"\nmodules = {names!r}\n\n'
        '[[inputs]]\nname = "x"\nshape = [128, 8]\n\n'
        '[reference]\nfile = "reference.py"\nentry = "ref"\n'
    ).replace("'", '"')
    return manifest, files


def test_the_default_limits_admit_a_library_kernel_with_its_helper_modules_but_not_without_bound():
    # nki-library's MoE block kernel imports at least 36 library modules (its decode MLP 17): with the entry and the
    # reference that is 38 files, over the old default of 16
    manifest, files = _library_upload(38)
    assert len(submission_from_upload(manifest, files).files) == 40
    manifest, files = _library_upload(63)
    with pytest.raises(SubmissionTooLarge, match="65 files exceed the limit of 64"):
        submission_from_upload(manifest, files)
    # the byte limit still bounds what fits in the file count: 40 modules of 30 KB exceed 1 MiB
    manifest, files = _library_upload(38, module_bytes=30_000)
    with pytest.raises(SubmissionTooLarge, match="submission exceeds 1048576 bytes"):
        submission_from_upload(manifest, files)
