"""The draft page, the citation (source) view, and the review and sign-off forms.

Reading goes through `grader.service.evaluations.get`; every decision goes through
`grader.service.review.submit_review` / `sign_off`, the functions behind the JSON API, so the rules
(mandatory reasons, acknowledgements, no sign-off of one's own submission) and the audit-log entries
are the same whichever way a reviewer works.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import ValidationError
from starlette.responses import Response

from evidence.validation import one_line
from grader.service import evaluations as service
from grader.service import review
from grader.service.errors import ServiceError
from grader.service.views import CriterionDecision, Evaluation
from grader.web import draft_view
from grader.web.context import UI, PageContext, PageError, form, page
from grader.web.sections import evidence_sections
from grader.web.source import highlight_file, line_anchor, span_lines

router = APIRouter()
EvaluationId = Path(min_length=1, max_length=64)
REFRESH_S = 3  # queued and running evaluations reload themselves (a meta refresh: no script needed)


def _files(ctx: PageContext, evaluation_id: str) -> tuple[dict[str, str], str | None]:
    submission = service.get_submission_of(ctx.store, ctx.who, evaluation_id)
    if submission is None:
        return {}, None
    return dict(submission.files), submission.manifest.task.title


def render_evaluation(ctx: PageContext, view: Evaluation, *, status: int = 200, flash: str | None = None,
                      form_error: dict[str, str] | None = None) -> Response:
    if view.draft is None:
        return ctx.html("pending.html.j2", status=status, ev=view, refresh=REFRESH_S if view.state in ("queued", "running") else None,
                        names=ctx.names(), nav="queue")
    files, title = _files(ctx, view.id)
    v = draft_view.build(view.draft, files, evaluation=view, task_title=title, rubric_dirs=ctx.settings.rubric_dirs())
    can_review = ctx.who is not None and ctx.who.may("reviewer") and view.state == "done" and view.sign_off is None
    scale = list(range(v.rubric.scale_min, v.rubric.scale_max + 1)) if v.rubric else [1, 2, 3, 4, 5]
    links = draft_view.ServedLinks(view.id, UI)
    return ctx.html("draft.html.j2", status=status, v=v, links=links, can_review=can_review,
                    evidence_sections=evidence_sections(v, links), names=ctx.names(), scale=scale, form_error=form_error,
                    flash=flash, nav="queue")


@router.get("/evaluations/{evaluation_id}")
def evaluation_page(ctx: PageContext = Depends(page("submitter")), evaluation_id: str = EvaluationId,
                    saved: str = Query("", max_length=64), signed: int = Query(0, ge=0, le=1)) -> Response:
    view = service.get(ctx.store, ctx.who, evaluation_id)
    flash = None
    if signed and view.sign_off is not None:
        flash = "Signed off. The evaluation is final."
    elif saved and view.draft is not None and any(c.criterion_id == saved for c in view.draft.criteria):
        flash = f"Saved your decision on {saved}."
    return render_evaluation(ctx, view, flash=flash)


@router.get("/evaluations/{evaluation_id}/source/{file:path}")
def source_page(ctx: PageContext = Depends(page("submitter")), evaluation_id: str = EvaluationId,
                file: str = Path(max_length=255), lines: str = Query("", max_length=40, pattern=r"^(\d{1,7}(-\d{1,7})?)?$"),
                evidence: str = Query("", max_length=200)) -> Response:
    view = service.get(ctx.store, ctx.who, evaluation_id)
    files, title = _files(ctx, evaluation_id)
    if file not in files:
        raise PageError(404, f"The submission of evaluation {evaluation_id} has no file {file!r}.")
    text = files[file]
    start, _, end = lines.partition("-")
    marked = span_lines(int(start), int(end or start), len(text.splitlines())) if start else ()
    v = draft_view.build(view.draft, files, evaluation=view, task_title=title,
                         rubric_dirs=ctx.settings.rubric_dirs()) if view.draft else None
    item = view.draft.evidence.get(evidence) if view.draft and evidence else None
    citing = [c for c in v.criteria for ct in c.citations if ct.citation.evidence_id == evidence] if v and evidence else []
    nearby = [] if not v or not marked else [
        i for g in v.groups for i in g.items
        if i.location and i.location.file == file and i.id != evidence
        and i.location.start_line <= marked[-1] and i.location.end_line >= marked[0]]
    return ctx.html("source.html.j2", ev=view, v=v, file=file, code=highlight_file(file, text, marked), marked=marked,
                    item=item, evidence_id=evidence, anchor=line_anchor(file, marked[0]) if marked else "", citing=citing, nearby=nearby[:20], nav="queue",
                    links=draft_view.ServedLinks(evaluation_id, UI))


def _decision(data: dict[str, str]) -> CriterionDecision:
    action, score = data.get("action", ""), data.get("score", "").strip()
    fields: dict[str, object] = {"criterion_id": data.get("criterion_id", ""), "action": action,
                                 "reason": data.get("reason") or None}
    if action == "edit":
        if score == "not_applicable":
            fields["not_applicable"] = True
        elif score.isdigit():
            fields["score"] = int(score)
        else:
            raise PageError(422, "Choose the new score.")
    return CriterionDecision.model_validate(fields)


def _failure(exc: ServiceError | PageError | ValidationError) -> tuple[str, int]:
    """One line and a status for a refused decision (the service's own words where it refused)."""
    if isinstance(exc, ValidationError):
        return one_line(exc), 422
    if isinstance(exc, PageError):
        return exc.message, exc.status
    return exc.one_line(), exc.status


@router.post("/evaluations/{evaluation_id}/reviews")
def post_review(request: Request, ctx: PageContext = Depends(form("reviewer")), evaluation_id: str = EvaluationId) -> Response:
    data = request.state.form
    criterion = data.get("criterion_id", "")
    kind = "edit" if data.get("action") == "edit" else "accept"
    try:
        decision = _decision(data)
        review.submit_review(ctx.store, ctx.who, evaluation_id, [decision])
    except (ServiceError, PageError, ValidationError) as exc:
        message, status = _failure(exc)
        view = service.get(ctx.store, ctx.who, evaluation_id)
        return render_evaluation(ctx, view, status=status, form_error={
            "criterion": criterion, "form": kind, "message": message, "reason": data.get("reason", ""),
            "score": data.get("score", "")})
    return ctx.redirect(f"{UI}/evaluations/{evaluation_id}?saved={criterion}#crit-{criterion}")


@router.post("/evaluations/{evaluation_id}/sign-off")
def post_sign_off(request: Request, ctx: PageContext = Depends(form("reviewer")), evaluation_id: str = EvaluationId) -> Response:
    comment = (request.state.form.get("comment") or "").strip() or None
    if comment and len(comment) > 4000:
        raise PageError(422, "comment: at most 4000 characters")
    try:
        review.sign_off(ctx.store, ctx.who, evaluation_id, comment)
    except ServiceError as exc:
        view = service.get(ctx.store, ctx.who, evaluation_id)
        return render_evaluation(ctx, view, status=exc.status, form_error={
            "criterion": "sign-off", "form": "sign-off", "message": exc.one_line(), "reason": comment or "", "score": ""})
    return ctx.redirect(f"{UI}/evaluations/{evaluation_id}?signed=1")
