"""Every route declares the least role it needs, and every route x every role is checked: no key and
a revoked key get 401, a lower role 403, the declared role and above get past auth."""

from __future__ import annotations

import pytest
from fastapi.routing import APIRoute

from grader.store.keys import ROLES, create_key, revoke_key

PATH_VALUES = {"evaluation_id": "0" * 32, "run_id": "0" * 32, "audit_id": "0" * 32, "key_id": "no-such-key", "reviewer_id": "nobody",
               "rubric_id": "nki-kernel-review"}


def declared_role(route: APIRoute) -> str | None | bool:
    """The role a route requires, None for public routes, False when it declares nothing."""
    def walk(dependant):  # type: ignore[no-untyped-def]
        for dep in dependant.dependencies:
            if hasattr(dep.call, "required_role"):
                return dep.call.required_role
            found = walk(dep)
            if found is not False:
                return found
        return False
    return walk(route.dependant)


def api_routes(app) -> list[APIRoute]:  # type: ignore[no-untyped-def]
    """All API routes, including those of included routers (FastAPI may keep those nested)."""
    def flat(routes):  # type: ignore[no-untyped-def]
        for r in routes:
            if isinstance(r, APIRoute):
                yield r
            elif hasattr(r, "original_router"):
                yield from flat(r.original_router.routes)
    return list(flat(app.routes))


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_every_route_declares_a_role(client):
    routes = api_routes(client.app)
    assert len(routes) >= 12
    undeclared = [r.path for r in routes if declared_role(r) is False]
    assert not undeclared
    public = sorted(r.path for r in api_routes(client.app) if declared_role(r) is None)
    assert public == ["/healthz", "/metrics", "/readyz"]


def test_role_matrix(client, callers, store):
    _, revoked = create_key(store, name="gone", role="admin")
    revoke_key(store, "gone")
    tokens = {"none": None, "revoked": revoked} | {role: callers[role].token for role in ROLES}
    failures = []
    for route in api_routes(client.app):
        required = declared_role(route)
        path = route.path.format(**{k: v for k, v in PATH_VALUES.items() if "{" + k + "}" in route.path})
        for method in route.methods:
            for who, token in tokens.items():
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                status = client.request(method, path, headers=headers, json={} if method == "POST" else None).status_code
                if required is None:
                    expected_ok = True
                elif who in ("none", "revoked"):
                    expected_ok = False
                    if status != 401:
                        failures.append(f"{method} {path} as {who}: {status}, expected 401")
                    continue
                else:
                    expected_ok = ROLES.index(who) >= ROLES.index(required)
                if expected_ok and status in (401, 403):
                    failures.append(f"{method} {path} as {who}: {status}, expected access")
                if not expected_ok and status != 403:
                    failures.append(f"{method} {path} as {who}: {status}, expected 403")
                assert status < 500, f"{method} {path} as {who}: {status}"
    assert not failures, "\n".join(failures)
