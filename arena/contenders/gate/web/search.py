"""Web search backends behind one small protocol: SearxNG's JSON API
(self-hosted, no key) and Brave's keyed Search API."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from arena.config import GateSettings
from arena.contenders.gate.tools.base import ToolFailure


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
        data = await get_json(self.http, self.base_url.rstrip("/") + "/search", params, {}, self.timeout, self.name)
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
        data = await get_json(
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


async def get_json(
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
