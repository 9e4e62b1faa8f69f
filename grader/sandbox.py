"""How the grader runs submitted code, as an operator sees it: the loud start-up warning when the
sandbox is switched off, the status `grader doctor` prints, and the line every draft records."""

from __future__ import annotations

import logging

from evidence.sandbox.bwrap import SandboxStatus, sandbox_status
from evidence.sandbox.config import SandboxMode
from grader.settings import Settings

log = logging.getLogger("grader.sandbox")
OFF_WARNING = ("GRADER_SANDBOX=off: submitted kernels and references run WITHOUT the bubblewrap sandbox "
               "(rlimits, a clean environment and separate processes only). Every draft records it.")
_announced = False


def announce(settings: Settings) -> None:
    """Warn once per process when the operator opted out of the sandbox (start-up of the CLI and the API)."""
    global _announced
    if settings.sandbox is SandboxMode.off and not _announced:
        _announced = True
        log.warning(OFF_WARNING)


def status(settings: Settings) -> SandboxStatus:
    return sandbox_status(settings.sandbox_config())


def record(settings: Settings) -> dict[str, str]:
    """The sandbox line of a draft's record."""
    st = status(settings)
    return {"mode": st.mode.value, "available": "yes" if st.available else "no", "detail": st.detail,
            "bwrap": st.version or "", "import_policy": "on" if settings.import_policy else "off"}
