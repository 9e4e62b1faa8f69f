"""The hash-chained audit log (leads): the same entries the API pages through, and a chain check."""

from __future__ import annotations

import json
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query
from sqlalchemy import func, select
from starlette.responses import Response

from grader.store import audit_log
from grader.store.models import AuditEntry
from grader.web.context import UI, PageContext, page

router = APIRouter()
PAGE_SIZE = 100


def _data(raw: str) -> tuple[str, dict]:
    """The entry's data pretty-printed, and parsed (for links by job kind)."""
    try:
        parsed = json.loads(raw)
    except ValueError:
        return raw, {}
    return json.dumps(parsed, ensure_ascii=False, sort_keys=True, indent=1), parsed if isinstance(parsed, dict) else {}


JOB_PAGES = {"evaluation": "evaluations", "calibration": "calibration", "audit": "audits"}  # job kind -> pages


def _link(subject: str, data: dict) -> str | None:
    """The page of an entry's subject: evaluations, calibration runs and audits are jobs; a saved
    calibration run or audit names the job that made it."""
    kind, _, ref = subject.partition(":")
    if kind == "job":
        return f"{UI}/{JOB_PAGES.get(data.get('kind', 'evaluation'), 'evaluations')}/{quote(ref)}"
    if kind in ("calibration", "audit") and isinstance(data.get("job"), str):
        return f"{UI}/{JOB_PAGES[kind]}/{quote(data['job'])}"
    return None


@router.get("/audit-log")
def audit_log_page(
    ctx: PageContext = Depends(page("lead")),
    after: int | None = Query(None, ge=0, le=2**31 - 1),
    subject: str = Query("", max_length=255),
    verify: int = Query(0, ge=0, le=1),
) -> Response:
    subject = subject.strip()
    with ctx.store.read() as session:
        head = session.scalar(select(func.max(AuditEntry.seq))) or 0
        # Without a position, a subject's history starts at its beginning; the whole log at its newest page.
        start = after if after is not None else (0 if subject else max(0, head - PAGE_SIZE))
        rows = audit_log.page(session, after=start, limit=PAGE_SIZE, subject=subject or None)
        report = audit_log.verify(session) if verify else None
    entries = []
    for r in rows:
        text, data = _data(r.data)
        entries.append({"seq": r.seq, "at": r.at, "actor": r.actor, "action": r.action, "subject": r.subject,
                        "data": text, "hash": r.hash, "link": _link(r.subject, data)})
    earlier = max(0, start - PAGE_SIZE) if start > 0 else None
    later = rows[-1].seq if len(rows) == PAGE_SIZE else None
    return ctx.html("audit_log.html.j2", nav="audit-log", entries=entries, subject=subject, head=head,
                    earlier=earlier, later=later, report=report, names=ctx.names())
