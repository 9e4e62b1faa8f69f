"""The stylesheet, versioned by its hash so browsers may cache it for good."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.responses import Response

from grader.api.auth import public
from grader.web import assets

router = APIRouter(dependencies=[Depends(public)])


@router.get("/static/web.css")
def stylesheet() -> Response:
    return Response(assets.stylesheet(), media_type="text/css",
                    headers={"cache-control": "public, max-age=31536000, immutable", "etag": assets.stylesheet_version()})
