"""Where the shipped rubrics and prompt templates live, and the user directories layered over them.

The repository keeps them in its top-level `rubrics/` and `prompts/` folders. A wheel ships them as
package data under `grader/` (setup.py maps the folders at build time), found through
`importlib.resources`. A source checkout or an editable install has no `grader/rubrics`, so there
the checkout's folders are used. User directories (`GRADER_RUBRIC_PATH`, `GRADER_PROMPT_PATH`,
`os.pathsep`-separated) come first: a user rubric or template with a shipped name overrides it.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

SHIPPED = ("rubrics", "prompts")
_CHECKOUT = Path(__file__).resolve().parent.parent


def shipped_dir(name: str) -> Path:
    """The shipped `rubrics` or `prompts` folder: package data when installed, the checkout's otherwise."""
    if name not in SHIPPED:
        raise ValueError(f"no shipped folder {name!r}; expected one of {SHIPPED}")
    packaged = files("grader") / name
    if packaged.is_dir():
        return Path(str(packaged))  # wheels install unpacked, so package data is a real directory
    return _CHECKOUT / name


def search_path(name: str, user_path: str | None = None) -> tuple[Path, ...]:
    """User directories from `user_path` (first wins), then the shipped folder."""
    user = [Path(p).expanduser() for p in (user_path or "").split(os.pathsep) if p.strip()]
    return (*user, shipped_dir(name))


def describe(dirs: tuple[Path, ...]) -> str:
    """The searched directories for an error message, saying which do not exist."""
    return ", ".join(str(d) + ("" if d.is_dir() else " (missing)") for d in dirs)
