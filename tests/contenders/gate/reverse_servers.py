"""Loopback servers for reverse image search: the arena's image route (what
ARENA_PUBLIC_URL points at), and a search engine that fetches the image from
it by URL and answers in SearxNG's or SerpAPI's Google Lens JSON format.

The engine decodes what it fetched and reports its size in the first result,
so a test sees which pixels the search really used."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

import httpx
from PIL import Image
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from arena.images.store import ImageStore

SERPAPI_KEY = "serp-test-key-123"


def arena_images(store: ImageStore) -> Starlette:
    """`/images/{sha256}.jpg` from the store, as the arena serves it."""

    async def image(request: Request) -> Response:
        sha = request.path_params["sha"].removesuffix(".jpg")
        try:
            return Response(store.get(sha), media_type="image/jpeg")
        except (KeyError, ValueError):
            return Response("not found", status_code=404)

    return Starlette(routes=[Route("/images/{sha}", image)])


@dataclass
class ReverseEngine:
    """Speaks `/search?format=json&engines=...&q=<image url>` (SearxNG) and
    `/search.json?engine=google_lens&url=<image url>&api_key=...` (SerpAPI)."""

    fetched: list[tuple[str, tuple[int, int]]] = field(default_factory=list)  # (url, size) per query
    queries: list[dict[str, str]] = field(default_factory=list)
    visited: list[str] = field(default_factory=list)
    base_url: str = ""  # set once served: text results point at its /page/{n}

    @property
    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/search", self.searxng),
                Route("/search.json", self.serpapi),
                Route("/page/{n}", self.page),
            ],
        )

    async def page(self, request: Request) -> Response:
        n = request.path_params["n"]
        self.visited.append(n)
        body = f"<html><head><title>Page {n}</title></head><body><article><p>Page {n} says the crossing is in Shibuya, Tokyo; the consumption tax was 3% in 1989.</p></article></body></html>"
        return Response(body, media_type="text/html")

    def _text_results(self, query: str) -> list[dict[str, Any]]:
        # four results, one page twice: the policy visits the first three unique ones
        pages = [1, 2, 2, 3, 4]
        return [
            {"url": f"{self.base_url}/page/{n}", "title": f"Result {n} for {query[:40]}", "content": f"snippet {n}"}
            for n in pages
        ]

    async def _fetch(self, url: str) -> tuple[int, int] | None:
        async with httpx.AsyncClient() as http:
            response = await http.get(url)
        if response.status_code != 200:
            return None
        with Image.open(io.BytesIO(response.content)) as im:
            size = im.size
        self.fetched.append((url, size))
        return size

    async def searxng(self, request: Request) -> Response:
        params = dict(request.query_params)
        self.queries.append(params)
        if params.get("format") != "json":
            return Response("format not allowed", status_code=403)
        if "engines" not in params and params.get("categories") == "general":
            return JSONResponse({"query": params.get("q"), "results": self._text_results(params.get("q", ""))})
        if params.get("engines") != "tineye":
            return JSONResponse({"query": params.get("q"), "results": []})
        size = await self._fetch(params["q"])
        if size is None:
            return JSONResponse({"query": params["q"], "results": [], "unresponsive_engines": [["tineye", "error"]]})
        results = [
            {
                "url": "https://shibuya.example/crossing",
                "title": f"Shibuya crossing ({size[0]}x{size[1]} match)",
                "content": "Crawled 2023-04-01",
                "img_src": "https://shibuya.example/crossing.jpg",
                "thumbnail_src": "https://shibuya.example/crossing-thumb.jpg",
                "engine": "tineye",
                "template": "images.html",
            },
            {"url": "https://travel.example/tokyo", "title": "Tokyo streets", "engine": "tineye"},
            {"title": "no url, skipped", "engine": "tineye"},
        ]
        return JSONResponse({"query": params["q"], "number_of_results": 2, "results": results})

    async def serpapi(self, request: Request) -> Response:
        params = dict(request.query_params)
        self.queries.append(params)
        if params.get("api_key") != SERPAPI_KEY:
            return JSONResponse({"error": "Invalid API key. Your API key should be here: ..."}, status_code=401)
        if params.get("engine") != "google_lens":
            return JSONResponse({"error": "Unsupported engine."}, status_code=400)
        size = await self._fetch(params["url"])
        if size is None:
            return JSONResponse({"search_metadata": {"status": "Error"}, "error": "Couldn't fetch the image."})
        matches: list[dict[str, Any]] = [
            {
                "position": 1,
                "title": f"Osaka, Dotonbori at night ({size[0]}x{size[1]} match)",
                "link": "https://osaka.example/dotonbori",
                "source": "osaka.example",
                "thumbnail": "https://serpapi.example/thumb1.jpg",
                "image": "https://osaka.example/dotonbori.jpg",
            },
            {"position": 2, "title": "Kansai travel", "link": "https://kansai.example/", "source": "kansai.example"},
        ]
        return JSONResponse({"search_metadata": {"status": "Success"}, "visual_matches": matches})
