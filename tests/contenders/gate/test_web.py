"""Knowledge tools against real HTTP servers on 127.0.0.1: SSRF defences of
`visit`, page extraction and limits, SearxNG and Brave search backends."""

from __future__ import annotations

import asyncio
import gzip
import http.server
import io
import shutil
import ssl
import struct
import subprocess
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from arena.config import GateSettings
from arena.contenders.gate.registry import ImageRegistry
from arena.contenders.gate.toolbox import build_toolbox
from arena.contenders.gate.tools.base import ToolFailure
from arena.contenders.gate.tools.web import search_tools, visit_tool
from arena.contenders.gate.web.fetch import (
    AddressRefused,
    SafeFetcher,
    address_refusal,
    system_resolver,
)
from arena.contenders.gate.web.search import BraveBackend, SearchHit, SearxngBackend
from tests.photos import photo
from tests.servers import serve_in_thread

ARTICLE = """<html><head><title>Shibuya Crossing - City Notes</title></head><body>
<nav><a href="/">Home</a> | <a href="/about">About us</a> | <a href="/login">Log in</a></nav>
<article><h1>Shibuya Crossing</h1>
<p>Shibuya Crossing is a popular scramble crossing in Shibuya, Tokyo, Japan. It is located in front of
the Shibuya Station Hachikō exit and stops vehicles in all directions to allow pedestrians to inundate
the entire intersection.</p>
<p>The statue of Hachikō, between the station and the intersection, is a common meeting point and
almost always crowded. Three large screens mounted on nearby buildings overlook the crossing.</p>
</article><footer>Copyright 2024 City Notes. All rights reserved.</footer></body></html>"""


def jpeg(size: tuple[int, int] = (320, 200)) -> bytes:
    im = photo("level1-55.jpg").resize(size)
    buf = io.BytesIO()
    im.save(buf, format="JPEG")
    return buf.getvalue()


class PageServer:
    """Pages, redirects, a slow page, a big page, a SearxNG and a Brave API."""

    def __init__(self) -> None:
        self.hits: list[tuple[str, str]] = []  # (path, Host header)
        self.search_params: list[dict[str, str]] = []
        self.base = ""
        self.app = Starlette(
            routes=[
                Route("/article", self.article),
                Route("/odd-charset", self.odd_charset),
                Route("/big", self.big),
                Route("/png", self.png),
                Route("/broken.png", self.broken_png),
                Route("/slow", self.slow),
                Route("/gz", self.gz),
                Route("/thumb/{n}", self.thumb),
                Route("/to/{where:path}", self.redirect),
                Route("/search", self.searxng),
                Route("/forbidden/search", self.forbidden),
                Route("/res/v1/{kind}/search", self.brave),
            ]
        )

    def _hit(self, request: Request) -> None:
        self.hits.append((request.url.path, request.headers.get("host", "")))

    async def article(self, request: Request) -> Response:
        self._hit(request)
        return Response(ARTICLE, media_type="text/html; charset=utf-8")

    async def odd_charset(self, request: Request) -> Response:
        self._hit(request)
        return Response(ARTICLE, headers={"content-type": "text/html; charset=utf-8-please"})

    async def big(self, request: Request) -> Response:
        self._hit(request)
        return Response("Tokyo " * 1_000_000, media_type="text/plain")

    async def png(self, request: Request) -> Response:
        self._hit(request)
        return Response(b"\x89PNG\r\n\x1a\n" + b"\0" * 100, media_type="image/png")

    async def broken_png(self, request: Request) -> Response:
        # a zlib stream cut by a chunk of unknown type: Pillow raises SyntaxError, not OSError
        def chunk(kind: bytes, body: bytes) -> bytes:
            return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

        self._hit(request)
        data = zlib.compress(b"".join(b"\0" + bytes([200, 30, 120]) * 64 for _ in range(48)))
        body = (
            b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", 64, 48, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", data[: len(data) // 2])
            + chunk(b"ID\x00T", data[len(data) // 2 :])
            + chunk(b"IEND", b"")
        )
        return Response(body, media_type="image/png")

    async def slow(self, request: Request) -> Response:
        self._hit(request)
        await asyncio.sleep(5)
        return Response("late", media_type="text/plain")

    async def gz(self, request: Request) -> Response:
        self._hit(request)
        return Response(gzip.compress(ARTICLE.encode()), media_type="text/html", headers={"content-encoding": "gzip"})

    async def thumb(self, request: Request) -> Response:
        self._hit(request)
        return Response(jpeg(), media_type="image/jpeg")

    async def redirect(self, request: Request) -> Response:
        self._hit(request)
        return RedirectResponse(request.path_params["where"].replace("http:/", "http://", 1), status_code=302)

    async def searxng(self, request: Request) -> Response:
        params = dict(request.query_params)
        self.search_params.append(params)
        if params.get("format") != "json":
            return Response("html only", status_code=403)
        if params.get("categories") == "images":
            results = [
                {
                    "title": f"Hillside town {i}",
                    "url": f"https://photos.example/{i}",
                    "img_src": f"{self.base}/thumb/{i}",
                    # the first thumbnail sits on a private address (e.g. an internal image proxy)
                    "thumbnail_src": "http://10.20.30.40/proxy/1" if i == 1 else f"{self.base}/thumb/{i}",
                }
                for i in range(1, 6)
            ]
        else:
            results = [
                {
                    "title": "Shibuya Crossing - Wikipedia",
                    "url": "https://en.wikipedia.org/wiki/Shibuya_Crossing",
                    "content": "Scramble crossing in Shibuya, Tokyo.",
                },
                {"title": "Hachikō", "url": "https://en.wikipedia.org/wiki/Hachik%C5%8D", "content": "Akita dog."},
            ]
        return JSONResponse({"query": params["q"], "number_of_results": len(results), "results": results})

    async def forbidden(self, request: Request) -> Response:
        return Response("Forbidden", status_code=403)

    async def brave(self, request: Request) -> Response:
        if request.headers.get("x-subscription-token") != "brave-test-key":
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        self.search_params.append(dict(request.query_params))
        if request.path_params["kind"] == "images":
            return JSONResponse(
                {
                    "results": [
                        {
                            "title": "Town",
                            "url": "https://p.example/1",
                            "properties": {"url": f"{self.base}/thumb/1"},
                            "thumbnail": {"src": f"{self.base}/thumb/1"},
                        }
                    ]
                }
            )
        return JSONResponse(
            {
                "web": {
                    "results": [
                        {"title": "Shibuya", "url": "https://shibuya.example/", "description": "A ward of Tokyo."}
                    ]
                }
            }
        )


@pytest.fixture(scope="module")
def pages() -> Iterator[PageServer]:
    server = PageServer()
    with serve_in_thread(server.app) as base:
        server.base = base
        yield server


def fake_dns(table: dict[str, list[str]], calls: list[str] | None = None) -> Any:
    """A resolver with fixed answers for test names; real resolution otherwise."""

    async def resolve(host: str, port: int) -> list[str]:
        if calls is not None:
            calls.append(host)
        if host in table:
            return table[host]
        return await system_resolver(host, port)

    return resolve


def port_of(pages: PageServer) -> int:
    return httpx.URL(pages.base).port or 80


class TestAddressRefusal:
    @pytest.mark.parametrize(
        "address, reason",
        [
            ("127.0.0.1", "loopback"),
            ("127.8.9.10", "loopback"),
            ("::1", "loopback"),
            ("::ffff:127.0.0.1", "loopback"),
            ("10.0.0.1", "private"),
            ("192.168.1.20", "private"),
            ("172.16.5.4", "private"),
            ("169.254.169.254", "link-local"),
            ("fe80::1", "link-local"),
            ("fd00::1", "private"),
            ("0.0.0.0", "private"),
            ("100.64.0.1", "non-public"),
            ("224.0.0.251", "multicast"),
            ("2002:7f00:1::", "loopback"),
            ("64:ff9b::a9fe:a9fe", "link-local"),
            ("not-an-ip", "malformed"),
        ],
    )
    def test_refused(self, address: str, reason: str) -> None:
        assert address_refusal(address) == reason

    @pytest.mark.parametrize("address", ["93.184.215.14", "8.8.8.8", "2606:4700:4700::1111"])
    def test_public_allowed(self, address: str) -> None:
        assert address_refusal(address) is None

    def test_loopback_only_by_explicit_flag(self) -> None:
        assert address_refusal("127.0.0.1", allow_loopback=True) is None
        assert address_refusal("10.0.0.1", allow_loopback=True) == "private"


class TestSsrf:
    async def test_loopback_ip_is_refused_before_connecting(self, pages: PageServer) -> None:
        before = len(pages.hits)
        with pytest.raises(AddressRefused, match="127.0.0.1, a loopback address"):
            await SafeFetcher().fetch(pages.base + "/article")
        assert len(pages.hits) == before

    async def test_cloud_metadata_address_is_refused(self) -> None:
        with pytest.raises(AddressRefused, match="169.254.169.254, a link-local address"):
            await SafeFetcher(timeout=3).fetch("http://169.254.169.254/latest/meta-data/iam/")

    async def test_name_resolving_to_loopback_is_refused(self, pages: PageServer) -> None:
        before = len(pages.hits)
        with pytest.raises(AddressRefused, match="localhost resolves to"):
            await SafeFetcher().fetch(f"http://localhost:{port_of(pages)}/article")
        assert len(pages.hits) == before

    async def test_any_private_answer_among_several_is_refused(self) -> None:
        fetcher = SafeFetcher(resolver=fake_dns({"mixed.test": ["93.184.215.14", "10.9.8.7"]}))
        with pytest.raises(AddressRefused, match="10.9.8.7, a private address"):
            await fetcher.fetch("http://mixed.test/")

    async def test_redirect_to_metadata_address_is_refused(self, pages: PageServer) -> None:
        fetcher = SafeFetcher(allow_loopback=True)  # the test's own server is the first hop
        with pytest.raises(AddressRefused, match="169.254.169.254"):
            await fetcher.fetch(pages.base + "/to/http:/169.254.169.254/latest/meta-data/")
        assert pages.hits[-1][0].startswith("/to/")

    async def test_redirect_to_a_name_resolving_privately_is_refused(self, pages: PageServer) -> None:
        calls: list[str] = []
        fetcher = SafeFetcher(allow_loopback=True, resolver=fake_dns({"intranet.test": ["192.168.0.10"]}, calls))
        with pytest.raises(AddressRefused, match="intranet.test resolves to 192.168.0.10, a private address"):
            await fetcher.fetch(pages.base + "/to/http:/intranet.test/admin")
        assert calls == ["127.0.0.1", "intranet.test"]  # every hop is resolved and checked

    async def test_connects_to_the_checked_address_with_the_real_host(self, pages: PageServer) -> None:
        # A rebinding resolver: the first answer is the one checked; a second lookup would be private.
        answers = iter([["127.0.0.1"], ["10.0.0.1"], ["10.0.0.1"]])
        calls: list[str] = []

        async def rebinding(host: str, port: int) -> list[str]:
            calls.append(host)
            return next(answers)

        page = await SafeFetcher(allow_loopback=True, resolver=rebinding).fetch(
            f"http://news.test:{port_of(pages)}/article"
        )
        assert page.status == 200 and b"Hachik" in page.body
        assert calls == ["news.test"]  # no second lookup behind our back
        assert pages.hits[-1] == ("/article", f"news.test:{port_of(pages)}")

    async def test_internationalised_host_is_resolved_and_sent_in_punycode(self, pages: PageServer) -> None:
        # the Unicode host went into the Host header (UnicodeEncodeError): every IDN site failed
        calls: list[str] = []
        fetcher = SafeFetcher(allow_loopback=True, resolver=fake_dns({"xn--mnchen-3ya.test": ["127.0.0.1"]}, calls))
        page = await fetcher.fetch(f"http://münchen.test:{port_of(pages)}/article")
        assert page.status == 200 and b"Hachik" in page.body
        assert calls == ["xn--mnchen-3ya.test"]
        assert pages.hits[-1] == ("/article", f"xn--mnchen-3ya.test:{port_of(pages)}")

    @pytest.mark.parametrize(
        "url",
        [
            "http://[::1]:8000/",
            "http://0x7f.1/",
            "http://2130706433/",
            "http://127.1/",
            "http://[::ffff:127.0.0.1]/",
            "http://0.0.0.0:8000/",
            "http://user:pw@127.0.0.1/",
        ],
    )
    async def test_disguised_loopback_forms_are_refused(self, url: str) -> None:
        with pytest.raises(AddressRefused):
            await SafeFetcher(timeout=3).fetch(url)

    async def test_redirect_loops_end(self, pages: PageServer) -> None:
        url = (
            pages.base
            + "/to/"
            + pages.base.replace("://", ":/")
            + "/to/"
            + pages.base.replace("://", ":/")
            + "/article"
        )
        page = await SafeFetcher(allow_loopback=True).fetch(url)  # two hops are fine
        assert page.url == pages.base + "/article"
        with pytest.raises(ToolFailure, match="more than 1 redirects"):
            await SafeFetcher(allow_loopback=True, max_redirects=1).fetch(url)

    async def test_only_http_and_https(self) -> None:
        for url in ("file:///etc/passwd", "gopher://example.com/", "ftp://example.com/x"):
            with pytest.raises(ToolFailure, match="only http and https"):
                await SafeFetcher().fetch(url)


class TestVisit:
    def tool(self, **settings: Any) -> Any:
        s = GateSettings(**settings)
        return visit_tool(SafeFetcher(allow_loopback=True, max_bytes=s.visit_max_bytes, timeout=s.visit_timeout), s)

    async def test_main_text_and_title(self, pages: PageServer, street: Image.Image) -> None:
        result = await self.tool().run({"url": pages.base + "/article"}, ImageRegistry(street))
        assert "Title: Shibuya Crossing\n" in result.observation
        assert "scramble crossing in Shibuya, Tokyo" in result.observation
        assert "Log in" not in result.observation and "All rights reserved" not in result.observation
        assert result.summary.startswith(pages.base + "/article — Shibuya Crossing")

    async def test_unknown_charset_is_read_anyway(self, pages: PageServer, street: Image.Image) -> None:
        # a charset label Python does not know raised LookupError and the page was lost
        result = await self.tool().run({"url": pages.base + "/odd-charset"}, ImageRegistry(street))
        assert "scramble crossing in Shibuya, Tokyo" in result.observation

    async def test_gzip_page(self, pages: PageServer, street: Image.Image) -> None:
        result = await self.tool().run({"url": pages.base + "/gz"}, ImageRegistry(street))
        assert "statue of Hachikō" in result.observation

    async def test_size_limits(self, pages: PageServer, street: Image.Image) -> None:
        page = await SafeFetcher(allow_loopback=True, max_bytes=100_000).fetch(pages.base + "/big")
        assert page.truncated and len(page.body) == 100_000
        result = await self.tool(visit_max_bytes=50_000, visit_max_chars=1000).run(
            {"url": pages.base + "/big"}, ImageRegistry(street)
        )
        assert "[... 49000 more characters not shown]" in result.observation

    async def test_time_limit(self, pages: PageServer) -> None:
        with pytest.raises(ToolFailure, match="did not load within 1 s"):
            await SafeFetcher(allow_loopback=True, timeout=1).fetch(pages.base + "/slow")

    async def test_refuses_binary_pages(self, pages: PageServer) -> None:
        with pytest.raises(ToolFailure, match="not a text page \\(it is image/png\\)"):
            await SafeFetcher(allow_loopback=True).fetch(pages.base + "/png")


class TestSearch:
    def tools(self, backend: Any) -> dict[str, Any]:
        fetcher = SafeFetcher(allow_loopback=True)
        return {t.name: t for t in search_tools(backend, fetcher, GateSettings(search_results=4))}

    async def test_searxng_web_search(self, pages: PageServer, street: Image.Image) -> None:
        async with httpx.AsyncClient() as http:
            tools = self.tools(SearxngBackend(http, pages.base))
            result = await tools["web_search"].run({"query": "scramble crossing dog statue"}, ImageRegistry(street))
        assert pages.search_params[-1] == {
            "q": "scramble crossing dog statue",
            "format": "json",
            "categories": "general",
            "safesearch": "1",
        }
        assert (
            "1. Shibuya Crossing - Wikipedia\n   https://en.wikipedia.org/wiki/Shibuya_Crossing" in result.observation
        )
        assert result.summary.startswith("2 results: Shibuya Crossing - Wikipedia")

    async def test_searxng_image_search_shows_thumbnails(self, pages: PageServer, street: Image.Image) -> None:
        registry = ImageRegistry(street)
        async with httpx.AsyncClient() as http:
            result = await self.tools(SearxngBackend(http, pages.base))["web_image_search"].run(
                {"query": "hillside town blue roofs"}, registry
            )
        assert pages.search_params[-1]["categories"] == "images"
        assert [e.id for e in result.images] == ["img_1", "img_2", "img_3"]  # at most three shown
        assert result.images[0].image.size == (320, 200)
        # result 1's thumbnail was refused (private address); its full image was used instead
        assert "1. Hillside town 1\n   page: https://photos.example/1" in result.observation
        assert result.images[0].note.startswith("web image result 1:")
        assert "shown as img_1" in result.observation and "4. Hillside town 4" in result.observation
        assert "/thumb/1" in [path for path, _ in pages.hits]

    async def test_a_broken_thumbnail_is_skipped_not_fatal(self, pages: PageServer, street: Image.Image) -> None:
        class Backend:
            name = "fixed"

            async def search(self, query: str, *, images: bool, limit: int) -> list[SearchHit]:
                return [
                    SearchHit("Broken", "https://a.example/", thumbnail_url=pages.base + "/broken.png"),
                    SearchHit("Fine", "https://b.example/", thumbnail_url=pages.base + "/thumb/2"),
                ]

        result = await self.tools(Backend())["web_image_search"].run({"query": "town"}, ImageRegistry(street))
        assert [e.note for e in result.images] == ["web image result 2: Fine (https://b.example/)"]
        assert "1. Broken" in result.observation and "shown as img_1" in result.observation

    async def test_searxng_without_json_format_explains(self, pages: PageServer, street: Image.Image) -> None:
        async with httpx.AsyncClient() as http:
            with pytest.raises(ToolFailure, match="HTTP 403 \\(is `json` listed in search.formats"):
                await self.tools(SearxngBackend(http, pages.base + "/forbidden"))["web_search"].run(
                    {"query": "x"}, ImageRegistry(street)
                )

    async def test_unreachable_backend(self, street: Image.Image) -> None:
        async with httpx.AsyncClient() as http:
            with pytest.raises(ToolFailure, match="searxng\\) is unreachable"):
                await self.tools(SearxngBackend(http, "http://127.0.0.1:9"))["web_search"].run(
                    {"query": "x"}, ImageRegistry(street)
                )

    async def test_brave_backend(self, pages: PageServer, street: Image.Image) -> None:
        async with httpx.AsyncClient() as http:
            tools = self.tools(BraveBackend(http, "brave-test-key", pages.base + "/res/v1"))
            text = await tools["web_search"].run({"query": "shibuya"}, ImageRegistry(street))
            images = await tools["web_image_search"].run({"query": "town"}, ImageRegistry(street))
            with pytest.raises(ToolFailure, match="HTTP 401"):
                await self.tools(BraveBackend(http, "wrong", pages.base + "/res/v1"))["web_search"].run(
                    {"query": "x"}, ImageRegistry(street)
                )
        assert "1. Shibuya\n   https://shibuya.example/\n   A ward of Tokyo." in text.observation
        assert pages.search_params[-1] == {"q": "town", "count": "4"}
        assert len(images.images) == 1


class TestToolbox:
    async def names(self, **tools: Any) -> tuple[list[str], dict[str, str]]:
        async with httpx.AsyncClient() as http:
            box = build_toolbox(GateSettings.from_pool(tools), http)
        return [t.name for t in box.tools], box.disabled

    async def test_default_offers_visit_but_no_search(self) -> None:
        names, disabled = await self.names(code=False)
        assert names == ["crop", "rotate", "auxiliary_lines", "super_resolution", "pixel_analysis", "visit"]
        assert disabled["web_search"] == "no search backend configured ([tools] search_backend)"

    async def test_web_off(self) -> None:
        names, disabled = await self.names(web=False, code=False, search_backend="searxng", search_url="http://s")
        assert "visit" not in names and "web_search" not in names
        assert disabled["visit"] == "web access is turned off ([tools] web = false)"

    async def test_searxng_configured(self) -> None:
        names, _ = await self.names(search_backend="searxng", search_url="http://searxng:8080", code=False)
        assert names[-3:] == ["visit", "web_search", "web_image_search"]

    async def test_brave_without_key(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("GATE_TEST_BRAVE_KEY", raising=False)
        names, disabled = await self.names(search_backend="brave", search_api_key_env="GATE_TEST_BRAVE_KEY", code=False)
        assert "web_search" not in names
        assert "set the environment variable GATE_TEST_BRAVE_KEY" in disabled["web_search"]
        monkeypatch.setenv("GATE_TEST_BRAVE_KEY", "k")
        names, _ = await self.names(search_backend="brave", search_api_key_env="GATE_TEST_BRAVE_KEY", code=False)
        assert "web_search" in names

    def test_bad_tools_table(self) -> None:
        with pytest.raises(ValueError, match=r"\[tools\] in the pool file: max_turns: Input should be greater"):
            GateSettings.from_pool({"max_turns": 0})
        with pytest.raises(ValueError, match="search_engine: Extra inputs are not permitted"):
            GateSettings.from_pool({"search_engine": "google"})
        assert GateSettings.from_pool({"max_turns": 10}, {"max_turns": 4, "stall_timeout": 3}).max_turns == 4


class TlsSite:
    """An HTTPS server on 127.0.0.1 with a self-signed certificate for news.test;
    it records the SNI name and Host header of each request."""

    def __init__(self, directory: Path) -> None:
        self.cert, key = directory / "cert.pem", directory / "key.pem"
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/CN=news.test",
                "-addext",
                "subjectAltName=DNS:news.test",
                "-keyout",
                str(key),
                "-out",
                str(self.cert),
            ],
            check=True,
            capture_output=True,
        )
        self.seen: list[tuple[str | None, str | None]] = []
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, key)
        sni: list[str | None] = [None]
        context.sni_callback = lambda sock, name, ctx: sni.__setitem__(0, name)  # type: ignore[func-returns-value]
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                site.seen.append((sni[0], self.headers.get("Host")))
                body = ARTICLE.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def tls_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsSite]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make the test certificate")
    site = TlsSite(tmp_path_factory.mktemp("tls"))
    yield site
    site.server.shutdown()
    site.server.server_close()  # its listening TLS socket, else left to the garbage collector


class TestPinnedTls:
    async def test_sni_and_certificate_use_the_name_not_the_pinned_address(self, tls_site: TlsSite) -> None:
        trust = ssl.create_default_context(cafile=str(tls_site.cert))
        fetcher = SafeFetcher(
            allow_loopback=True,
            verify=trust,
            resolver=fake_dns({"news.test": ["127.0.0.1"], "evil.test": ["127.0.0.1"]}),
        )
        page = await fetcher.fetch(f"https://news.test:{tls_site.port}/story")
        assert page.url == f"https://news.test:{tls_site.port}/story" and b"Hachik" in page.body
        assert tls_site.seen[-1] == ("news.test", f"news.test:{tls_site.port}")
        # the same address under another name fails verification: the certificate is checked against the name
        with pytest.raises(ToolFailure, match="could not fetch"):
            await fetcher.fetch(f"https://evil.test:{tls_site.port}/story")
