"""Knowledge tools: `web_search`, `web_image_search` and `visit`, as the agent
sees them. Search goes through a backend (`arena.contenders.gate.web.search`);
`visit` and every thumbnail go through the SSRF-safe fetcher
(`arena.contenders.gate.web.fetch`).
"""

from __future__ import annotations

import asyncio
import io
from typing import Any

import httpx
from PIL import Image

from arena.config import GateSettings
from arena.contenders.base import ToolSpec
from arena.contenders.gate.registry import ImageRegistry, RegisteredImage
from arena.contenders.gate.tools.base import (
    ImageToolError,
    Tool,
    ToolFailure,
    ToolResult,
)
from arena.contenders.gate.web.fetch import (
    SafeFetcher,
    page_text,
)
from arena.contenders.gate.web.reverse import ReverseImageBackend, reverse_image_backend
from arena.contenders.gate.web.search import (
    SearchBackend,
    SearchHit,
    search_backend,
)

MAX_THUMBNAILS = 3
MAX_THUMBNAIL_BYTES = 2_000_000
THUMBNAIL_TIMEOUT = 5.0  # seconds each; they load together


def web_tools(
    settings: GateSettings, http: httpx.AsyncClient, *, public_url: str = "", allow_loopback: bool = False
) -> tuple[list[Tool], dict[str, str]]:
    """The knowledge tools the settings allow, and why the others are off.

    `public_url` is ARENA_PUBLIC_URL, where a reverse image search engine
    fetches the image. `allow_loopback` lets tests visit their own 127.0.0.1
    servers; it is a constructor argument only, never a configuration key."""
    names = ("web_search", "web_image_search", "reverse_image_search", "visit")
    if not settings.web:
        return [], {n: "web access is turned off ([tools] web = false)" for n in names}
    fetcher = SafeFetcher(
        max_bytes=settings.visit_max_bytes, timeout=settings.visit_timeout, allow_loopback=allow_loopback
    )
    tools = [visit_tool(fetcher, settings)]
    disabled: dict[str, str] = {}
    backend, reason = search_backend(settings, http)
    if backend is None:
        disabled |= {"web_search": reason, "web_image_search": reason}
    else:
        tools += search_tools(backend, fetcher, settings)
    reverse, reason = reverse_image_backend(settings, http, public_url)
    if reverse is None:
        disabled["reverse_image_search"] = reason
    else:
        tools.append(reverse_image_search_tool(reverse, public_url, settings))
    return tools, disabled


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
        return ToolResult("\n".join(lines), summary=summary, links=tuple(h.url for h in hits))

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
        return ToolResult("\n".join(lines), images=tuple(produced), summary=summary, links=tuple(h.url for h in hits))

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


def reverse_image_search_tool(backend: ReverseImageBackend, public_url: str, settings: GateSettings) -> Tool:
    schema = {
        "type": "object",
        "properties": {
            "image": {"type": "string", "description": "id of the image to search with, e.g. img_0 (the photo)"},
            "box": {
                "type": "array",
                "items": {"type": "number"},
                "minItems": 4,
                "maxItems": 4,
                "description": "optional region [x0, y0, x1, y1] (fractions 0..1) to search with instead of the whole image",
            },
        },
        "required": ["image"],
        "additionalProperties": False,
    }

    async def run(args: dict[str, Any], registry: ImageRegistry) -> ToolResult:
        sha = await asyncio.to_thread(registry.publish, args["image"], args.get("box"))
        hits = await backend.search(f"{public_url.rstrip('/')}/images/{sha}.jpg", limit=settings.search_results)
        what = args["image"] + (f" region {args['box']}" if args.get("box") else "")
        if not hits:
            return ToolResult(f"No pages found showing {what}.", summary=f"no pages show {what}")
        lines = [
            f"{i}. {h.title}\n   page: {h.url}" + (f"\n   {h.snippet[:300]}" if h.snippet else "")
            for i, h in enumerate(hits, 1)
        ]
        summary = f"{len(hits)} pages show {what}: " + "; ".join(h.title[:60] for h in hits[:3])
        return ToolResult("\n".join(lines), summary=summary, links=tuple(h.url for h in hits))

    return Tool(
        ToolSpec(
            "reverse_image_search",
            "Search the web with an image (or a region of it) to find pages that show the same or a very "
            "similar picture. Returns the pages' titles and URLs.",
            schema,
        ),
        run,
        max(settings.tool_timeout, 35.0),  # engines fetch the image first, then compare
    )


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
