"""The offline baseline contenders on real photos and on crafted ones.

OCR is the slow part (about half a second per photo, ten times that for the
eleven views of the fixed policy), so the sample photos are read once per
module by one shared engine, and the gate path runs on two photos only.
"""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path

import httpx
import pytest
from PIL import Image, ImageDraw, ImageFont

from arena.answers.markdown import render_markdown
from arena.answers.style import count_gps
from arena.config import ContenderConfig, PoolConfig, load_pool
from arena.contenders.base import (
    ContenderError,
    ContenderImage,
    TextDelta,
    ToolStep,
    Usage,
)
from arena.contenders.baselines import (
    GeolocatorOptions,
    OcrGeolocator,
    OcrLine,
    _warm_up,
    merge_lines,
    shared_engine,
)
from arena.contenders.baselines.wording import wording_for
from arena.contenders.compose import ProviderDeps, build_pool
from arena.geo.gazetteer import load_gazetteer
from arena.geo.language import guess_language
from arena.images.store import ImageStore, LocalImageStore
from arena.vision.policy import fixed_policy_views
from tests.conftest import SAMPLE_DIR

PHOTOS = sorted((SAMPLE_DIR / "images").glob("level1-*.jpg"))
COORDINATES = re.compile(r"\d{1,2}\.\d{2,}° [NS], \d{1,3}\.\d{2,}° [EW]")
# what the answers once showed a voter: the ranking's own numbers
INTERNAL_SCORES = re.compile(r"prior|weight|strength|confidence|\b0\.\d\d\b", re.IGNORECASE)


@pytest.fixture(scope="module")
def ocr_by_photo() -> dict[str, list[OcrLine]]:
    load_gazetteer()  # built once per process; here so no test pays for it alone
    engine = shared_engine()
    return {p.name: engine.read(Image.open(p)) for p in PHOTOS}


@pytest.fixture
def store(tmp_path: Path) -> ImageStore:
    return LocalImageStore(tmp_path / "images")


def as_contender_image(image: Image.Image) -> ContenderImage:
    out = io.BytesIO()
    image.convert("RGB").save(out, "JPEG", quality=90)
    return ContenderImage(out.getvalue(), image.width, image.height)


def sign(text: str, size: tuple[int, int] = (900, 400)) -> Image.Image:
    """A street-sign-like picture with `text` in Pillow's built-in font."""
    image = Image.new("RGB", size, (190, 200, 210))
    draw = ImageDraw.Draw(image)
    draw.rectangle((40, size[1] // 2 - 70, size[0] - 40, size[1] // 2 + 70), fill=(20, 90, 40))
    draw.text((70, size[1] // 2 - 40), text, font=ImageFont.load_default(size=64), fill="white")
    return image


def textless() -> Image.Image:
    """Sky-to-ground gradient with blobs: photo-like, without any writing."""
    image = Image.new("RGB", (800, 600))
    draw = ImageDraw.Draw(image)
    for y in range(600):
        draw.line((0, y, 800, y), fill=(90 + y // 6, 140 + y // 10, 220 - y // 4))
    for i in range(12):
        draw.ellipse((60 * i, 380 + 7 * i, 60 * i + 90, 470 + 7 * i), fill=(40, 110 + 8 * i, 50))
    return image


async def collect(contender: OcrGeolocator, prompt: str, image: Image.Image) -> tuple[str, list[ToolStep], list]:
    events = [e async for e in contender.stream(prompt, as_contender_image(image))]
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    steps = [e for e in events if isinstance(e, ToolStep)]
    return text, steps, events


class TestOcrEngine:
    def test_reads_the_sign_in_a_real_photo(self, ocr_by_photo: dict[str, list[OcrLine]]) -> None:
        # level1-2: a traffic-camera sign "电子抓拍" under a no-U-turn sign
        texts = [ln.text for ln in ocr_by_photo["level1-2.jpg"]]
        assert "电子抓拍" in texts
        line = next(ln for ln in ocr_by_photo["level1-2.jpg"] if ln.text == "电子抓拍")
        x0, y0, x1, y1 = line.box
        assert 0 <= x0 < x1 <= 1280 and 0 <= y0 < y1 <= 746
        assert line.confidence > 0.9

    def test_most_sample_photos_have_no_legible_text(self, ocr_by_photo: dict[str, list[OcrLine]]) -> None:
        # The honest state of affairs the answers must reflect.
        assert len(ocr_by_photo) == len(PHOTOS) >= 10
        assert sum(1 for lines in ocr_by_photo.values() if merge_lines(lines)) <= len(PHOTOS) // 2

    def test_reads_latin_text(self) -> None:
        lines = shared_engine().read(sign("Welcome to Qingdao"))
        assert [ln.text for ln in lines] == ["Welcome to Qingdao"]

    def test_blank_image_reads_nothing(self) -> None:
        assert shared_engine().read(textless()) == []

    def test_large_image_is_downscaled_and_boxes_map_back(self) -> None:
        big = sign("Welcome to Qingdao").resize((3600, 1600))
        lines = shared_engine().read(big)
        assert lines and lines[0].text == "Welcome to Qingdao"
        assert lines[0].box[2] > 2000  # in the coordinates of the image given


class TestMergeLines:
    def test_duplicates_and_fragments_from_overlapping_views(self) -> None:
        merged = merge_lines(
            [
                OcrLine("电子抓拍", 0.99, (0, 0, 1, 1)),
                OcrLine("电子抓拍", 0.97, (0, 0, 1, 1)),
                OcrLine("抓拍", 0.90, (0, 0, 1, 1)),
                OcrLine("K", 0.97, (0, 0, 1, 1)),
                OcrLine("es", 0.90, (0, 0, 1, 1)),  # two Latin letters: texture, not writing
                OcrLine("北京", 0.90, (0, 0, 1, 1)),  # two Han characters: may be a city
                OcrLine("C一", 0.90, (0, 0, 1, 1)),  # one of each: texture
                OcrLine("Qingdao Port", 0.80, (0, 0, 1, 1)),
                OcrLine("Qingdao Pc", 0.70, (0, 0, 1, 1)),  # a crop cut through "Port"
            ]
        )
        assert [(m.text, m.confidence) for m in merged] == [("Qingdao Port", 0.80), ("电子抓拍", 0.99), ("北京", 0.90)]


class TestOcrGeolocator:
    async def test_places_a_sign_that_names_a_city(self) -> None:
        contender = OcrGeolocator("ocr-geolocator", shared_engine())
        text, steps, events = await collect(contender, "Where is this?", sign("Welcome to Qingdao"))
        assert steps == [] and not any(isinstance(e, Usage) for e in events)
        assert sum(isinstance(e, TextDelta) for e in events) >= 5  # streamed paragraph by paragraph
        assert "Baseline contender" in text
        # a city is a point, to about a kilometre (two decimals), not four decimals
        assert "**Best guess: Qingdao, Shandong, China** (about 36.06° N, 120.38° E)." in text
        assert "“Qingdao” is the name of Qingdao, Shandong, China (a city)." in text
        assert "How sure I am:" in text
        assert count_gps(text) >= 1
        assert not INTERNAL_SCORES.search(text), INTERNAL_SCORES.search(text)
        html = render_markdown(text)
        assert "<h3>Why</h3>" in html and "<blockquote>" in html

    async def test_real_photo_with_script_only(self, ocr_by_photo: dict[str, list[OcrLine]]) -> None:
        contender = OcrGeolocator("ocr-geolocator", shared_engine())
        photo = Image.open(SAMPLE_DIR / "images" / "level1-2.jpg")
        text, _, _ = await collect(contender, "Where was this photo taken?", photo)
        assert "`电子抓拍`" in text
        assert "The text is in Chinese characters, which is written mostly in China" in text
        # a guess at the country is given as the country, with no point pretending to locate it
        assert "**Best guess: somewhere in China.** That is a guess at the country only" in text
        assert not COORDINATES.search(text) and count_gps(text) == 0
        assert "None of the text names a place I know." in text
        assert not INTERNAL_SCORES.search(text), INTERNAL_SCORES.search(text)

    @pytest.mark.parametrize(
        ("prompt", "language", "guess"),
        [
            ("Where was this photo taken?", "en", "**Best guess: somewhere in China.**"),
            ("这张照片是在哪里拍的？", "zh", "**最佳猜测：中国境内某处。**"),
            ("この写真はどこで撮られましたか？", "ja", "**推定：中国のどこか。**"),
            ("이 사진은 어디에서 찍었나요?", "ko", "**최선의 추측: 중국 어딘가.**"),
            ("¿Dónde se tomó esta foto?", "es", "**Mi mejor suposición: algún lugar de China.**"),
            ("Où cette photo a-t-elle été prise ?", "fr", "**Meilleure hypothèse : quelque part en Chine.**"),
            ("Wo wurde dieses Foto aufgenommen?", "de", "**Beste Vermutung: irgendwo in China.**"),
            ("Где сделана эта фотография?", "ru", "**Лучшее предположение: где-то в стране Китай.**"),
            ("أين التقطت هذه الصورة؟", "ar", "**أفضل تخمين: مكان ما في الصّين.**"),
            ("Onde foi tirada esta foto?", "pt", "**Melhor palpite: algum lugar em China.**"),
        ],
    )
    async def test_answers_in_the_question_s_language(
        self, ocr_by_photo: dict[str, list[OcrLine]], prompt: str, language: str, guess: str
    ) -> None:
        assert guess_language(prompt) == language
        contender = OcrGeolocator("ocr-geolocator", shared_engine())
        photo = Image.open(SAMPLE_DIR / "images" / "level1-2.jpg")
        text, _, _ = await collect(contender, prompt, photo)
        assert guess in text
        say = wording_for(language)
        assert say.read in text and say.why in text and say.caveat in text
        if language != "en":  # none of the English sentences is left over
            assert "Best guess" not in text and "Baseline contender" not in text
        assert not COORDINATES.search(text) and not INTERNAL_SCORES.search(text)

    async def test_no_text_means_no_guess(self) -> None:
        contender = OcrGeolocator("ocr-geolocator", shared_engine(), options=GeolocatorOptions(use_question=False))
        text, steps, _ = await collect(contender, "Where is this?", textless())
        assert "I can't place this photo" in text and "no legible text" in text
        assert not COORDINATES.search(text) and steps == []

    async def test_question_hint_is_reported_not_invented(self) -> None:
        contender = OcrGeolocator("ocr-geolocator", shared_engine())
        text, _, _ = await collect(contender, "Which city in China is this?", textless())
        assert "Your question mentions China" in text and "I can't place this photo" in text
        text, _, _ = await collect(contender, "这是中国的哪个城市？", textless())
        assert "你的问题提到了China" in text and "我无法确定这张照片的位置" in text

    async def test_ocr_runs_off_the_event_loop(self) -> None:
        contender = OcrGeolocator("ocr-geolocator", shared_engine())
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.005)
                ticks += 1

        task = asyncio.create_task(ticker())
        try:
            await collect(contender, "Where?", sign("Welcome to Qingdao").resize((1800, 800)))
        finally:
            task.cancel()
        assert ticks >= 10  # the loop kept running while OCR worked


class TestGatePath:
    async def test_one_step_per_view_with_stored_thumbnails(self, store: ImageStore) -> None:
        # level1-2 shrunk to 800 px to keep the eleven OCR passes quick; the
        # sign "电子抓拍" stays legible in the full view and most crops.
        photo = Image.open(SAMPLE_DIR / "images" / "level1-2.jpg")
        photo.thumbnail((800, 800))
        contender = OcrGeolocator("ocr-geolocator+gate", shared_engine(), images=store, gate=True)
        text, steps, events = await collect(contender, "Where was this photo taken?", photo)
        views = fixed_policy_views(photo)
        assert len(steps) == len(views) >= 11
        assert [s.tool for s in steps] == [v.tool for v in views]
        assert [s.args for s in steps] == [v.args for v in views]
        assert steps[0].tool == "original" and steps[0].observation.startswith("full")
        # every step precedes the answer, and has its own stored thumbnail
        assert events.index(steps[-1]) < min(i for i, e in enumerate(events) if isinstance(e, TextDelta))
        for step in steps:
            (ref,) = step.image_refs
            with Image.open(store.path(ref, "jpg")) as thumb:
                assert thumb.format == "JPEG" and max(thumb.size) <= 512
        assert len({s.image_refs[0] for s in steps}) == len(steps)
        assert sum("电子抓拍" in s.observation for s in steps[1:]) >= 3  # read again in the crops
        assert f"read in {len(views)} views" in text
        assert "`电子抓拍`" in text and "**Best guess: somewhere in China.**" in text

    async def test_textless_photo_does_not_crash(self, store: ImageStore) -> None:
        contender = OcrGeolocator("ocr-geolocator+gate", shared_engine(), images=store, gate=True)
        text, steps, _ = await collect(contender, "Where?", textless().resize((320, 240)))
        assert steps and all("no legible text" in s.observation for s in steps)
        assert "I can't place this photo" in text

    async def test_policy_errors_become_contender_errors(self) -> None:
        def broken_policy(image: Image.Image) -> list:
            raise RuntimeError("boom")

        contender = OcrGeolocator("ocr-geolocator+gate", shared_engine(), gate=True, policy=broken_policy)
        with pytest.raises(ContenderError, match="fixed policy failed"):
            await collect(contender, "Where?", textless())


class TestRegistration:
    async def test_offline_pool_builds_both_baselines(self, tmp_path: Path) -> None:
        pool = load_pool(tmp_path / "absent.toml")
        async with httpx.AsyncClient() as http:
            contenders = build_pool(ProviderDeps(http=http, images=LocalImageStore(tmp_path), pool=pool))
        assert set(contenders) == {"ocr-geolocator", "ocr-geolocator+gate"}
        plain, gated = contenders["ocr-geolocator"], contenders["ocr-geolocator+gate"]
        assert isinstance(plain, OcrGeolocator) and isinstance(gated, OcrGeolocator)
        assert (plain.gate, gated.gate) == (False, True)
        assert gated.images is not None and plain.engine is gated.engine
        warm_up = _warm_up(plain.engine)  # started by the build, once per process
        warm_up.join(timeout=60)
        assert not warm_up.is_alive() and plain.engine.loaded

    async def test_options_tune_thresholds(self, tmp_path: Path) -> None:
        cfg = ContenderConfig(
            name="strict", provider="baseline", model="ocr-geolocator", options={"min_confidence": 0.9, "top": 5}
        )
        pool = PoolConfig(contenders=[cfg])
        async with httpx.AsyncClient() as http:
            contender = build_pool(ProviderDeps(http=http, images=LocalImageStore(tmp_path), pool=pool))["strict"]
        assert contender.options == GeolocatorOptions(min_confidence=0.9, top=5)

    @pytest.mark.parametrize(
        ("model", "options", "message"),
        [
            ("gpt-4o", {}, "unknown baseline model 'gpt-4o'"),
            ("ocr-geolocator", {"min_confidense": 0.5}, "unknown options min_confidense"),
            ("ocr-geolocator", {"top": 0}, "top in 1..10"),
        ],
    )
    async def test_bad_entries_are_refused_with_a_reason(
        self, tmp_path: Path, model: str, options: dict, message: str
    ) -> None:
        cfg = ContenderConfig(name="bad", provider="baseline", model=model, options=options)
        async with httpx.AsyncClient() as http:
            deps = ProviderDeps(http=http, images=LocalImageStore(tmp_path), pool=PoolConfig(contenders=[cfg]))
            with pytest.raises(ValueError, match=re.escape(message)):
                build_pool(deps)
