"""The hash-chained audit log (leads): the same entries the API pages through, and a chain check."""

from __future__ import annotations

import json

from fastapi import APIRouter, Depends, Query
from sqlalchemy import func, select
from starlette.responses import Response

from grader.store import audit_log
from grader.store.models import AuditEntry
from grader.web.context import PageContext, page

router = APIRouter()
PAGE_SIZE = 100


def _data_text(raw: str) -> str:
    try:
        return json.dumps(json.loads(raw), ensure_ascii=False, sort_keys=True, indent=1)
    except ValueError:
        return raw


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
    entries = [{"seq": r.seq, "at": r.at, "actor": r.actor, "action": r.action, "subject": r.subject,
                "data": _data_text(r.data), "hash": r.hash} for r in rows]
    earlier = max(0, start - PAGE_SIZE) if start > 0 else None
    later = rows[-1].seq if len(rows) == PAGE_SIZE else None
    return ctx.html("audit_log.html.j2", nav="audit-log", entries=entries, subject=subject, head=head,
                    earlier=earlier, later=later, report=report, names=ctx.names())
