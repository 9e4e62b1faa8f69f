"""Paths that come from submissions: the one place that decides whether a path stays inside.

Every submission-relative path (manifest file fields, upload keys, files written into a sandbox
job) goes through `safe_relpath`; reading a submission folder goes through `resolve_inside`, which
also refuses symlinks that lead out of the folder.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Annotated

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError


class UnsafePath(ValueError):
    """A submission path that is absolute, climbs out of the submission, or links outside it."""


def safe_relpath(name: str) -> str:
    """`name` as a normalised relative POSIX path inside the submission, or UnsafePath."""
    path = PurePosixPath(name)
    if (not name or path.is_absolute() or ".." in path.parts or "\\" in name or "\x00" in name
            or str(path) in ("", ".")):
        raise UnsafePath(f"file path {name!r} must be relative and stay inside the submission")
    return str(path)


def resolve_inside(base: Path, rel: str) -> Path:
    """The real path of `rel` under the folder `base`; UnsafePath when it resolves outside `base`."""
    root = base.resolve()
    path = (root / safe_relpath(rel)).resolve()
    if root not in path.parents:
        raise UnsafePath("links outside the submission folder")
    return path


def _validated(name: str) -> str:
    try:
        return safe_relpath(name)
    except UnsafePath as exc:
        raise PydanticCustomError("unsafe_path", str(exc)) from None


# A manifest field holding a submission-relative file path.
RelPath = Annotated[str, AfterValidator(_validated)]
