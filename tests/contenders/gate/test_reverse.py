"""`reverse_image_search`: a registry image (or a region of it) is stored, the
engine fetches it from ARENA_PUBLIC_URL by URL and the pages that show it come
back; a SearxNG (TinEye engine) and SerpAPI's Google Lens, each a loopback
server speaking its format that really fetches the image."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image

from arena.config import GateSettings
from arena.contenders.gate.registry import ImageRegistry, jpeg_bytes
from arena.contenders.gate.toolbox import build_toolbox
from arena.contenders.gate.tools.base import ImageToolError, Tool, ToolFailure, check_arguments
from arena.images.store import LocalImageStore
from arena.vision.ops import crop
from tests.contenders.gate.reverse_servers import SERPAPI_KEY, ReverseEngine, arena_images
from tests.servers import serve_in_thread


class Loopback:
    def __init__(self, store: LocalImageStore, arena: str, engine: ReverseEngine, engine_url: str) -> None:
        self.store, self.arena, self.engine, self.engine_url = store, arena, engine, engine_url


@pytest.fixture
def loopback(tmp_path: Path) -> Iterator[Loopback]:
    store = LocalImageStore(tmp_path / "images")
    engine = ReverseEngine()
    with serve_in_thread(arena_images(store)) as arena, serve_in_thread(engine.app) as engine_url:
        yield Loopback(store, arena, engine, engine_url)


async def reverse_tool(http: httpx.AsyncClient, public_url: str, **tools: Any) -> Tool:
    box = build_toolbox(GateSettings.from_pool({"code": False, **tools}), http, public_url=public_url)
    [tool] = [t for t in box.tools if t.name == "reverse_image_search"]
    return tool


async def search(tool: Tool, registry: ImageRegistry, **args: Any) -> Any:
    return await tool.run(check_arguments(tool.spec.parameters, args), registry)


class TestSearxng:
    async def test_the_photo_is_fetched_from_the_public_url_and_pages_come_back(
        self, loopback: Loopback, street: Image.Image
    ) -> None:
        photo_sha = loopback.store.put(jpeg_bytes(street), "jpg")  # the battle's photo, as the arena stored it
        registry = ImageRegistry(street, loopback.store, photo_sha)
        async with httpx.AsyncClient() as http:
            tool = await reverse_tool(
                http, loopback.arena, reverse_search_backend="searxng", reverse_search_url=loopback.engine_url
            )
            result = await search(tool, registry, image="img_0")
        [(url, size)] = loopback.engine.fetched
        assert url == f"{loopback.arena}/images/{photo_sha}.jpg" and size == street.size
        assert loopback.engine.queries[0]["engines"] == "tineye" and loopback.engine.queries[0]["format"] == "json"
        assert result.observation == (
            f"1. Shibuya crossing ({street.width}x{street.height} match)\n"
            "   page: https://shibuya.example/crossing\n"
            "   Crawled 2023-04-01\n"
            "2. Tokyo streets\n"
            "   page: https://travel.example/tokyo"
        )
        assert result.links == ("https://shibuya.example/crossing", "https://travel.example/tokyo")
        assert result.summary.startswith("2 pages show img_0: Shibuya crossing")

    async def test_a_box_searches_with_that_region_only(self, loopback: Loopback, street: Image.Image) -> None:
        registry = ImageRegistry(street, loopback.store)
        async with httpx.AsyncClient() as http:
            # the text search's SearxNG is the default route for image search too
            tool = await reverse_tool(http, loopback.arena, search_backend="searxng", search_url=loopback.engine_url,
                                      reverse_search_backend="searxng")  # fmt: skip
            result = await search(tool, registry, image="img_0", box=[0.5, 0.5, 1, 1])
        [(_, size)] = loopback.engine.fetched
        assert size == crop(street, [0.5, 0.5, 1, 1]).size != street.size
        assert "img_0 region [0.5, 0.5, 1, 1]" in result.summary
        assert len(registry) == 1  # the region is stored for the engine, not added to the model's images

    async def test_other_engines_can_be_chosen(self, loopback: Loopback, street: Image.Image) -> None:
        async with httpx.AsyncClient() as http:
            tool = await reverse_tool(http, loopback.arena, reverse_search_backend="searxng",
                                      reverse_search_url=loopback.engine_url, reverse_search_engines=["yandex images"])  # fmt: skip
            result = await search(tool, ImageRegistry(street, loopback.store), image="img_0")
        assert loopback.engine.queries[0]["engines"] == "yandex images"
        assert result.observation == "No pages found showing img_0." and not result.links

    async def test_bad_image_ids_and_boxes_are_observations(self, loopback: Loopback, street: Image.Image) -> None:
        registry = ImageRegistry(street, loopback.store)
        async with httpx.AsyncClient() as http:
            tool = await reverse_tool(
                http, loopback.arena, reverse_search_backend="searxng", reverse_search_url=loopback.engine_url
            )
            with pytest.raises(ImageToolError, match="unknown image id 'img_4'"):
                await search(tool, registry, image="img_4")
            with pytest.raises(ImageToolError, match="fractions"):
                await search(tool, registry, image="img_0", box=[0, 0, 640, 480])
        assert loopback.engine.fetched == []


class TestSerpapiLens:
    async def test_google_lens_visual_matches(
        self, loopback: Loopback, street: Image.Image, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("SERPAPI_KEY", SERPAPI_KEY)
        registry = ImageRegistry(street, loopback.store)
        crop = registry.add(street.crop((0, 0, 200, 100)), "crop of img_0")
        async with httpx.AsyncClient() as http:
            tool = await reverse_tool(http, loopback.arena, reverse_search_backend="serpapi",
                                      reverse_search_url=loopback.engine_url, reverse_search_api_key_env="SERPAPI_KEY")  # fmt: skip
            result = await search(tool, registry, image=crop.id)
        [(url, size)] = loopback.engine.fetched
        assert url == f"{loopback.arena}/images/{crop.sha256}.jpg" and size == (200, 100)
        assert loopback.engine.queries[0]["engine"] == "google_lens"
        assert result.links == ("https://osaka.example/dotonbori", "https://kansai.example/")
        assert (
            "1. Osaka, Dotonbori at night (200x100 match)\n   page: https://osaka.example/dotonbori\n   on osaka.example"
            in (result.observation)
        )

    async def test_a_wrong_key_is_a_failure_that_does_not_show_the_key(
        self, loopback: Loopback, street: Image.Image, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("SERPAPI_KEY", "wrong-key-456")
        async with httpx.AsyncClient() as http:
            tool = await reverse_tool(http, loopback.arena, reverse_search_backend="serpapi",
                                      reverse_search_url=loopback.engine_url, reverse_search_api_key_env="SERPAPI_KEY")  # fmt: skip
            with pytest.raises(ToolFailure) as failure:
                await search(tool, ImageRegistry(street, loopback.store), image="img_0")
        assert "HTTP 401" in str(failure.value) and "wrong-key-456" not in str(failure.value)


class TestWhenItIsOffered:
    async def names(
        self, public_url: str = "https://arena.example.org", **tools: Any
    ) -> tuple[list[str], dict[str, str]]:
        async with httpx.AsyncClient() as http:
            box = build_toolbox(GateSettings.from_pool({"code": False, **tools}), http, public_url=public_url)
        return [t.name for t in box.tools], box.disabled

    async def test_not_configured(self) -> None:
        names, disabled = await self.names()
        assert "reverse_image_search" not in names
        assert disabled["reverse_image_search"] == (
            "no reverse image search backend configured ([tools] reverse_search_backend)"
        )

    async def test_without_a_public_url_the_engine_could_not_fetch_the_image(self) -> None:
        names, disabled = await self.names("", reverse_search_backend="searxng", reverse_search_url="http://s")
        assert "reverse_image_search" not in names
        assert "ARENA_PUBLIC_URL" in disabled["reverse_image_search"]

    async def test_serpapi_without_its_key(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("SERPAPI_KEY", raising=False)
        _, disabled = await self.names(reverse_search_backend="serpapi", reverse_search_api_key_env="SERPAPI_KEY")
        assert (
            disabled["reverse_image_search"] == "the SerpAPI key is missing: set the environment variable SERPAPI_KEY"
        )

    async def test_configured(self) -> None:
        names, disabled = await self.names(reverse_search_backend="searxng", reverse_search_url="http://s")
        assert "reverse_image_search" in names and "reverse_image_search" not in disabled

    def test_an_unknown_backend_is_refused(self) -> None:
        with pytest.raises(ValueError, match="reverse_search_backend"):
            GateSettings.from_pool({"reverse_search_backend": "bing"})
