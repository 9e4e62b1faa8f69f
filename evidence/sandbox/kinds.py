"""The `security.*` evidence kinds and how findings and monitor events become evidence items.

Both the static import policy (`import-policy` collector) and the simulator's sandboxed run
(`nki-simulator` collector, from the child's monitor and the simulator's host-access checks) emit
these kinds; static items are labelled `source = static`, run-time ones `source = runtime`.
"""

from __future__ import annotations

from evidence.model import EvidenceItem, Location, Severity, make_id

SECURITY_KINDS = {
    "security.import": "an import outside the allow-list; severity by what is done with it and where",
    "security.system_access": "submitted code reaches the system: processes, signals, files outside the job, "
                              "sockets, the environment, threads",
    "security.escape": "submitted code reaches the interpreter's internals: dunder walks, dynamic code, ctypes, "
                       "introspection, monkeypatching of libraries",
    "security.host_compute": "the kernel computes on the host instead of with NKI instructions: host reads of "
                             "tiles, host arrays as operands, returned host data, outputs that read no input",
    "security.input_mutation": "the kernel changed one of its inputs outside NKI instructions",
    "security.reference_access": "the kernel reads or imports the reference it is compared with",
    "security.stand_in": "ML frameworks imported only for a test harness, served as inert stand-ins (never imported)",
}
_TITLES = {
    "import": "Import outside the allow-list", "system_access": "Reaches the system",
    "escape": "Reaches the interpreter's internals", "host_compute": "Computes on the host",
    "input_mutation": "Mutates an input", "reference_access": "Reaches the reference",
}


def security_item(analyzer: str, kind: str, severity: Severity | str, what: str, detail: str, location: Location | None,
                  source: str, **labels: str) -> EvidenceItem:
    """One `security.<kind>` item; `source` is "static" or "runtime" (part of the id, so both can coexist)."""
    where = (location.file, location.start_line) if location else ()
    return EvidenceItem(
        id=make_id(f"security.{kind}", "run" if source == "runtime" else None, *where),
        kind=f"security.{kind}", analyzer=analyzer, severity=Severity(severity),
        title=f"{_TITLES[kind]}: {what}"[:200], detail=detail, location=location,
        labels={"what": what[:200], "source": source, **labels},
    )
