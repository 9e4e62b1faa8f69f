"""The one place litellm is imported: lazily, offline price table, no debug banners.

`import litellm` takes seconds and, unless LITELLM_LOCAL_MODEL_COST_MAP=True is set first, fetches
its price table from the network at every start. Only the model path calls this.
"""

from __future__ import annotations

import logging
import os
from functools import cache
from types import ModuleType


@cache
def load_litellm() -> ModuleType:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    # Failures are recorded in the draft; keep handled retries from printing through logging's
    # last-resort handler when the application configured no logging (records still propagate).
    for name in ("instructor", "LiteLLM"):
        logging.getLogger(name).addHandler(logging.NullHandler())
    return litellm
