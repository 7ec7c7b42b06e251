"""Fetching a page a model names without reaching inside the network.

`visit` is the SSRF-sensitive part of GATE: every hop's host is resolved,
every address checked (no private, loopback, link-local, multicast or
reserved address), redirects are followed by hand so each target is checked
again, and the connection goes to the exact address that was checked (the
Host header and TLS SNI keep the real name), so a second DNS answer cannot
move it (DNS rebinding). Pages are cut at a size and a time limit.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx

from arena.contenders.gate.tools.base import ToolFailure

Resolver = Callable[[str, int], Awaitable[list[str]]]

USER_AGENT = "GeoArena-GATE/0.1 (+research agent; fetches single pages on request)"
TEXT_TYPES = ("text/html", "application/xhtml+xml", "text/plain", "application/json", "text/xml", "application/xml")


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
