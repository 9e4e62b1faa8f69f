"""device-print: nl.device_print left in a kernel."""

from __future__ import annotations

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule
from evidence.static.model import CallInfo


class DevicePrint(Rule):
    """Flags `nl.device_print` calls.

    device_print prints only under `nki.simulate_kernel`; on hardware it is dropped or adds
    instructions and DMA traffic, and it signals debugging code left in a submission (REFERENCE
    §3.6, §6).

    Fix: remove it, or guard debugging behind a Python flag that is off by default.
    """

    id = "device-print"
    severity = Severity.low
    dialects = (BETA, STANDALONE)
    performance = False
    VALID = ["import neuronxcc.nki.language as nl\nx = nl.exp(y)\n"]
    INVALID = [Invalid("import neuronxcc.nki.language as nl\nnl.device_print('x', y)\n", line=2)]

    def on_call(self, call: CallInfo) -> None:
        if call.name == "nl.device_print":
            self.report(call.node, "nl.device_print left in the kernel (prints only in simulation)")
