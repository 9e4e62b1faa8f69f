"""What every page needs once per process, paid at start-up instead of by the first reviewer.

A fresh server used to spend most of a second on its first draft page: compiling the Jinja2
templates, compiling the Pygments lexers' regular expressions, and loading the rubric (whose check of
evidence kinds imports every collector). None of it depends on a request, so the application's
lifespan does it before the server accepts connections; later calls in the same process cost
milliseconds (everything here is cached per process).

`grader serve` then settles the heap: start-up leaves some 160,000 objects the cyclic garbage
collector would walk on every full collection (about 90 ms of CPU each, several hundred ms of wall
time on a loaded machine, landing on whichever request triggers it). `gc.freeze()` moves them to the
permanent generation, so a full collection walks only what requests made since (the cached drafts:
about 12 ms of CPU with 32 of 200 items). Only the serving process does this; a test process keeps
creating and dropping applications and must keep collecting them.
"""

from __future__ import annotations

import gc
import logging
from pathlib import Path

from grader.errors import GraderError
from grader.rubric import available_rubrics, load_rubric
from grader.web.assets import standalone_csp, stylesheet_version
from grader.web.source import highlight_excerpt, highlight_file, known_lexers
from grader.web.templating import environment

log = logging.getLogger("grader.web")
SAMPLE = "def f(x):\n    return x  # sample\n"


def warm(rubric_dirs: tuple[Path, ...]) -> None:
    env = environment()
    for name in env.list_templates(extensions=["j2"]):
        env.get_template(name)
    for lexer in known_lexers():
        lexer()  # the first instance of a lexer class compiles its token regexes
    highlight_file("warm.py", SAMPLE, (1,))
    highlight_excerpt("warm.py", SAMPLE, 1, 1, prefix="warm-L")
    stylesheet_version(), standalone_csp()
    for rubric_id in available_rubrics(rubric_dirs):
        try:
            load_rubric(rubric_id, rubric_dirs)
        except GraderError as exc:  # a broken rubric fails the pages that use it, not the server's start
            log.warning("rubric %s not loaded at start-up: %s", rubric_id, exc.one_line())


def settle_heap() -> None:
    """Collect once, then exempt everything alive from later collections (see above)."""
    gc.collect()
    gc.freeze()
