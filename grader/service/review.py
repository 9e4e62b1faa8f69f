"""Review and sign-off. A draft is never final until signed off. A criterion with blockers (flagged
`contradicts_evidence` or `far_from_gold`, or drafted by a grader that failed its calibration gates in
this epoch) needs a reviewer's acknowledgement with a reason before sign-off. Every decision records
author, time, previous and new value, reason and grader epoch, and goes to the audit log."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import lru_cache

from sqlalchemy import select
from sqlalchemy.orm import Session

from grader.draft import CriterionDraft, Draft
from grader.service import jobs
from grader.service.errors import Conflict, Forbidden, Invalid, NotFound
from grader.service.views import CriterionDecision, CriterionState, ReviewView, SignOffView, Value, iso
from grader.store import audit_log
from grader.store.db import Store
from grader.store.keys import LOCAL_USER, Principal
from grader.store.models import ApiKey, CalibrationRun, Job, ReviewRow, SignOff

BLOCKING_FLAGS = ("contradicts_evidence", "far_from_gold")


def _flag_blockers(c: CriterionDraft, _failed_gates: set[str]) -> list[str]:
    return [f"flagged {f.code}: {f.message}" for f in c.flags if f.code in BLOCKING_FLAGS]


def _consistency_blockers(c: CriterionDraft, _failed_gates: set[str]) -> list[str]:
    check = c.consistency
    if check is None:
        return []
    out = []
    if check.far_from_gold and not any(f.code == "far_from_gold" for f in c.flags):
        out.append("far_from_gold: the score is two or more levels from the gold of the nearest calibration items")
    if check.calibration.startswith("failed"):
        out.append(f"calibration {check.calibration}")
    return out


def _gate_blockers(c: CriterionDraft, failed_gates: set[str]) -> list[str]:
    if c.criterion_id not in failed_gates or (c.consistency and c.consistency.calibration.startswith("failed")):
        return []
    return [f"the grader failed its calibration gate for {c.criterion_id} in this epoch (a run newer than the draft)"]


# Each check names why a criterion cannot be signed off unacknowledged; add checks here.
BLOCKER_CHECKS: list[Callable[[CriterionDraft, set[str]], list[str]]] = [_flag_blockers, _consistency_blockers,
                                                                         _gate_blockers]


def failed_calibration_gates(session: Session, epoch: str, rubric_id: str) -> set[str]:
    """Criteria whose gates failed in the newest calibration run of this epoch (a run may be newer
    than the draft, whose own consistency check saw the runs of its time)."""
    row = session.scalars(select(CalibrationRun.report_json).where(CalibrationRun.epoch == epoch,
                          CalibrationRun.rubric == rubric_id).order_by(CalibrationRun.created_at.desc()).limit(1)).first()
    return set() if row is None else set(_failed_gates(row))


@lru_cache(maxsize=16)
def _failed_gates(report_json: str) -> frozenset[str]:
    """Parsed once per report: every draft page of the epoch asks, and a report is never rewritten."""
    from grader.consistency.report import CalibrationReport

    report = CalibrationReport.model_validate_json(report_json)
    return frozenset(c.criterion_id for c in report.criteria if not c.verdict.passed)


def blockers(c: CriterionDraft, failed_gates: set[str]) -> list[str]:
    return [reason for check in BLOCKER_CHECKS for reason in check(c, failed_gates)]


def _value(c: CriterionDraft) -> Value:
    return Value(status=c.status, score=c.score)


def _reviews(session: Session, job_id: str) -> list[ReviewRow]:
    return list(session.scalars(select(ReviewRow).where(ReviewRow.job_id == job_id).order_by(ReviewRow.id)))


def history(session: Session, job_id: str, draft: Draft, epoch: str | None = None) -> tuple[list[ReviewView], list[CriterionState]]:
    rows = _reviews(session, job_id)
    gates = failed_calibration_gates(session, epoch or "", draft.rubric.id)
    views = [ReviewView(id=r.id, criterion_id=r.criterion_id, action=r.action, previous=Value(**r.previous),
                        new=Value(**r.new), reason=r.reason, author=r.author, epoch=r.epoch,
                        created_at=iso(r.created_at)) for r in rows]
    states = []
    for c in draft.criteria:
        mine = [r for r in rows if r.criterion_id == c.criterion_id]
        states.append(CriterionState(criterion_id=c.criterion_id, drafted=_value(c),
                                     current=Value(**mine[-1].new) if mine else _value(c),
                                     blockers=blockers(c, gates), reviewed=bool(mine),
                                     acknowledged=any(r.reason for r in mine)))
    return views, states


def sign_off_view(row: SignOff | None) -> SignOffView | None:
    if row is None:
        return None
    return SignOffView(author=row.author, final={k: Value(**v) for k, v in row.final.items()}, comment=row.comment,
                       epoch=row.epoch, created_at=iso(row.created_at))


def _finished(store: Store, session: Session, principal: Principal, evaluation_id: str) -> tuple[Job, Draft, str]:
    from grader.service.evaluations import KIND, get_draft

    job = session.scalars(select(Job).where(Job.id == evaluation_id).with_for_update()
                          if store.dialect == "postgresql" else select(Job).where(Job.id == evaluation_id)).first()
    if job is None or job.kind != KIND:
        raise NotFound("no such evaluation")
    found = get_draft(session, job.id) if job.state == jobs.DONE else None
    if found is None:
        raise Conflict(f"evaluation is {job.state}; only a finished draft can be reviewed")
    if session.get(SignOff, job.id) is not None:
        raise Conflict("evaluation is already signed off; signed-off evaluations are final")
    return job, found[0], found[1]


def _new_value(d: CriterionDecision, current: Value) -> Value:
    if d.action == "accept":
        if d.score is not None or d.not_applicable:
            raise Invalid("accept takes no score; use action 'edit' to change it", field=d.criterion_id)
        return current
    if not (d.reason or "").strip():
        raise Invalid("an edit needs a reason", field=f"{d.criterion_id}.reason")
    if (d.score is None) == (not d.not_applicable):
        raise Invalid("an edit sets exactly one of score (1-5) or not_applicable", field=d.criterion_id)
    return Value(status="not_applicable") if d.not_applicable else Value(status="scored", score=d.score)


def submit_review(store: Store, principal: Principal, evaluation_id: str, decisions: list[CriterionDecision]):  # type: ignore[no-untyped-def]
    from grader.service.evaluations import get

    with store.write() as session:
        job, draft, epoch = _finished(store, session, principal, evaluation_id)
        _, states = history(session, job.id, draft, epoch)
        by_id = {s.criterion_id: s for s in states}
        seen: set[str] = set()
        for d in decisions:
            state = by_id.get(d.criterion_id)
            if state is None:
                raise Invalid(f"unknown criterion {d.criterion_id!r}; the draft has {', '.join(by_id)}", field="criterion_id")
            if d.criterion_id in seen:
                raise Invalid("one decision per criterion per review", field=d.criterion_id)
            seen.add(d.criterion_id)
            new = _new_value(d, state.current)
            reason = (d.reason or "").strip() or None
            if state.blockers and not reason:
                raise Invalid(f"{state.blockers[0]}; acknowledge it with a reason", field=f"{d.criterion_id}.reason")
            row = ReviewRow(job_id=job.id, criterion_id=d.criterion_id, action=d.action,
                            previous=state.current.model_dump(), new=new.model_dump(), reason=reason,
                            author=principal.id, epoch=epoch, created_at=time.time())
            session.add(row)
            session.flush()
            audit_log.append(session, actor=principal.id, action=f"review.{d.action}", subject=f"job:{job.id}",
                             data={"criterion": d.criterion_id, "previous": row.previous, "new": row.new,
                                   "reason": reason, "epoch": epoch})
    return get(store, principal, evaluation_id)


def sign_off(store: Store, principal: Principal, evaluation_id: str, comment: str | None = None):  # type: ignore[no-untyped-def]
    from grader.service.evaluations import get

    with store.write() as session:
        job, draft, epoch = _finished(store, session, principal, evaluation_id)
        if principal != LOCAL_USER and job.submitted_by == principal.id:
            raise Forbidden("you submitted this evaluation; another reviewer must sign it off")
        _, states = history(session, job.id, draft, epoch)
        pending = [s.criterion_id for s in states if s.blockers and not s.acknowledged]
        if pending:
            raise Conflict(f"criteria need an acknowledgement with a reason first: {', '.join(pending)}")
        final = {s.criterion_id: s.current.model_dump() for s in states}
        session.add(SignOff(job_id=job.id, author=principal.id, final=final, comment=comment, epoch=epoch,
                            created_at=time.time()))
        audit_log.append(session, actor=principal.id, action="evaluation.signed_off", subject=f"job:{job.id}",
                         data={"final": final, "comment": comment, "epoch": epoch})
    return get(store, principal, evaluation_id)


def author_ids(store: Store, who: str) -> list[str]:
    """Key ids for a reviewer given by key id or key name."""
    with store.read() as session:
        ids = list(session.scalars(select(ApiKey.id).where((ApiKey.id == who) | (ApiKey.name == who))))
    return ids or [who]
