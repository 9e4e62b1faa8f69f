"""Load and validate a submission: a folder with `submission.toml` (DESIGN §4) or an API upload.

Every problem becomes a one-line `SubmissionError` naming the file and the field (or file:line for
sources). Sources are parsed, never executed, here.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evidence.paths import UnsafePath, resolve_inside
from evidence.submission import Manifest, Submission
from evidence.validation import first_error
from grader.errors import SubmissionError, SubmissionTooLarge

MANIFEST = "submission.toml"


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int = 256 * 1024
    max_submission_bytes: int = 1024 * 1024
    max_files: int = 64  # nki-library kernels import up to ~40 modules (moe_block_tkg: at least 36, mlp_tkg 17)
    max_tensor_elements: int = 64 * 1024 * 1024

    @classmethod
    def from_settings(cls, settings: Any) -> Limits:
        return cls(settings.max_file_bytes, settings.max_submission_bytes, settings.max_files)


def parse_manifest(data: dict[str, Any], where: str = MANIFEST) -> Manifest:
    try:
        manifest = Manifest.model_validate(data)
    except ValidationError as exc:
        field, message = first_error(exc)
        raise SubmissionError(message, where=where, field=field) from exc
    return manifest


def _referenced_files(manifest: Manifest) -> dict[str, str]:
    """relative path -> the manifest field naming it."""
    refs = {"kernel.file": manifest.kernel.file}
    for i, module in enumerate(manifest.kernel.modules):
        refs[f"kernel.modules[{i}]"] = module
    if manifest.reference:
        refs["reference.file"] = manifest.reference.file
    if manifest.migration:
        refs["migration.cuda_file"] = manifest.migration.cuda_file
        for i, header in enumerate(manifest.migration.cuda_headers):
            refs[f"migration.cuda_headers[{i}]"] = header
    if manifest.claims:
        refs["claims.file"] = manifest.claims.file
    if manifest.notes:
        refs["notes.file"] = manifest.notes.file
    if manifest.baseline:
        refs["baseline.file"] = manifest.baseline.file
    return {path: field for field, path in refs.items()}  # the manifest model made the paths safe (evidence.paths)


def _check_python(source: str, file: str, entry: str, entry_field: str) -> None:
    try:
        tree = ast.parse(source, filename=file)
    except SyntaxError as exc:
        raise SubmissionError(f"Python syntax error: {exc.msg}", where=f"{file}:{exc.lineno or 1}") from exc
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    if entry not in defined:
        raise SubmissionError(f"no top-level function {entry!r} in {file}", where=MANIFEST, field=entry_field)


def build_submission(data: dict[str, Any], read: Callable[[str], bytes | None], limits: Limits = Limits()) -> Submission:
    """Validate a manifest dict and read the files it names through `read` (None = missing)."""
    manifest = parse_manifest(data)
    refs = _referenced_files(manifest)
    if len(refs) > limits.max_files:
        raise SubmissionTooLarge(f"{len(refs)} files exceed the limit of {limits.max_files}", where=MANIFEST)
    for i, spec in enumerate(manifest.inputs):
        count = 1
        for d in spec.shape:
            count *= d
        if count > limits.max_tensor_elements:
            raise SubmissionTooLarge(f"{count} elements exceed the limit of {limits.max_tensor_elements}",
                                     where=MANIFEST, field=f"inputs[{i}].shape")
    files: dict[str, str] = {}
    total = 0
    for rel, field in refs.items():
        raw = read(rel)
        if raw is None:
            raise SubmissionError(f"file {rel!r} not found", where=MANIFEST, field=field)
        if len(raw) > limits.max_file_bytes:
            raise SubmissionTooLarge(f"{len(raw)} bytes exceed the per-file limit of {limits.max_file_bytes}", where=rel)
        total += len(raw)
        if total > limits.max_submission_bytes:
            raise SubmissionTooLarge(f"submission exceeds {limits.max_submission_bytes} bytes", where=rel)
        try:
            files[rel] = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SubmissionError(f"not UTF-8 text (byte {exc.start})", where=rel) from exc
    _check_python(files[manifest.kernel.file], manifest.kernel.file, manifest.kernel.entry, "kernel.entry")
    if manifest.reference:
        _check_python(files[manifest.reference.file], manifest.reference.file, manifest.reference.entry, "reference.entry")
    if manifest.baseline:
        _check_python(files[manifest.baseline.file], manifest.baseline.file, manifest.baseline.entry, "baseline.entry")
    return Submission(manifest=manifest, files=dict(sorted(files.items())))


def parse_manifest_text(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SubmissionError(f"invalid TOML: {exc}", where=MANIFEST) from exc


def load_submission(folder: str | Path, limits: Limits = Limits()) -> Submission:
    """A submission folder (or the path of its submission.toml)."""
    root = Path(folder)
    if root.is_file() and root.name == MANIFEST:
        root = root.parent
    manifest_path = root / MANIFEST
    if not root.is_dir():
        raise SubmissionError("not a submission folder", where=str(root))
    if not manifest_path.is_file():
        raise SubmissionError(f"no {MANIFEST} in the folder", where=str(root))
    try:
        raw = manifest_path.read_bytes()
    except OSError as exc:
        raise SubmissionError(f"cannot read: {exc.strerror}", where=MANIFEST) from exc
    if len(raw) > limits.max_file_bytes:
        raise SubmissionTooLarge("manifest too large", where=MANIFEST)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SubmissionError(f"not UTF-8 text (byte {exc.start})", where=MANIFEST) from exc
    data = parse_manifest_text(text)
    base = root.resolve()

    def read(rel: str) -> bytes | None:
        if not (base / rel).exists():
            return None
        try:
            path = resolve_inside(base, rel)
        except UnsafePath as exc:
            raise SubmissionError(str(exc), where=rel) from exc
        if not path.is_file():
            raise SubmissionError("not a regular file", where=rel)
        try:
            size = path.stat().st_size
            if size > limits.max_file_bytes:  # refuse before reading a huge file into memory
                raise SubmissionTooLarge(f"{size} bytes exceed the per-file limit of {limits.max_file_bytes}", where=rel)
            return path.read_bytes()
        except OSError as exc:
            raise SubmissionError(f"cannot read: {exc.strerror}", where=rel) from exc

    return build_submission(data, read, limits)


def submission_from_upload(manifest: dict[str, Any] | str, files: dict[str, str], limits: Limits = Limits()) -> Submission:
    """An API upload: the manifest (TOML text or a dict) and the text of each file by relative path."""
    data = parse_manifest_text(manifest) if isinstance(manifest, str) else manifest

    def read(rel: str) -> bytes | None:
        text = files.get(rel)
        return None if text is None else text.encode("utf-8")

    return build_submission(data, read, limits)
