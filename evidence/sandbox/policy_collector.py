"""The `import-policy` collector: the static import policy's findings as `security.*` evidence.

It never runs submitted code. The simulator collector applies the same policy to decide whether
to run the submission at all (a high finding: not executed).
"""

from __future__ import annotations

from evidence.collector import Collector
from evidence.model import EvidenceItem, Location, Severity, make_id
from evidence.sandbox.kinds import SECURITY_KINDS, security_item
from evidence.sandbox.policy import check_submission
from evidence.submission import Submission


def policy_of(submission: Submission):
    m = submission.manifest
    reference = (m.reference.file, m.reference.entry) if m.reference else None
    return check_submission(submission.files, (m.kernel.file, m.kernel.entry), reference)


class ImportPolicyCollector(Collector):
    name = "import-policy"
    version = "1"
    kinds = SECURITY_KINDS

    def applies(self, submission: Submission) -> bool:
        return any(rel.endswith(".py") for rel in submission.files)

    def collect(self, submission: Submission) -> list[EvidenceItem]:
        report = policy_of(submission)
        items = [security_item(self.analyzer, f.kind, f.severity, f.what, f.detail,
                               Location(file=f.file, start_line=f.line, end_line=f.line), "static")
                 for f in report.findings]
        for file, roots in report.stand_ins.items():
            line = min(roots.values())
            names = ", ".join(roots)
            items.append(EvidenceItem(
                id=make_id("security.stand_in", file), kind="security.stand_in", analyzer=self.analyzer,
                severity=Severity.info, title=f"Inert stand-ins for {names} (never imported)",
                detail=f"{file} imports {names}; the grader serves inert stand-ins instead, so only a test harness "
                       "may use them (using one as data fails with a message naming the module)",
                location=Location(file=file, start_line=line, end_line=line), labels={"modules": names}))
        return items
