"""The audit log and API keys over HTTP."""

from __future__ import annotations

import json

from fastapi import APIRouter, Depends, Path, Query, Request
from starlette.concurrency import run_in_threadpool

from grader.api.auth import require
from grader.api.models import ERRORS, AuditEntryView, AuditPage, KeyCreate, KeyCreated, KeyView
from grader.store import audit_log, keys
from grader.store.keys import Principal

router = APIRouter(tags=["admin"], responses=ERRORS)


@router.get("/v1/audit-log", response_model=AuditPage)
async def audit_page(
    request: Request,
    after: int = Query(0, ge=0, le=2**31 - 1, description="the last seq already seen"),
    limit: int = Query(100, ge=1, le=1000),
    subject: str | None = Query(None, max_length=255, description="e.g. job:<id> or key:<id>"),
    _: Principal = Depends(require("lead")),
) -> AuditPage:
    """Page through the hash-chained audit log in order."""

    def read() -> AuditPage:
        with request.app.state.store.read() as session:
            rows = audit_log.page(session, after=after, limit=limit, subject=subject)
        items = [AuditEntryView(seq=r.seq, at=r.at, actor=r.actor, action=r.action, subject=r.subject,
                                data=json.loads(r.data), prev_hash=r.prev_hash, hash=r.hash) for r in rows]
        return AuditPage(items=items, next_after=items[-1].seq if len(items) == limit else None)

    return await run_in_threadpool(read)


def _key_view(k) -> KeyView:  # type: ignore[no-untyped-def]
    return KeyView(id=k.id, name=k.name, role=k.role, created_by=k.created_by, created_at=k.created_at,
                   revoked_at=k.revoked_at)


@router.get("/v1/keys", response_model=list[KeyView])
async def list_keys(request: Request, _: Principal = Depends(require("admin"))) -> list[KeyView]:
    return [_key_view(k) for k in await run_in_threadpool(keys.list_keys, request.app.state.store)]


@router.post("/v1/keys", response_model=KeyCreated, status_code=201)
async def create_key(body: KeyCreate, request: Request, who: Principal = Depends(require("admin"))) -> KeyCreated:
    """Create a key; the token is in this response only."""
    key, token = await run_in_threadpool(keys.create_key, request.app.state.store, name=body.name, role=body.role,
                                         created_by=who.id)
    return KeyCreated(**_key_view(key).model_dump(), token=token)


@router.delete("/v1/keys/{key_id}", response_model=KeyView)
async def revoke_key(request: Request, key_id: str = Path(min_length=1, max_length=100),
                     who: Principal = Depends(require("admin"))) -> KeyView:
    return _key_view(await run_in_threadpool(keys.revoke_key, request.app.state.store, key_id, revoked_by=who.id))
