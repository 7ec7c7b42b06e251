"""Reverse image search backends: pages on the web that show a given image.

Both take the image by URL, so the search engine fetches it from the arena
itself (`ARENA_PUBLIC_URL` + `/images/{sha256}`):

* `searxng`: a SearxNG instance whose image-URL engines (TinEye by default)
  take the URL as the query, answered in SearxNG's JSON format;
* `serpapi`: Google Lens through SerpAPI's keyed JSON API (`engine=google_lens`),
  whose `visual_matches` are the pages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from arena.config import GateSettings
from arena.contenders.gate.web.search import SearchHit, get_json


class ReverseImageBackend(Protocol):
    name: str

    async def search(self, image_url: str, *, limit: int) -> list[SearchHit]: ...


def reverse_image_backend(
    settings: GateSettings, http: httpx.AsyncClient, public_url: str
) -> tuple[ReverseImageBackend | None, str]:
    """The configured backend, or None and the reason the tool is off."""
    kind = settings.reverse_search_backend
    if not kind:
        return None, "no reverse image search backend configured ([tools] reverse_search_backend)"
    if not public_url:
        return None, (
            "reverse image search needs ARENA_PUBLIC_URL: the search engine fetches the image from the arena's address"
        )
    if kind == "searxng":
        url = settings.reverse_search_url or (settings.search_url if settings.search_backend == "searxng" else "")
        if not url:
            return None, "reverse_search_backend = 'searxng' needs reverse_search_url (or a SearxNG search_url)"
        return SearxngReverse(http, url, tuple(settings.reverse_search_engines)), ""
    key = settings.reverse_search_api_key()
    if not key:
        env = settings.reverse_search_api_key_env or "(reverse_search_api_key_env not set)"
        return None, f"the SerpAPI key is missing: set the environment variable {env}"
    return SerpapiLens(http, key, settings.reverse_search_url or SerpapiLens.DEFAULT_URL), ""


@dataclass
class SearxngReverse:
    """SearxNG with engines that search by image URL (`engines=tineye`)."""

    http: httpx.AsyncClient
    base_url: str
    engines: tuple[str, ...] = ("tineye",)
    name: str = "searxng"
    timeout: float = 15.0

    async def search(self, image_url: str, *, limit: int) -> list[SearchHit]:
        params = {"q": image_url, "format": "json", "engines": ",".join(self.engines), "safesearch": "1"}
        data = await get_json(self.http, self.base_url.rstrip("/") + "/search", params, {}, self.timeout, self.name)
        hits = []
        for r in data.get("results") or []:
            if isinstance(r, dict) and r.get("url"):
                hits.append(
                    SearchHit(
                        title=str(r.get("title") or ""),
                        url=str(r["url"]),
                        snippet=str(r.get("content") or ""),
                        image_url=str(r.get("img_src") or ""),
                        thumbnail_url=str(r.get("thumbnail_src") or ""),
                    )
                )
        return hits[:limit]


@dataclass
class SerpapiLens:
    """Google Lens through SerpAPI: GET /search.json?engine=google_lens&url=..."""

    http: httpx.AsyncClient
    api_key: str = field(repr=False)
    base_url: str = "https://serpapi.com"
    name: str = "serpapi"
    timeout: float = 30.0  # Lens answers slower than text search
    DEFAULT_URL = "https://serpapi.com"

    async def search(self, image_url: str, *, limit: int) -> list[SearchHit]:
        params = {"engine": "google_lens", "url": image_url, "api_key": self.api_key}
        data = await get_json(
            self.http, self.base_url.rstrip("/") + "/search.json", params, {}, self.timeout, self.name
        )
        return [_lens_hit(m) for m in data.get("visual_matches") or [] if isinstance(m, dict) and m.get("link")][:limit]


def _lens_hit(match: dict[str, Any]) -> SearchHit:
    source = str(match.get("source") or "")
    return SearchHit(
        title=str(match.get("title") or ""),
        url=str(match["link"]),
        snippet=f"on {source}" if source else "",
        image_url=str(match.get("image") or ""),
        thumbnail_url=str(match.get("thumbnail") or ""),
    )
