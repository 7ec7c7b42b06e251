"""Knowledge tools: `web_search`, `web_image_search` and `visit`.

Search goes through a small backend protocol: SearxNG's JSON API (self-hosted,
no key) or Brave's keyed Search API. `visit` fetches a page a model names, so
it is the SSRF-sensitive part: every hop's host is resolved, every address
checked (no private, loopback, link-local, multicast or reserved address),
redirects are followed by hand so each target is checked again, and the
connection goes to the exact address that was checked (the Host header and
TLS SNI keep the real name), so a second DNS answer cannot move it
(DNS rebinding). Pages are cut at a size and a time limit.
"""

from __future__ import annotations

import asyncio
import io
import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import httpx
from PIL import Image

from arena.gate.registry import ImageRegistry, RegisteredImage
from arena.gate.settings import GateSettings
from arena.gate.tools.base import ImageToolError, Tool, ToolFailure, ToolResult
from arena.providers.base import ToolSpec

Resolver = Callable[[str, int], Awaitable[list[str]]]

USER_AGENT = "GeoArena-GATE/0.1 (+research agent; fetches single pages on request)"
TEXT_TYPES = ("text/html", "application/xhtml+xml", "text/plain", "application/json", "text/xml", "application/xml")
MAX_THUMBNAILS = 3
MAX_THUMBNAIL_BYTES = 2_000_000
THUMBNAIL_TIMEOUT = 5.0  # seconds each; they load together


def web_tools(
    settings: GateSettings, http: httpx.AsyncClient, *, allow_loopback: bool = False
) -> tuple[list[Tool], dict[str, str]]:
    """The knowledge tools the settings allow, and why the others are off.

    `allow_loopback` lets tests visit their own 127.0.0.1 servers; it is a
    constructor argument only, never a configuration key."""
    names = ("web_search", "web_image_search", "visit")
    if not settings.web:
        return [], {n: "web access is turned off ([tools] web = false)" for n in names}
    fetcher = SafeFetcher(
        max_bytes=settings.visit_max_bytes, timeout=settings.visit_timeout, allow_loopback=allow_loopback
    )
    tools = [visit_tool(fetcher, settings)]
    backend, reason = search_backend(settings, http)
    if backend is None:
        return tools, {"web_search": reason, "web_image_search": reason}
    tools += search_tools(backend, fetcher, settings)
    return tools, {}


# -- search backends --------------------------------------------------------------------


@dataclass(frozen=True)
class SearchHit:
    title: str
    url: str  # the page
    snippet: str = ""
    image_url: str = ""  # image results: the picture itself
    thumbnail_url: str = ""


class SearchBackend(Protocol):
    name: str

    async def search(self, query: str, *, images: bool, limit: int) -> list[SearchHit]: ...


def search_backend(settings: GateSettings, http: httpx.AsyncClient) -> tuple[SearchBackend | None, str]:
    """The configured backend, or None and the reason the search tools are off."""
    if settings.search_backend == "searxng":
        if not settings.search_url:
            return None, "search_backend = 'searxng' needs search_url ([tools])"
        return SearxngBackend(http, settings.search_url), ""
    if settings.search_backend == "brave":
        key = settings.search_api_key()
        if not key:
            env = settings.search_api_key_env or "(search_api_key_env not set)"
            return None, f"the Brave search key is missing: set the environment variable {env}"
        return BraveBackend(http, key, settings.search_url or BraveBackend.DEFAULT_URL), ""
    return None, "no search backend configured ([tools] search_backend)"


@dataclass
class SearxngBackend:
    """SearxNG's JSON API (`format=json` must be enabled in its settings.yml)."""

    http: httpx.AsyncClient
    base_url: str
    name: str = "searxng"
    timeout: float = 10.0

    async def search(self, query: str, *, images: bool, limit: int) -> list[SearchHit]:
        params = {"q": query, "format": "json", "categories": "images" if images else "general", "safesearch": "1"}
        data = await _get_json(self.http, self.base_url.rstrip("/") + "/search", params, {}, self.timeout, self.name)
        hits = []
        for r in data.get("results") or []:
            if not isinstance(r, dict) or not r.get("url"):
                continue
            hits.append(
                SearchHit(
                    title=str(r.get("title") or ""),
                    url=str(r["url"]),
                    snippet=str(r.get("content") or ""),
                    image_url=str(r.get("img_src") or ""),
                    thumbnail_url=str(r.get("thumbnail_src") or r.get("thumbnail") or ""),
                )
            )
        return hits[:limit]


@dataclass
class BraveBackend:
    """Brave Search API (keyed): `/web/search` and `/images/search`."""

    http: httpx.AsyncClient
    api_key: str
    base_url: str = "https://api.search.brave.com/res/v1"
    name: str = "brave"
    timeout: float = 10.0
    DEFAULT_URL = "https://api.search.brave.com/res/v1"

    async def search(self, query: str, *, images: bool, limit: int) -> list[SearchHit]:
        path = "/images/search" if images else "/web/search"
        headers = {"X-Subscription-Token": self.api_key, "Accept": "application/json"}
        data = await _get_json(
            self.http,
            self.base_url.rstrip("/") + path,
            {"q": query, "count": str(limit)},
            headers,
            self.timeout,
            self.name,
        )
        results = data.get("results") if images else (data.get("web") or {}).get("results")
        hits = []
        for r in results or []:
            if not isinstance(r, dict) or not r.get("url"):
                continue
            props = r.get("properties") or {}
            thumb = r.get("thumbnail") or {}
            hits.append(
                SearchHit(
                    title=str(r.get("title") or ""),
                    url=str(r["url"]),
                    snippet=str(r.get("description") or ""),
                    image_url=str(props.get("url") or ""),
                    thumbnail_url=str(thumb.get("src") or ""),
                )
            )
        return hits[:limit]


async def _get_json(
    http: httpx.AsyncClient, url: str, params: dict[str, str], headers: dict[str, str], timeout: float, who: str
) -> dict[str, Any]:
    try:
        response = await http.get(url, params=params, headers=headers, timeout=timeout)
    except httpx.TimeoutException:
        raise ToolFailure(f"the search backend ({who}) did not answer within {timeout:.0f} s") from None
    except httpx.HTTPError as exc:
        raise ToolFailure(f"the search backend ({who}) is unreachable: {type(exc).__name__}") from None
    if response.status_code != 200:
        hint = (
            " (is `json` listed in search.formats of its settings.yml?)"
            if who == "searxng" and response.status_code == 403
            else ""
        )
        raise ToolFailure(f"the search backend ({who}) answered HTTP {response.status_code}{hint}")
    try:
        data = response.json()
    except ValueError:
        raise ToolFailure(f"the search backend ({who}) did not send JSON") from None
    if not isinstance(data, dict):
        raise ToolFailure(f"the search backend ({who}) sent an unexpected answer")
    return data


# -- the tools ---------------------------------------------------------------------------


def search_tools(backend: SearchBackend, fetcher: SafeFetcher, settings: GateSettings) -> list[Tool]:
    query = {"type": "string", "description": "what to search for", "maxLength": 300}
    schema = {"type": "object", "properties": {"query": query}, "required": ["query"], "additionalProperties": False}

    async def run_search(args: dict[str, Any], registry: ImageRegistry) -> ToolResult:
        hits = await backend.search(args["query"], images=False, limit=settings.search_results)
        if not hits:
            return ToolResult(f"No results for {args['query']!r}.")
        lines = [f"{i}. {h.title}\n   {h.url}\n   {h.snippet[:300]}" for i, h in enumerate(hits, 1)]
        summary = f"{len(hits)} results: " + "; ".join(h.title[:80] for h in hits[:4])
        return ToolResult("\n".join(lines), summary=summary)

    async def run_image_search(args: dict[str, Any], registry: ImageRegistry) -> ToolResult:
        hits = await backend.search(args["query"], images=True, limit=settings.search_results)
        if not hits:
            return ToolResult(f"No image results for {args['query']!r}.")
        produced: list[RegisteredImage] = []
        lines = []
        # a few more than shown, fetched together, since some thumbnails fail
        candidates = [h for h in hits if h.thumbnail_url or h.image_url][: MAX_THUMBNAILS + 2]
        pictures = await asyncio.gather(*(_fetch_thumbnail(fetcher, h) for h in candidates))
        picture_of = {id(h): p for h, p in zip(candidates, pictures, strict=True)}
        for i, hit in enumerate(hits, 1):
            line = f"{i}. {hit.title}\n   page: {hit.url}\n   image: {hit.image_url or '(none)'}"
            picture = picture_of.get(id(hit))
            if picture is not None and len(produced) < MAX_THUMBNAILS:
                try:
                    entry = registry.add(picture, f"web image result {i}: {hit.title[:80]} ({hit.url})")
                except ImageToolError:  # the trajectory's image budget is spent: list it only
                    picture = None
                else:
                    produced.append(entry)
                    line += f"\n   shown as {entry.id}"
            lines.append(line)
        summary = f"{len(hits)} image results, {len(produced)} shown: " + "; ".join(h.title[:60] for h in hits[:3])
        return ToolResult("\n".join(lines), images=tuple(produced), summary=summary)

    return [
        Tool(
            ToolSpec(
                "web_search",
                "Search the web for text pages (e.g. a shop name, a street sign, a "
                "landmark). Returns titles, URLs and snippets.",
                schema,
            ),
            run_search,
            settings.tool_timeout,
        ),
        Tool(
            ToolSpec(
                "web_image_search",
                "Search the web for images matching a description; the first "
                f"results are shown to you as images (up to {MAX_THUMBNAILS}).",
                schema,
            ),
            run_image_search,
            settings.tool_timeout,
        ),
    ]


def visit_tool(fetcher: SafeFetcher, settings: GateSettings) -> Tool:
    schema = {
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "an http(s) URL from a search result", "maxLength": 2000}
        },
        "required": ["url"],
        "additionalProperties": False,
    }

    async def run(args: dict[str, Any], registry: ImageRegistry) -> ToolResult:
        page = await fetcher.fetch(args["url"])
        title, text = await asyncio.to_thread(page_text, page)
        if not text.strip():
            return ToolResult(f"{page.url}: the page has no readable text.", summary=f"{page.url}: no readable text")
        cut = text[: settings.visit_max_chars]
        note = f"\n[... {len(text) - len(cut)} more characters not shown]" if len(cut) < len(text) else ""
        observation = f"URL: {page.url}\nTitle: {title}\n\n{cut}{note}"
        return ToolResult(observation, summary=f"{page.url} — {title[:120]}: {text[:300]}")

    return Tool(
        ToolSpec(
            "visit",
            "Fetch a public web page and return its main text (title and body, "
            f"at most {settings.visit_max_chars} characters).",
            schema,
        ),
        run,
        max(settings.tool_timeout, settings.visit_timeout + 5),
    )


def page_text(page: FetchedPage) -> tuple[str, str]:
    """(title, main text) of a fetched page; HTML goes through trafilatura."""
    try:
        raw = page.body.decode(page.charset or "utf-8", errors="replace")
    except LookupError:  # a label Python does not know (or not a text codec): the page says what it likes
        raw = page.body.decode("utf-8", errors="replace")
    if "html" not in page.content_type and "xml" not in page.content_type:
        return "", raw
    import trafilatura  # slow to import; only when a page is visited

    text = trafilatura.extract(raw, url=page.url, include_comments=False, include_tables=True) or ""
    meta = trafilatura.extract_metadata(raw)
    title = (meta.title if meta and meta.title else "") or ""
    if not text:
        text = trafilatura.html2txt(raw) or ""
    return title, text


async def _fetch_thumbnail(fetcher: SafeFetcher, hit: SearchHit) -> Image.Image | None:
    """The hit's thumbnail, else its full image (through the same SSRF checks)."""
    for url in dict.fromkeys(u for u in (hit.thumbnail_url, hit.image_url) if u):
        try:
            page = await fetcher.fetch(
                url, accept_images=True, max_bytes=MAX_THUMBNAIL_BYTES, timeout=THUMBNAIL_TIMEOUT
            )
            return await asyncio.to_thread(_decode_thumbnail, page.body)
        except (ToolFailure, OSError, ValueError, SyntaxError, EOFError, Image.DecompressionBombError):
            # a missing or broken thumbnail is not worth failing the search for (Pillow
            # reports some broken files, e.g. a PNG with a damaged chunk, as SyntaxError)
            continue
    return None


def _decode_thumbnail(data: bytes) -> Image.Image:
    with Image.open(io.BytesIO(data)) as im:
        if im.width * im.height > 25_000_000:
            raise ValueError("image too large")
        im.thumbnail((768, 768))
        return im.convert("RGB")


# -- fetching a page without reaching inside the network ------------------------------------


class AddressRefused(ToolFailure):
    """The URL leads to an address visit must not reach."""


@dataclass(frozen=True)
class FetchedPage:
    url: str  # after redirects
    status: int
    content_type: str
    charset: str | None
    body: bytes
    truncated: bool


class SafeFetcher:
    """GET a public http(s) URL with SSRF defences, a size cap and a time cap."""

    REDIRECTS = (301, 302, 303, 307, 308)

    def __init__(
        self,
        *,
        max_bytes: int = 2_000_000,
        timeout: float = 15.0,
        max_redirects: int = 5,
        allow_loopback: bool = False,
        resolver: Resolver | None = None,
        verify: ssl.SSLContext | bool = True,  # tests pass a context trusting their own CA
    ) -> None:
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.max_redirects = max_redirects
        self.allow_loopback = allow_loopback
        self.resolver = resolver or system_resolver
        self.verify = verify

    async def fetch(
        self, url: str, *, accept_images: bool = False, max_bytes: int | None = None, timeout: float | None = None
    ) -> FetchedPage:
        limit = max_bytes or self.max_bytes
        seconds = min(timeout or self.timeout, self.timeout)
        try:
            async with asyncio.timeout(seconds):
                return await self._fetch(url, accept_images, limit)
        except TimeoutError:
            raise ToolFailure(f"{url[:200]} did not load within {seconds:.0f} s") from None

    async def _fetch(self, url: str, accept_images: bool, limit: int) -> FetchedPage:
        current = _parse_url(url)
        async with httpx.AsyncClient(
            follow_redirects=False, trust_env=False, timeout=self.timeout, verify=self.verify
        ) as client:
            for _ in range(self.max_redirects + 1):
                address = await self._checked_address(current)
                request = client.build_request(
                    "GET",
                    current.copy_with(host=address),
                    headers={
                        "Host": _host_header(current),
                        "User-Agent": USER_AGENT,
                        "Accept-Encoding": "gzip, deflate",
                        "Accept": "image/*" if accept_images else "text/html,text/plain;q=0.9,*/*;q=0.1",
                    },
                    extensions={"sni_hostname": _ascii_host(current)} if current.scheme == "https" else {},
                )
                try:
                    response = await client.send(request, stream=True)
                except httpx.HTTPError as exc:
                    raise ToolFailure(f"could not fetch {current}: {type(exc).__name__}") from None
                try:
                    if response.status_code in self.REDIRECTS and "location" in response.headers:
                        current = _parse_url(str(current.join(response.headers["location"])))
                        continue
                    return await self._read(current, response, accept_images, limit)
                finally:
                    await response.aclose()
        raise ToolFailure(f"{url[:200]}: more than {self.max_redirects} redirects")

    async def _checked_address(self, url: httpx.URL) -> str:
        host = _ascii_host(url)
        port = url.port or (443 if url.scheme == "https" else 80)
        try:
            addresses = await self.resolver(host, port)
        except OSError:
            raise ToolFailure(f"cannot resolve the host {host!r}") from None
        if not addresses:
            raise ToolFailure(f"cannot resolve the host {host!r}")
        for address in addresses:
            reason = address_refusal(address, allow_loopback=self.allow_loopback)
            if reason:
                raise AddressRefused(
                    f"refused: {host} resolves to {address}, a {reason} address; visit only reaches public web sites"
                )
        return addresses[0]

    async def _read(self, url: httpx.URL, response: httpx.Response, accept_images: bool, limit: int) -> FetchedPage:
        if response.status_code >= 400:
            raise ToolFailure(f"{url} answered HTTP {response.status_code}")
        content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        wanted = (
            content_type.startswith("image/")
            if accept_images
            else (content_type in TEXT_TYPES or content_type.startswith("text/") or not content_type)
        )
        if not wanted:
            raise ToolFailure(f"{url} is not a text page (it is {content_type or 'of unknown type'})")
        body = bytearray()
        truncated = False
        async for chunk in response.aiter_raw():  # raw: the cap holds for compressed bombs too
            body += chunk
            if len(body) > limit:
                truncated = True
                del body[limit:]
                break
        data = bytes(body)
        encoding = response.headers.get("content-encoding", "").lower()
        if encoding and encoding != "identity":
            data = _decompress(data, encoding, limit)
        return FetchedPage(str(url), response.status_code, content_type, response.charset_encoding, data, truncated)


def address_refusal(address: str, *, allow_loopback: bool = False) -> str | None:
    """Why `address` must not be fetched ("private", "loopback", ...), or None."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "malformed"
    if isinstance(ip, ipaddress.IPv6Address):
        # IPv6 forms that carry an IPv4 address are judged by that address
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            ip = embedded
    if ip.is_loopback:
        return None if allow_loopback else "loopback"
    if ip.is_link_local:
        return "link-local"
    if ip.is_private:
        return "private"
    if ip.is_multicast:
        return "multicast"
    if ip.is_unspecified or ip.is_reserved:
        return "reserved"
    if not ip.is_global:
        return "non-public"
    return None


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


async def system_resolver(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for info in infos:
        address = str(info[4][0])
        if address not in seen:
            seen.append(address)
    return seen


def _parse_url(url: str) -> httpx.URL:
    try:
        parsed = httpx.URL(url.strip())
    except (httpx.InvalidURL, TypeError):
        raise ToolFailure(f"not a valid URL: {url[:200]!r}") from None
    if parsed.scheme not in ("http", "https"):
        raise ToolFailure(f"only http and https URLs can be visited, not {parsed.scheme or 'a relative URL'}")
    if not parsed.host:
        raise ToolFailure(f"the URL has no host: {url[:200]!r}")
    return parsed.copy_with(fragment=None)


def _ascii_host(url: httpx.URL) -> str:
    """The host as DNS, the Host header and SNI want it: an IDN in punycode (`url.host` is Unicode)."""
    return url.raw_host.decode("ascii")


def _host_header(url: httpx.URL) -> str:
    ascii_host = _ascii_host(url)
    host = f"[{ascii_host}]" if ":" in ascii_host else ascii_host
    return host if url.port is None else f"{host}:{url.port}"


def _decompress(data: bytes, encoding: str, limit: int) -> bytes:
    import zlib

    if encoding in ("gzip", "x-gzip", "deflate"):
        wbits = 16 + zlib.MAX_WBITS if "gzip" in encoding else zlib.MAX_WBITS
        decoder = zlib.decompressobj(wbits)
        try:
            return decoder.decompress(data, limit)
        except zlib.error:
            raise ToolFailure("the page's compressed body is corrupt") from None
    raise ToolFailure(f"unsupported content encoding {encoding!r}")
