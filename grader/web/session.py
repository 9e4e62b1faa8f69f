"""Browser sessions: sign in once with an API key, then a signed, HttpOnly, SameSite=Strict cookie.

The cookie holds the key's id (never the token) and a CSRF token, signed with itsdangerous and
expiring after GRADER_SESSION_HOURS. Every request re-reads the key, so revoking it ends its
sessions at once. Every form carries the CSRF token, and a POST whose Origin is another site is
refused before the token is even compared.
"""

from __future__ import annotations

import hmac
import os
import secrets
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from itsdangerous import BadSignature, URLSafeTimedSerializer
from sqlalchemy import select
from starlette.requests import Request
from starlette.responses import Response

from grader.errors import GraderError
from grader.service.config import data_dir
from grader.settings import Settings
from grader.store.db import Store
from grader.store.keys import Principal
from grader.store.models import ApiKey

COOKIE = "grader_session"
SECRET_FILE = "web-session.key"


@dataclass(frozen=True)
class Session:
    key_id: str | None  # None: not signed in (the session still carries a CSRF token for the sign-in form)
    csrf: str

    @staticmethod
    def fresh(key_id: str | None = None) -> Session:
        return Session(key_id, secrets.token_urlsafe(24))


@cache
def _file_secret(folder: Path) -> str:
    """The data directory's own secret, created on first use, readable by its owner only."""
    path = folder / SECRET_FILE
    folder.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        for _ in range(50):  # another process may have created it a moment ago and still be writing
            if text := path.read_text(encoding="ascii").strip():
                return text
            time.sleep(0.01)
        raise GraderError("the session secret file is empty; delete it or set GRADER_SESSION_SECRET", where=str(path)) from None
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        secret = secrets.token_urlsafe(48)
        fh.write(secret)
    return secret


def secret(settings: Settings) -> str:
    return settings.session_secret or _file_secret(data_dir(settings))


class SessionCodec:
    def __init__(self, settings: Settings) -> None:
        self.max_age = int(settings.session_hours * 3600)
        self._serializer = URLSafeTimedSerializer(secret(settings), salt="grader.web.session")

    def load(self, request: Request) -> Session | None:
        raw = request.cookies.get(COOKIE)
        if not raw:
            return None
        try:
            data = self._serializer.loads(raw, max_age=self.max_age)
            return Session(key_id=data.get("k"), csrf=str(data["c"]))
        except (BadSignature, KeyError, TypeError, AttributeError):
            return None

    def save(self, response: Response, session: Session, request: Request) -> None:
        response.set_cookie(COOKIE, self._serializer.dumps({"k": session.key_id, "c": session.csrf}),
                            max_age=self.max_age, httponly=True, samesite="strict",
                            secure=request.url.scheme == "https", path="/")

    def clear(self, response: Response) -> None:
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")


def live_principal(store: Store, key_id: str) -> Principal | None:
    """The key behind a session, unless it was revoked since sign-in."""
    with store.read() as session:
        key = session.scalars(select(ApiKey).where(ApiKey.id == key_id)).first()
    if key is None or key.revoked_at is not None:
        return None
    return Principal(id=key.id, name=key.name, role=key.role)


def csrf_ok(session: Session | None, submitted: str | None) -> bool:
    return bool(session and submitted) and hmac.compare_digest(session.csrf.encode(), str(submitted).encode())


def same_origin(request: Request) -> bool:
    """A browser's POST names its Origin (or at least a Referer); it must be this server."""
    origin = request.headers.get("origin") or request.headers.get("referer")
    if not origin or origin == "null":
        return origin is None  # non-browser clients send neither; 'null' is an opaque (hostile) origin
    own = f"{request.url.scheme}://{request.headers.get('host', request.url.netloc)}"
    return origin == own or origin.startswith(own + "/")
