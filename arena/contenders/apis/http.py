"""HTTP plumbing shared by the provider clients: a streaming POST with
connect-only retries, the API's error message on 4xx/5xx, and an SSE reader
with a stall timeout and an overall deadline."""

from __future__ import annotations

import asyncio
import json
import re
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from arena.contenders.base import Base64, ContenderError, GenerationLimits
from arena.contenders.upstream import Pieces

RETRY_BACKOFF = 0.5  # seconds, doubled per attempt


@dataclass(frozen=True)
class SSEMessage:
    event: str
    data: str


@asynccontextmanager
async def open_stream(
    http: httpx.AsyncClient,
    url: str,
    *,
    body: dict[str, Any],
    headers: dict[str, str],
    limits: GenerationLimits,
    who: str,
) -> AsyncIterator[httpx.Response]:
    """POST `body` and yield the streaming response once its status is 2xx.

    Only failures to connect are retried: once a request reached the server,
    sending it again could bill twice or answer twice.
    """
    # pool: a provider whose `[connections]` are fewer than the replica's battles need makes
    # streams queue for a connection; they may wait as long as the answer may take
    timeout = httpx.Timeout(connect=10.0, read=limits.stall_timeout, write=30.0, pool=limits.timeout)
    content = encode_json(body)
    sent = httpx.Headers(headers)  # case-insensitive: a provider's own content-type stays the one
    sent.setdefault("Content-Type", "application/json")
    attempt = 0
    while True:
        request = http.build_request("POST", url, headers=sent, timeout=timeout)
        request.stream = content  # sent in its pieces (`upstream.Pieces`), the photo not copied
        request.headers["Content-Length"] = str(content.size)
        try:
            response = await http.send(request, stream=True)
            try:
                if response.status_code >= 400:
                    await response.aread()
                    raise ContenderError(
                        redact_secrets(describe_http_error(who, response), headers),
                        retryable=response.status_code in (408, 429, 500, 502, 503, 504, 529),
                    )
                yield response
                return
            finally:
                await response.aclose()
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            if attempt >= limits.connect_retries:
                raise ContenderError(
                    f"{who}: could not connect to the model server ({type(exc).__name__}).", retryable=True
                ) from None
            attempt += 1
            await asyncio.sleep(RETRY_BACKOFF * 2 ** (attempt - 1))
        except httpx.PoolTimeout:
            raise ContenderError(
                f"{who}: no connection to the model server came free within {_seconds(limits.timeout)} "
                "(the arena is busy).",
                retryable=False,  # our own queue, not the provider being down
            ) from None
        except httpx.ReadTimeout:
            raise ContenderError(
                f"{who}: the model server sent nothing for {_seconds(limits.stall_timeout)}.", retryable=True
            ) from None
        except httpx.RemoteProtocolError:
            raise ContenderError(f"{who}: the model server closed the connection mid-answer.", retryable=True) from None
        except httpx.HTTPError as exc:
            raise ContenderError(f"{who}: HTTP error talking to the model server ({type(exc).__name__}).") from None


# Where a Base64 string goes in the encoded JSON; random, so no prompt can hold it.
_HOLE = "\x00base64:" + secrets.token_hex(8)
_HOLE_JSON = json.dumps(_HOLE).encode()


def encode_json(body: Any) -> Pieces:
    """`body` as the JSON bytes httpx's `json=` makes (compact, UTF-8, no NaN), with each
    `Base64` string spliced in as it is, in pieces: the JSON around them, and their own
    bytes. Escaping looks at every character: a photo's 190 KB of base64 took about 1 ms a
    request, for each side of each battle, and was a quarter of a replica's time while 500
    battles opened at once."""
    photos: list[Base64] = []

    def lift(value: Any) -> Any:
        if isinstance(value, Base64):
            photos.append(value)
            return _HOLE
        if isinstance(value, dict):
            return {key: lift(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [lift(item) for item in value]
        return value

    text = json.dumps(lift(body), ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    rest = text.split(_HOLE_JSON)
    pieces = [rest[0]]
    for photo, after in zip(photos, rest[1:], strict=True):
        pieces[-1] += b'"'
        pieces += [photo.ascii, b'"' + after]
    return Pieces(pieces)


async def iter_sse(response: httpx.Response, limits: GenerationLimits, who: str) -> AsyncIterator[SSEMessage]:
    """Parse a text/event-stream body into messages.

    Each piece of the body must arrive within the stall timeout, and the whole answer
    within `limits.timeout`: the wait for a piece is the shorter of the two. The body is
    parsed in bulk as it comes (one read may hold many messages): line by line through
    `aiter_lines`, with a `wait_for` per line, cost more CPU than the rest of a delta's work."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limits.timeout
    pieces = response.aiter_bytes()
    parser = _SSEParser()
    try:
        while True:
            remaining = deadline - loop.time()
            try:
                if remaining > limits.stall_timeout:
                    # the stall is the transport's read timeout (`open_stream` sets it): no timer
                    # of ours for each piece (5% of a replica's CPU at 1,000 streams)
                    piece = await anext(pieces)
                else:  # near the deadline, the wait for a piece is cut to what is left of it
                    async with asyncio.timeout(max(remaining, 0.001)):
                        piece = await anext(pieces)
            except StopAsyncIteration:
                break
            except TimeoutError:
                raise ContenderError(
                    f"{who}: the answer took longer than {_seconds(limits.timeout)}.", retryable=True
                ) from None
            for message in parser.feed(piece):
                yield message
        for message in parser.end():
            yield message
    except httpx.ReadTimeout:
        raise ContenderError(
            f"{who}: the model server stalled (nothing for {_seconds(limits.stall_timeout)}).", retryable=True
        ) from None
    except (httpx.RemoteProtocolError, httpx.ReadError):
        raise ContenderError(f"{who}: the model server broke off the stream mid-answer.", retryable=True) from None
    finally:
        await pieces.aclose()  # type: ignore[attr-defined]  # an async generator underneath


class _SSEParser:
    """The event-stream format (lines ending in CRLF, LF or CR; a blank line ends a message;
    `:` starts a comment), fed the body in pieces of any size."""

    def __init__(self) -> None:
        self._rest = b""  # an unfinished line
        self._event = ""
        self._data: list[str] = []

    def feed(self, piece: bytes) -> list[SSEMessage]:
        text = self._rest + piece
        if b"\r" in text:
            # a CR at the end may be the first half of a CRLF: kept until the next piece says
            held = text.endswith(b"\r")
            text = text[:-1] if held else text
            text = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n") + (b"\r" if held else b"")
        lines = text.split(b"\n")
        self._rest = lines.pop()
        messages: list[SSEMessage] = []
        for line in lines:
            self._line(line.decode("utf-8", "replace"), messages)
        return messages

    def end(self) -> list[SSEMessage]:
        messages: list[SSEMessage] = []
        if self._rest:
            self._line(self._rest.rstrip(b"\r").decode("utf-8", "replace"), messages)
            self._rest = b""
        if self._data:
            messages.append(SSEMessage(self._event or "message", "\n".join(self._data)))
        return messages

    def _line(self, line: str, messages: list[SSEMessage]) -> None:
        if not line:
            if self._data:
                messages.append(SSEMessage(self._event or "message", "\n".join(self._data)))
            self._event, self._data = "", []
            return
        if line.startswith(":"):
            return  # comment / keep-alive
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)


def parse_json(data: str, who: str) -> Any:
    try:
        return json.loads(data)
    except json.JSONDecodeError:
        raise ContenderError(f"{who}: the model server sent a malformed chunk.") from None


def describe_http_error(who: str, response: httpx.Response) -> str:
    """`who: HTTP 429 (rate limited): <the API's own message>`, never the request."""
    status = response.status_code
    reason = {
        400: "bad request",
        401: "unauthorised: check the API key",
        403: "forbidden",
        404: "not found: check base_url and model",
        408: "timeout",
        413: "request too large",
        429: "rate limited",
        500: "server error",
        502: "bad gateway",
        503: "unavailable",
        504: "gateway timeout",
        529: "overloaded",
    }.get(status, "error")
    detail = _api_message(response)
    return f"{who}: HTTP {status} ({reason})" + (f": {detail}" if detail else ".")


_SECRET_HEADERS = ("authorization", "x-api-key", "x-goog-api-key", "api-key")
# keys as the big APIs spell them, also when a server masks part of one
_KEY_PATTERN = re.compile(r"\b(?:sk-|AIza)[A-Za-z0-9_*.-]{6,}")


def redact_secrets(text: str, headers: dict[str, str]) -> str:
    """`text` without the credentials of `headers`, nor anything shaped like
    an API key: a server may quote the key it was sent in its error, and that
    message is shown to voters and stored."""
    for name, value in headers.items():
        if name.lower() in _SECRET_HEADERS:
            secret = value.split(" ", 1)[1] if " " in value else value
            if secret:
                text = text.replace(secret, "[redacted]")
    return _KEY_PATTERN.sub("[redacted]", text)


def _api_message(response: httpx.Response) -> str:
    try:
        payload = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError, httpx.ResponseNotRead):
        return response.text[:200].strip() if response.text and "<" not in response.text[:1] else ""
    # OpenAI: {"error": {"message"}}; Anthropic: {"error": {"type", "message"}};
    # Gemini: {"error": {"code", "message", "status"}} or a list of those.
    if isinstance(payload, list) and payload:
        payload = payload[0]
    if isinstance(payload, dict):
        error = payload.get("error", payload)
        if isinstance(error, dict):
            return str(error.get("message") or error.get("type") or "")[:300]
        if isinstance(error, str):
            return error[:300]
    return ""


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if value >= 10 else f"{value:.3g} s"
