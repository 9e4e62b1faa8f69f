"""API keys: random 32-byte tokens, stored as SHA-256 hashes, shown once; roles are ranked."""

from __future__ import annotations

import hashlib
import secrets
import time
import uuid
from dataclasses import dataclass

from sqlalchemy import select

from grader.errors import GraderError
from grader.store import audit_log
from grader.store.db import Store
from grader.store.models import ApiKey

ROLES = ("submitter", "reviewer", "lead", "admin")  # each role may do what the ones before it may
TOKEN_PREFIX = "nkig_"


class ApiKeyError(GraderError):
    """A bad role or name, or an ambiguous key name."""

    status = 422


class UnknownKey(ApiKeyError):
    status = 404


def role_rank(role: str) -> int:
    return ROLES.index(role)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Principal:
    """Who is calling: a key's id, name and role (or the local user with auth off)."""

    id: str
    name: str
    role: str

    def may(self, role: str) -> bool:
        return role_rank(self.role) >= role_rank(role)


LOCAL_USER = Principal(id="local", name="local", role="admin")


def create_key(store: Store, *, name: str, role: str, created_by: str = "cli") -> tuple[ApiKey, str]:
    """Create a key; returns the row and the token (the only time the token exists in clear)."""
    if role not in ROLES:
        raise ApiKeyError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}", field="role")
    name = name.strip()
    if not name or len(name) > 100:
        raise ApiKeyError("a key name must be 1-100 characters", field="name")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey(id=uuid.uuid4().hex[:12], name=name, role=role, token_hash=token_hash(token),
                 created_by=created_by, created_at=time.time(), revoked_at=None)
    with store.write() as session:
        session.add(key)
        audit_log.append(session, actor=created_by, action="key.created", subject=f"key:{key.id}",
                         data={"name": name, "role": role})
    return key, token


def revoke_key(store: Store, key_id_or_name: str, *, revoked_by: str = "cli") -> ApiKey:
    with store.write() as session:
        matches = list(session.scalars(select(ApiKey).where(
            (ApiKey.id == key_id_or_name) | (ApiKey.name == key_id_or_name))))
        live = [k for k in matches if k.revoked_at is None]
        if not matches:
            raise UnknownKey(f"no API key with id or name {key_id_or_name!r}")
        if len(live) > 1:
            raise ApiKeyError(f"{len(live)} live keys are named {key_id_or_name!r}; revoke by id")
        key = (live or matches)[0]
        if key.revoked_at is None:
            key.revoked_at = time.time()
            audit_log.append(session, actor=revoked_by, action="key.revoked", subject=f"key:{key.id}",
                             data={"name": key.name, "role": key.role})
        return key


def authenticate(store: Store, token: str) -> Principal | None:
    """The live key with this token, or None (unknown and revoked keys look the same to callers)."""
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    with store.read() as session:
        key = session.scalars(select(ApiKey).where(ApiKey.token_hash == token_hash(token))).first()
    if key is None or key.revoked_at is not None:
        return None
    return Principal(id=key.id, name=key.name, role=key.role)


def list_keys(store: Store) -> list[ApiKey]:
    with store.read() as session:
        return list(session.scalars(select(ApiKey).order_by(ApiKey.created_at)))
