"""One HTTP connection pool per provider, on aiohttp underneath httpx.

A single shared client would put every contender behind one pool of 100
connections: 200 battles (400 streams) made streams wait for a connection
and fail with `PoolTimeout` midway. Each provider origin gets its own client
instead, sized for the battles a replica accepts (`Settings.connections_for`),
so a battle the replica admitted never waits for a connection.

The providers speak httpx (`apis/http.py`), but the bytes travel through
aiohttp (`AiohttpTransport`): with 500 answers streaming at once, reading a
chunk through httpcore and h11, both pure Python, cost a replica about 316
CPU-µs against 109 through aiohttp's C parser (benchmarks/upstream.py), and
1,000 answers bring 4,000 chunks a second. httpx keeps everything above the socket:
the request, the response, its decoding and its errors (aiohttp's are turned
into httpx's, which the providers catch).

httpx reads HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY only for a client whose
transport it makes itself, so each provider's client mounts the environment's
proxies the way httpx mounts them for its own: a transport through the proxy for
each proxy pattern, the direct one for NO_PROXY's hosts and the rest. aiohttp
speaks to HTTP proxies only; a SOCKS proxy gets httpx's own transport.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache, partial

import aiohttp
import aiohttp.payload
import httpx
from aiohttp.abc import AbstractStreamWriter
from httpx._utils import get_environment_proxies

from arena.config import origin_of

KEEPALIVE_EXPIRY = 30.0  # seconds an idle connection stays open for the next battle


class UpstreamClients:
    """The clients by provider origin, made on first use; `other` serves everything else."""

    def __init__(self, size_of: Callable[[str], int], other: httpx.AsyncClient) -> None:
        self._size_of = size_of
        self.other = other
        self._clients: dict[str, httpx.AsyncClient] = {}
        # certifi's bundle, read now: on the first request it held up every battle opening
        # behind it for 30-45 ms
        _tls_context()

    def for_url(self, url: str) -> httpx.AsyncClient:
        origin = origin_of(url)
        if not origin:
            return self.other
        client = self._clients.get(origin)
        if client is None:
            size = self._size_of(origin)
            client = self._clients[origin] = httpx.AsyncClient(
                follow_redirects=False, transport=AiohttpTransport(size), mounts=_proxy_mounts(size)
            )
        return client

    def sizes(self) -> dict[str, int]:
        """Each provider origin's pool size (for the start-up log and tests)."""
        return {origin: self._size_of(origin) for origin in self._clients}

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()


class AiohttpTransport(httpx.AsyncBaseTransport):
    """At most `size` requests to one provider in flight, over aiohttp's connections (at most
    `size` of them, kept alive between battles). A request that finds all `size` places taken
    waits for one for the request's pool timeout, then fails with httpx's `PoolTimeout`; a
    place is given back when its response is closed. The connect timeout and the read
    timeout of the response head are aiohttp's socket ones, the body's read timeout is
    `_Stall`'s; it has no write timeout (a battle's own deadline bounds a send)."""

    def __init__(self, size: int, proxy: str | None = None) -> None:
        self.size = max(size, 1)
        self.proxy = proxy
        self.places = asyncio.Semaphore(self.size)
        self.in_flight = 0  # requests holding a place: sent, and their answers not yet closed
        self._session: aiohttp.ClientSession | None = None

    def _open_session(self) -> aiohttp.ClientSession:
        if self._session is None:  # made in the event loop that runs the requests
            connector = aiohttp.TCPConnector(limit=self.size, keepalive_timeout=KEEPALIVE_EXPIRY, ssl=_tls_context())
            self._session = aiohttp.ClientSession(
                connector=connector,
                auto_decompress=False,  # httpx decodes the body, as it does its own transport's
                cookie_jar=aiohttp.DummyCookieJar(),  # and keeps the cookies, if any
                trust_env=False,  # the proxies are httpx's mounts
                skip_auto_headers=("Content-Type",),  # sent as httpx made it, or not at all
            )
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeout = request.extensions.get("timeout", {})
        try:
            async with asyncio.timeout(timeout.get("pool")):
                await self.places.acquire()
        except TimeoutError:
            raise httpx.PoolTimeout("no connection came free in time", request=request) from None
        self.in_flight += 1
        try:
            stream = request.stream
            body = _PiecesPayload(stream) if isinstance(stream, Pieces) else (await request.aread() or None)
            with _as_httpx_errors(request):
                answer = await self._open_session().request(
                    request.method,
                    str(request.url),
                    headers=request.headers.multi_items(),
                    data=body,
                    allow_redirects=False,
                    proxy=self.proxy,
                    timeout=aiohttp.ClientTimeout(sock_connect=timeout.get("connect"), sock_read=timeout.get("read")),
                )
        except BaseException:
            self._give_back()
            raise
        protocol = answer.connection.protocol if answer.connection is not None else None
        if protocol is not None:  # the body's stalls are watched by `_Stall` from here on
            protocol.read_timeout = None
        return httpx.Response(
            status_code=answer.status,
            headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in answer.raw_headers],
            stream=_Body(answer, request, self._give_back, timeout.get("read")),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": (answer.reason or "").encode("latin-1")},
        )

    def _give_back(self) -> None:
        self.in_flight -= 1
        self.places.release()

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class Pieces(httpx.AsyncByteStream):
    """A request body kept as the pieces it was made of, and sent one after another: the
    JSON of a request around its photo, say (`apis.http.encode_json`). Joined, each request
    of each side of each battle copied the photo's 190 KB of base64 into a new buffer, and
    with a thousand answers streaming the buffers stayed alive: each was fresh memory, about
    0.12 ms to fault in, 8% of a replica's time while 500 battles opened at once. The photo's
    own bytes, shared by both sides, go to the socket as they are. The request must carry
    `Content-Length: size` (the stream is not chunked)."""

    def __init__(self, pieces: Sequence[bytes]) -> None:
        self.pieces = tuple(piece for piece in pieces if piece)
        self.size = sum(len(piece) for piece in self.pieces)

    async def __aiter__(self) -> AsyncIterator[bytes]:  # for httpx's own transport (a SOCKS proxy)
        for piece in self.pieces:
            yield piece

    def __bytes__(self) -> bytes:
        return b"".join(self.pieces)


class _PiecesPayload(aiohttp.payload.Payload):
    """`Pieces` as aiohttp sends a body: the request head goes out with the first piece."""

    def __init__(self, body: Pieces) -> None:
        super().__init__(body)
        self._size: int = body.size
        self._pieces = body.pieces

    async def write(self, writer: AbstractStreamWriter) -> None:
        await self.write_with_length(writer, None)

    async def write_with_length(self, writer: AbstractStreamWriter, content_length: int | None) -> None:
        left = self._size if content_length is None else content_length
        for piece in self._pieces:
            if left <= 0:
                break
            await writer.write(piece if len(piece) <= left else piece[:left])
            left -= len(piece)

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        return b"".join(self._pieces).decode(encoding, errors)


class _Body(httpx.AsyncByteStream):
    """An answer's body as aiohttp reads it, failing with a read timeout when nothing came for
    `stall` seconds; closing it gives its place back (once) and its connection too: to the
    pool when the body was read to the end, else closed."""

    def __init__(
        self,
        answer: aiohttp.ClientResponse,
        request: httpx.Request,
        give_back: Callable[[], None],
        stall: float | None = None,
    ) -> None:
        self._answer, self._request, self._give_back = answer, request, give_back
        self._stall = stall
        self._open = True

    async def __aiter__(self) -> AsyncIterator[bytes]:
        content = self._answer.content
        watch = _Stall(content, self._stall) if self._stall else None
        try:
            with _as_httpx_errors(self._request):
                async for piece in content.iter_any():
                    if watch is not None:
                        watch.took()
                    yield piece
        finally:
            if watch is not None:
                watch.cancel()

    async def aclose(self) -> None:
        if self._open:
            self._open = False
            if self._answer.content.at_eof():
                self._answer.release()
            else:  # a connection with an unread answer on it cannot serve another request
                self._answer.close()
            self._give_back()


class _Stall:
    """The read timeout of an answer's body, as aiohttp's own (`sock_read`) fails it, with one
    timer an answer instead of one a chunk: aiohttp cancels its timer and arms a new one for
    every chunk that arrives, 4,000 a second with 1,000 answers streaming. With this one, the
    replica's CPU while the 500 battles of benchmarks/http.py streamed went from 16.6-20.4 s
    (six runs) to 14.4-17.3 s (five; a noisy host). The reader notes when it takes a piece; the timer, when it comes
    due, moves itself to that time plus `seconds` while that is ahead, waits a while more when
    bytes came that the reader has not taken yet, and otherwise fails the read."""

    def __init__(self, content: aiohttp.StreamReader, seconds: float) -> None:
        self._loop = asyncio.get_running_loop()
        self._content, self._seconds = content, seconds
        self.took()
        self._timer = self._loop.call_at(self._last + seconds, self._due)

    def took(self) -> None:
        """The reader took what had come."""
        self._last = self._loop.time()
        self._seen = self._content.total_bytes

    def _due(self) -> None:
        due = self._last + self._seconds
        if due > self._loop.time():
            self._timer = self._loop.call_at(due, self._due)
            return
        if self._content.total_bytes != self._seen or self._content.at_eof():  # a slow reader, not a stall
            self._seen = self._content.total_bytes
            self._timer = self._loop.call_later(self._seconds, self._due)
            return
        # what aiohttp's own read timeout does: the waiting read fails (`_as_httpx_errors`)
        self._content.set_exception(aiohttp.ServerTimeoutError(f"nothing read for {self._seconds:g} s"))

    def cancel(self) -> None:
        self._timer.cancel()


@contextmanager
def _as_httpx_errors(request: httpx.Request) -> Iterator[None]:
    """aiohttp's errors as the httpx errors its own transport raises for the same failure."""
    try:
        yield
    except aiohttp.ConnectionTimeoutError as exc:
        raise httpx.ConnectTimeout(str(exc) or "timed out connecting", request=request) from exc
    except aiohttp.ServerTimeoutError as exc:  # a read stalled (sock_read)
        raise httpx.ReadTimeout(str(exc) or "timed out reading", request=request) from exc
    except aiohttp.ClientConnectorError as exc:  # refused, unreachable, unknown host, the proxy too
        raise httpx.ConnectError(str(exc), request=request) from exc
    except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError, aiohttp.ClientResponseError) as exc:
        raise httpx.RemoteProtocolError(str(exc) or type(exc).__name__, request=request) from exc
    except aiohttp.ClientOSError as exc:  # e.g. reset by the peer
        raise httpx.ReadError(str(exc), request=request) from exc
    except aiohttp.ClientError as exc:
        raise httpx.TransportError(str(exc) or type(exc).__name__, request=request) from exc


def _proxy_mounts(size: int) -> dict[str, httpx.AsyncBaseTransport | None]:
    """The environment's proxies as httpx mounts them (None: the client's direct transport);
    a proxied transport is made on its first request, as most patterns never match the origin."""
    return {
        pattern: None if proxy is None else _OnFirstUse(partial(_through_proxy, size, proxy))
        for pattern, proxy in get_environment_proxies().items()
    }


def _through_proxy(size: int, proxy: str) -> httpx.AsyncBaseTransport:
    if httpx.URL(proxy).scheme in ("http", "https"):
        return AiohttpTransport(size, proxy=proxy)
    limits = httpx.Limits(max_connections=size, max_keepalive_connections=size, keepalive_expiry=KEEPALIVE_EXPIRY)
    return httpx.AsyncHTTPTransport(limits=limits, proxy=proxy)


class _OnFirstUse(httpx.AsyncBaseTransport):
    def __init__(self, make: Callable[[], httpx.AsyncBaseTransport]) -> None:
        self._make = make
        self._made: httpx.AsyncBaseTransport | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._made is None:
            self._made = self._make()
        return await self._made.handle_async_request(request)

    async def aclose(self) -> None:
        if self._made is not None:
            await self._made.aclose()


@cache
def _tls_context() -> ssl.SSLContext:
    """The certificates httpx's own transport trusts (certifi's), made once."""
    return httpx.create_ssl_context()
