"""A submission written for the draft tests: rows times two over an fp32 [rows, 512] input. Each test varies
the kernel text and, where it matters, the rows, the reference, helper modules and extra files."""

from __future__ import annotations

from pathlib import Path

from evidence.gather import gather
from evidence.model import EvidenceBundle
from evidence.submission import Submission
from grader.draft import Draft
from grader.drafting.rules import RulesDrafter
from grader.rubric import load_rubric
from grader.submission import load_submission

REFERENCE = "def scale_rows_ref(x):\n    return x * 2.0\n"


def manifest(rows: int = 128, reference: bool = True, modules: tuple[str, ...] = ()) -> str:
    text = (f'[task]\nid = "scale-rows"\ntitle = "Rows times two"\ndescription = "out = 2 x for x [{rows}, 512] fp32"\n'
            f'target = "trn2"\n\n[kernel]\nfile = "kernel.py"\nentry = "scale_rows"\n')
    if modules:
        text += "modules = [" + ", ".join(f'"{m}"' for m in modules) + "]\n"
    text += f'\n[[inputs]]\nname = "x"\nshape = [{rows}, 512]\ndtype = "float32"\ndistribution = "normal"\n'
    if reference:
        text += '\n[reference]\nfile = "reference.py"\nentry = "scale_rows_ref"\n'
    return text


def write(folder: Path, kernel: str, *, rows: int = 128, reference: bool = True,
          modules: dict[str, str] | None = None) -> Path:
    """The submission in `folder`: its manifest, kernel.py, reference.py and helper `modules` (file name -> text)."""
    modules = modules or {}
    (folder / "submission.toml").write_text(manifest(rows, reference, tuple(modules)))
    (folder / "kernel.py").write_text(kernel)
    if reference:
        (folder / "reference.py").write_text(REFERENCE)
    for name, text in modules.items():
        (folder / name).write_text(text)
    return folder


def gathered(folder: Path, exclude: tuple[str, ...] = ("perf", "numerics")) -> tuple[Submission, EvidenceBundle]:
    sub = load_submission(folder)
    return sub, gather(sub, exclude=exclude)


def drafted(sub: Submission, bundle: EvidenceBundle) -> Draft:
    return RulesDrafter().draft(sub, bundle, load_rubric())
