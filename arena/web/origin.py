"""No cross-site writes: a state-changing request another site's page made
the browser send is refused before any route sees it.

Browsers say where a request comes from: `Sec-Fetch-Site` (same-origin,
same-site, cross-site, none) and, on every POST, `Origin`. A request that
carries neither is not a browser acting for another site (curl, scripts,
our tests' clients) and goes through; the voter limits and the challenge
deal with those.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

from arena.web.metrics import refused

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


class SameOriginWrites:
    """ASGI middleware refusing cross-site POST/PUT/PATCH/DELETE with 403 and a reason."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in SAFE_METHODS:
            reason = cross_site_reason(scope)
            if reason:
                await _refuse(send, reason)
                return
        await self.app(scope, receive, send)


def cross_site_reason(scope: Scope) -> str | None:
    """Why this request looks cross-site, or None."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
    fetch_site = headers.get("sec-fetch-site", "").lower()
    origin = headers.get("origin")
    if fetch_site in ("same-origin", "none"):
        return None
    if origin is not None:
        if origin != "null" and origin.rstrip("/") == _own_origin(scope, headers):
            return None
        return f"it was sent by a page on {origin!r}, not by this arena"
    if fetch_site in ("cross-site", "same-site"):
        return "it was sent by a page on another site, not by this arena"
    return None


def _own_origin(scope: Scope, headers: dict[str, str]) -> str:
    scheme = scope.get("scheme", "http")
    host = headers.get("host")
    if not host:
        server = scope.get("server") or ("", None)
        host = f"{server[0]}:{server[1]}" if server[1] else str(server[0])
    default = {"http": 80, "https": 443}.get(scheme)
    if default and host.endswith(f":{default}"):
        host = host[: -len(f":{default}")]
    return f"{scheme}://{host}"


async def _refuse(send: Send, reason: str) -> None:
    refused("cross_site")
    body = json.dumps(
        {
            "error": "cross_site",
            "message": f"This request was refused because {reason}. Use the arena's own page to start battles and vote.",
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 403,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
