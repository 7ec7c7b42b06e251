"""Request ids and the log's format.

Every request gets an id (the proxy's `X-Request-ID` when it sends a sane one,
else a new one), answered in `X-Request-ID` and carried by every log line
written while it is handled, also from the battle run a stream starts and
the worker threads it uses (a context variable follows tasks and
`asyncio.to_thread`). The access line is ours, not uvicorn's: method, path,
status and time, never the client's address nor the query string; prompts
are never logged at info level.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import sys
import time
from contextvars import ContextVar
from datetime import UTC, datetime

from starlette.types import ASGIApp, Message, Receive, Scope, Send

REQUEST_ID: ContextVar[str] = ContextVar("request_id", default="")
_SANE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
access_log = logging.getLogger("arena.access")


class RequestIds:
    """ASGI middleware: a request id for each request, and one access line when it ends."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers", [])).get(b"x-request-id", b"").decode("latin-1")
        request_id = given if _SANE_ID.match(given) else secrets.token_hex(8)
        token = REQUEST_ID.set(request_id)
        started = time.perf_counter()
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), (b"x-request-id", request_id.encode())]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            access_log.info(
                "%s %s %d %.1f ms",
                scope["method"],
                scope["path"],
                status,
                (time.perf_counter() - started) * 1000,
            )
            REQUEST_ID.reset(token)


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, request_id, and the traceback."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = REQUEST_ID.get()
        if request_id:
            line["request_id"] = request_id
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        request_id = REQUEST_ID.get()
        return f"{text} [{request_id}]" if request_id else text


def configure_logging(log_format: str, level: str) -> None:
    """The root logger writes `log_format` ("json" or "text") lines to stderr; uvicorn's own
    loggers pass through it, and its access log (which names client addresses) stays off."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.access").disabled = True
    # httpx logs each upstream request's URL at info: a line per contender call, and a URL may
    # carry a key in its query string
    logging.getLogger("httpx").setLevel(max(logging.WARNING, root.level))
