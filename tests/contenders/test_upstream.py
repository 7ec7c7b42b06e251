"""Upstream connection pools: a provider's requests in flight, as many as asked, over aiohttp,
through the environment's proxies."""

from __future__ import annotations

import asyncio
import gzip

import httpx
import pytest

from arena.contenders.apis.http import encode_json
from arena.contenders.base import ContenderImage
from arena.contenders.upstream import AiohttpTransport, UpstreamClients
from tests.conftest import SAMPLE_DIR
from tests.servers import free_port
from tests.servers.forward_proxy import forward_proxy
from tests.servers.scripted import Received, Script, ScriptedServer, http_chunk, http_head


class TestAiohttpTransport:
    def test_a_full_pool_waits_for_a_place_then_times_out(self, openai_server: tuple) -> None:
        async def scenario() -> None:
            transport = AiohttpTransport(2)
            async with httpx.AsyncClient(transport=transport) as http:
                request = http.build_request("POST", openai_server[0] + "/chat/completions", json=BODY)
                held = [await http.send(request, stream=True) for _ in range(2)]
                assert transport.in_flight == 2
                waiting = http.build_request("POST", request.url, json=BODY, timeout=httpx.Timeout(5.0, pool=0.2))
                with pytest.raises(httpx.PoolTimeout):
                    await http.send(waiting)
                await held[0].aclose()
                await held[0].aclose()  # a second close gives back one place, not two
                assert transport.in_flight == 1
                answer = await http.send(waiting)  # the freed place serves it
                assert "data: [DONE]" in answer.text and transport.in_flight == 1
                await held[1].aread()
                await held[1].aclose()
                assert transport.in_flight == 0

        asyncio.run(scenario())

    def test_a_compressed_answer_is_decoded_once(self) -> None:
        """aiohttp hands the bytes over as sent; httpx decodes them, as with its own transport."""
        body = b"data: " + b"x" * 5000 + b"\n\n"

        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            packed = gzip.compress(body)
            head = f"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: {len(packed)}\r\n\r\n"
            writer.write(head.encode() + packed)
            await writer.drain()
            writer.close()

        async def scenario() -> bytes:
            server = await asyncio.start_server(answer, "127.0.0.1", 0)
            port = server.sockets[0].getsockname()[1]
            async with server, httpx.AsyncClient(transport=AiohttpTransport(1)) as http:
                return (await http.get(f"http://127.0.0.1:{port}/")).content

        assert asyncio.run(scenario()) == body

    def test_nothing_listening_is_a_connect_error(self) -> None:
        async def scenario() -> None:
            async with httpx.AsyncClient(transport=AiohttpTransport(1)) as http:
                await http.get(f"http://127.0.0.1:{free_port()}/")

        with pytest.raises(httpx.ConnectError):
            asyncio.run(scenario())


class TestStalls:
    """The body's read timeout: a gap longer than it fails the read soon after, with httpx's
    ReadTimeout; an answer that keeps coming, or a reader that is slow to take what came, does not."""

    @staticmethod
    def _answer(gaps: list[float], then_stall: bool) -> Script:
        async def run(writer: asyncio.StreamWriter) -> None:
            writer.write(http_head(200, "text/event-stream"))
            for gap in gaps:
                await asyncio.sleep(gap)
                writer.write(http_chunk(b"piece"))
                await writer.drain()
            if then_stall:
                await asyncio.sleep(60)  # until the server stops
            writer.write(b"0\r\n\r\n")
            await writer.drain()

        return run

    @staticmethod
    async def _read(gaps: list[float], then_stall: bool, reader_pause: float = 0) -> tuple[list[float], float]:
        loopback = ScriptedServer([TestStalls._answer(gaps, then_stall)])
        await loopback.start()
        loop = asyncio.get_running_loop()
        times: list[float] = []
        timeout = httpx.Timeout(5, read=0.4)
        try:
            async with httpx.AsyncClient(transport=AiohttpTransport(1), timeout=timeout) as http:
                async with http.stream("GET", loopback.url) as response:
                    await asyncio.sleep(reader_pause)
                    try:
                        async for _ in response.aiter_raw():
                            times.append(loop.time())
                    except httpx.ReadTimeout:
                        return times, loop.time()
            return times, -1.0
        finally:
            await loopback.stop()

    def test_a_stall_after_a_steady_answer_fails_the_read(self) -> None:
        times, failed = asyncio.run(self._read([0.15] * 6, then_stall=True))
        assert len(times) == 6  # 0.9 s of pieces 0.15 s apart: no timeout while they came
        assert failed > 0 and 0.35 <= failed - times[-1] <= 0.8

    def test_a_slow_reader_is_not_a_stall(self) -> None:
        # the pieces all came while the reader was busy for longer than the timeout
        times, failed = asyncio.run(self._read([0.05] * 3, then_stall=False, reader_pause=0.9))
        assert failed == -1.0 and times


class TestPieces:
    """A body sent in its pieces (the JSON around a photo) arrives as the one body it stands for,
    with its length, through aiohttp and through httpx's own transport (a SOCKS proxy's)."""

    @pytest.mark.parametrize("transport", [AiohttpTransport(1), httpx.AsyncHTTPTransport()], ids=["aiohttp", "httpx"])
    def test_a_request_in_pieces_arrives_whole(self, transport: httpx.AsyncBaseTransport) -> None:
        photo = ContenderImage(jpeg=(SAMPLE_DIR / "images" / "level1-1.jpg").read_bytes(), width=1, height=1)
        body = encode_json({"text": "Où ? \u2028", "image": photo.data_url(), "again": [photo.base64()]})
        assert len(body.pieces) == 5 and body.size > 100_000  # two photos, the JSON around them

        async def ok(writer: asyncio.StreamWriter) -> None:
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            await writer.drain()

        async def scenario() -> Received:
            loopback = ScriptedServer([ok])
            await loopback.start()
            try:
                async with httpx.AsyncClient(transport=transport) as http:
                    request = http.build_request("POST", loopback.url, headers={"Content-Type": "application/json"})
                    request.stream = body
                    request.headers["Content-Length"] = str(body.size)
                    assert (await http.send(request)).text == "ok"
            finally:
                await loopback.stop()
            return loopback.received[0]

        sent = asyncio.run(scenario())
        assert sent.raw == bytes(body) and sent.body["again"] == [photo.base64()]
        assert "transfer-encoding" not in sent.header_names and sent.header_names.count("content-type") == 1


BODY = {"model": "echo", "stream": True, "messages": [{"role": "user", "content": "Where?"}]}


def _without_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def _post_through_pools(urls: list[str]) -> list[int]:
    """Each URL's status, posted in turn through one set of provider clients."""

    async def scenario() -> list[int]:
        clients = UpstreamClients(lambda origin: 8, other=httpx.AsyncClient())
        try:
            statuses = []
            for url in urls:
                response = await clients.for_url(url).post(url + "/chat/completions", json=BODY)
                assert "data: [DONE]" in response.text
                statuses.append(response.status_code)
            return statuses
        finally:
            await clients.aclose()
            await clients.other.aclose()

    return asyncio.run(scenario())


class TestEnvironmentProxies:
    """A provider's client goes through HTTP_PROXY as httpx's own client would, and around it
    for the hosts NO_PROXY names, through a real forward proxy on loopback."""

    def test_requests_go_through_the_proxy_except_to_no_proxy_hosts(
        self, openai_server: tuple, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        base, upstream = openai_server
        direct = base.replace("127.0.0.1", "localhost")
        before = len(upstream.requests)  # the server serves the whole session
        with forward_proxy() as proxy:
            _without_proxy_variables(monkeypatch)
            monkeypatch.setenv("HTTP_PROXY", proxy.url)
            monkeypatch.setenv("NO_PROXY", "localhost")
            assert _post_through_pools([base, direct, base]) == [200, 200, 200]
            assert proxy.forwarded == [base + "/chat/completions"] * 2
            assert len(upstream.requests) - before == 3  # the localhost one went straight to the server

    def test_without_proxy_variables_requests_go_direct(
        self, openai_server: tuple, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        base, upstream = openai_server
        before = len(upstream.requests)  # the server serves the whole session
        with forward_proxy() as proxy:
            _without_proxy_variables(monkeypatch)
            assert _post_through_pools([base]) == [200]
            assert proxy.forwarded == [] and len(upstream.requests) - before == 1
