"""The review queue: evaluations with filters, oldest first, through the service's `list_queue`."""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Query
from starlette.responses import Response

from grader.service import evaluations as service
from grader.web.context import PageContext, page

router = APIRouter()
PAGE_SIZE = 50
STATE_CHOICES = [("", "any state"), ("needs_review", "needs review"), ("signed_off", "signed off"),
                 ("queued", "queued"), ("running", "running"), ("done", "done (drafted)"), ("failed", "failed")]
FLAG_CHOICES = [("", "any or none"), ("any", "some flag"), ("none", "no flag"),
                ("contradicts_evidence", "contradicts_evidence"), ("far_from_gold", "far_from_gold"),
                ("unstable_samples", "unstable_samples")]


@router.get("/queue")
def queue(
    ctx: PageContext = Depends(page("submitter")),
    state: str = Query("", max_length=32),
    task: str = Query("", max_length=255),
    reviewer: str = Query("", max_length=100),
    flag: str = Query("", max_length=64),
    calibrated: str = Query("", pattern="^(|yes|no)$"),
    offset: int = Query(0, ge=0, le=10**9),
) -> Response:
    filters = {"state": state, "task": task.strip(), "reviewer": reviewer.strip(), "flag": flag, "calibrated": calibrated}
    listing = service.list_queue(ctx.store, ctx.who, state=state or None, task=filters["task"] or None,
                                 reviewer=filters["reviewer"] or None, flag=flag or None,
                                 calibrated={"yes": True, "no": False}.get(calibrated), offset=offset, limit=PAGE_SIZE)

    def at(n: int) -> str:
        return "?" + urlencode({k: v for k, v in filters.items() if v} | ({"offset": n} if n else {}))

    return ctx.html("queue.html.j2", nav="queue", page=listing, filters=filters, states=STATE_CHOICES, flags=FLAG_CHOICES,
                    names=ctx.names(), prev_url=at(max(0, offset - PAGE_SIZE)) if offset else None,
                    next_url=at(offset + PAGE_SIZE) if offset + PAGE_SIZE < listing.total else None)
