"""Operations: liveness, readiness (database, migrations, sandbox), Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from grader.api.auth import public
from grader.errors import GraderError
from grader.prompting import load_templates
from grader.rubric import load_rubric
from grader.settings import Settings
from grader.store import migrate

router = APIRouter(tags=["operations"], dependencies=[Depends(public)])


class Check(BaseModel):
    ok: bool
    detail: str


class Readiness(BaseModel):
    status: str  # ready | not_ready
    checks: dict[str, Check]


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """Liveness: the process answers."""
    return {"status": "ok"}


def sandbox_status(settings) -> Check:  # type: ignore[no-untyped-def]
    """How submitted kernels are isolated (grader.sandbox). Reported, not gated on: without a sandbox,
    evaluations fail closed with the reason while reviews, sign-offs and reads keep working."""
    from grader.sandbox import status

    try:
        st = status(settings)
    except Exception as exc:  # noqa: BLE001 - a status probe must not take readiness down
        return Check(ok=False, detail=f"sandbox status unavailable: {type(exc).__name__}: {exc}".splitlines()[0][:300])
    return Check(ok=bool(st.available), detail=f"{st.mode.value}: {st.detail}"[:300])


def grading_resources(settings: Settings) -> Check:
    """The default rubric and the prompt templates load: without them every evaluation fails."""
    try:
        rubric = load_rubric(settings.rubric, settings.rubric_dirs())
        load_templates(settings.prompt_dirs())
    except GraderError as exc:
        return Check(ok=False, detail=exc.one_line())
    return Check(ok=True, detail=f"rubric {rubric.id}@{rubric.version}; prompt templates loaded")


def _readiness(store, settings: Settings) -> Readiness:  # type: ignore[no-untyped-def]
    checks: dict[str, Check] = {}
    try:
        store.ping()
        checks["database"] = Check(ok=True, detail=f"{store.dialect} reachable")
        current, head = migrate.current_revision(store), migrate.head_revision()
        checks["migrations"] = Check(ok=current == head, detail=f"at {current or 'none'}, head {head}")
    except Exception as exc:  # noqa: BLE001 - readiness reports any database failure as not ready
        checks["database"] = Check(ok=False, detail=f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
    checks["rubric_and_prompts"] = grading_resources(settings)
    ok = all(c.ok for c in checks.values()) and "migrations" in checks
    checks["sandbox"] = sandbox_status(settings)
    return Readiness(status="ready" if ok else "not_ready", checks=checks)


@router.get("/readyz", response_model=Readiness, responses={503: {"model": Readiness}})
async def readyz(request: Request, response: Response) -> Readiness:
    """Readiness: the database answers, its schema is current, the rubric and prompts load; the sandbox status."""
    result = await run_in_threadpool(_readiness, request.app.state.store, request.app.state.settings)
    if result.status != "ready":
        response.status_code = 503
    return result


@router.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}})
async def metrics(request: Request) -> Response:
    """Prometheus metrics: jobs by state, evaluation latency, model calls and cost, HTTP requests."""
    body = await run_in_threadpool(generate_latest, request.app.state.metrics)
    return Response(body, media_type=CONTENT_TYPE_LATEST)
