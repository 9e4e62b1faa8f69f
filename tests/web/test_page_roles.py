"""Every page declares the least role it needs, and every page x every role is checked: no session
(or a revoked key's) is sent to sign in, a lower role gets 403, the declared role and above get in."""

from __future__ import annotations

from starlette.routing import Mount

from grader.store.keys import ROLES, revoke_key
from tests.service.test_role_matrix import api_routes, declared_role
from tests.web.conftest import csrf

PATH_VALUES = {"evaluation_id": "0" * 32, "file": "kernel.py", "run_id": "no-such-run", "audit_id": "no-such-audit",
               "reviewer_id": "no-such-reviewer"}


def page_routes(app) -> list:  # type: ignore[no-untyped-def]
    mount = next(r for r in app.routes if isinstance(r, Mount) and r.path == "/ui")
    return api_routes(mount.app)


def test_every_page_declares_a_role(web):
    routes = page_routes(web.app)
    assert len(routes) >= 8
    assert not [r.path for r in routes if declared_role(r) is False]
    assert sorted(r.path for r in routes if declared_role(r) is None) == ["/login", "/login", "/logout", "/static/web.css"]


def test_page_role_matrix(web):
    clients = {role: web.sign_in(role) for role in ROLES}
    clients["none"] = web.client()
    clients["revoked"] = web.sign_in("reviewer2")
    revoke_key(web.store, "reviewer2")
    tokens = {who: csrf(c.get("/ui/login").text) if who in ("none", "revoked") else csrf(c.get("/ui/queue").text)
              for who, c in clients.items()}
    failures = []
    for route in page_routes(web.app):
        required = declared_role(route)
        if required is None:
            continue
        path = "/ui" + route.path.replace("{file:path}", "{file}").format(
            **{k: v for k, v in PATH_VALUES.items() if "{" + k in route.path})
        for method in route.methods:
            for who, client in clients.items():
                data = {"csrf": tokens[who]} if method == "POST" else None
                response = client.request(method, path, data=data)
                status = response.status_code
                to_login = status == 303 and response.headers["location"].startswith("/ui/login")
                if who in ("none", "revoked"):
                    if not to_login:
                        failures.append(f"{method} {path} as {who}: {status}, expected 303 to sign in")
                elif ROLES.index(who) >= ROLES.index(required):
                    if to_login or status in (401, 403):
                        failures.append(f"{method} {path} as {who}: {status}, expected access")
                elif status != 403:
                    failures.append(f"{method} {path} as {who}: {status}, expected 403")
                assert status < 500, f"{method} {path} as {who}: {status}"
    assert not failures, "\n".join(failures)
