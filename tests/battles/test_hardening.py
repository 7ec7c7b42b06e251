"""What the attacker found in the upload path and the answer stream, kept fixed:
cheap checks before decoding, every refused upload counted, an atomic limit, text that
can be stored, cool-downs only for a provider that is down, capped answers, text deltas."""

from __future__ import annotations

import asyncio
import io
import threading

import httpx
import pytest
from PIL import Image as PILImage
from sqlalchemy import func, select

from arena.app import create_app
from arena.battles import repository
from arena.db.session import make_engine, make_sessionmaker
from arena.db.tables import Battle, Image, Response, UploadCount, utcnow
from arena.db.text import is_storable_text, storable
from tests.battles.test_failures import arena_settings
from tests.battles.test_flow import parse_sse, start_battle


def big_png(width: int = 8000, height: int = 5000) -> bytes:
    """A 40-megapixel PNG of about 130 KB: cheap to send, costly to decode."""
    out = io.BytesIO()
    PILImage.new("RGB", (width, height), (120, 30, 40)).save(out, "PNG", optimize=True)
    return out.getvalue()


def post(client, photo: bytes, prompt: str):  # type: ignore[no-untyped-def]
    return client.post("/api/battles", files={"image": ("p.png", photo, "image/png")}, data={"prompt": prompt})


def stored_nothing(app) -> bool:  # type: ignore[no-untyped-def]
    with app.state.services.database.sessions() as session:
        rows = (
            session.scalar(select(func.count()).select_from(Battle)),
            session.scalar(select(func.count()).select_from(Image)),
        )
    return rows == (0, 0) and not list(app.state.settings.image_dir.rglob("*.jpg"))


class TestCheapChecksFirst:
    async def test_a_refused_prompt_is_judged_before_the_image_is_read(self, client, app):
        # the bytes are not an image at all: a 415 would mean they were decoded first
        response = await post(client, b"<html>not a photo</html>", "What breed is this dog?")
        assert response.status_code == 422 and response.json()["error"] == "not_geographic"
        assert stored_nothing(app)

    async def test_nul_in_the_prompt_is_refused_and_nothing_is_written(self, client, app, photo_bytes):
        for prompt in ("Where was this\x00 taken?", "Where was this \x1b[2J taken?"):
            response = await client.post(
                "/api/battles", files={"image": ("p.jpg", photo_bytes, "image/jpeg")}, data={"prompt": prompt}
            )
            assert response.status_code == 422, response.text
            assert response.json()["error"] == "invalid_prompt"
            assert "control characters" in response.json()["message"]
        assert stored_nothing(app)

    async def test_broken_utf8_in_the_prompt_is_refused(self, client, app, photo_bytes):
        # a lone surrogate cannot be sent as UTF-8; its CESU-8 bytes reach the form parser, which
        # falls back to Latin-1 and makes C1 control characters of them
        response = await client.post(
            "/api/battles",
            files={"image": ("p.jpg", photo_bytes, "image/jpeg")},
            data={"prompt": b"Where was this taken? \xed\xa0\x80"},
        )
        assert response.status_code == 422 and response.json()["error"] == "invalid_prompt"
        assert stored_nothing(app)


class TestRateLimitCountsEverything:
    @pytest.fixture
    def settings(self, settings):
        return settings.model_copy(update={"battles_per_minute": 10})

    async def test_refused_uploads_count_and_meet_a_429(self, client, app):
        photo = big_png()
        statuses = [(await post(client, photo, "What breed is this dog?")).status_code for _ in range(30)]
        assert statuses[:10] == [422] * 10 and statuses[10:] == [429] * 20
        assert stored_nothing(app)

    async def test_thirty_parallel_uploads_honour_the_limit(self, client, app, photo_bytes):
        responses = await asyncio.gather(
            *(
                client.post(
                    "/api/battles",
                    files={"image": ("p.jpg", photo_bytes, "image/jpeg")},
                    data={"prompt": "Where was this taken?"},
                )
                for _ in range(30)
            )
        )
        statuses = sorted(r.status_code for r in responses)
        assert statuses == [201] * 10 + [429] * 20
        with app.state.services.database.sessions() as session:
            assert session.scalar(select(func.count()).select_from(Battle)) == 10

    def test_the_count_is_atomic_across_connections(self, database_url):
        # threads with their own connections stand for replicas: each attempt gets its own number
        engine = make_engine(database_url)
        sessions = make_sessionmaker(engine)
        counts: list[int] = []
        lock, start = threading.Lock(), threading.Barrier(12)

        def attempt() -> None:
            start.wait()
            for _ in range(3):
                with sessions.begin() as session:
                    n = repository.count_upload(session, "ip-hash-under-test", utcnow())
                with lock:
                    counts.append(n)

        threads = [threading.Thread(target=attempt) for _ in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        engine.dispose()
        # a minute boundary may pass during the test: then the sliding count restarts lower
        assert len(counts) == 36 and len(set(counts)) >= 30 and max(counts) <= 36

    async def test_old_minutes_are_forgotten(self, app):
        with app.state.services.database.sessions.begin() as session:
            for minute in range(3):
                session.add(
                    UploadCount(ip_hash="someone", minute=int(utcnow().timestamp() // 60) - 5 - minute, count=50)
                )
        with app.state.services.database.sessions.begin() as session:
            assert repository.count_upload(session, "someone", utcnow()) == 1
            assert session.scalar(select(func.count()).select_from(UploadCount)) == 1


class TestDecodeBound:
    @pytest.fixture
    def settings(self, settings):
        # room for exactly one 40-megapixel decode at a time
        return settings.model_copy(update={"decode_memory_mb": 500, "battles_per_minute": 0})

    async def test_concurrent_decodes_wait_for_a_slot(self, client, app, monkeypatch):
        from arena.web import battles as routes

        running, peak = 0, 0
        real = routes.normalise

        def watched(data, limits):  # type: ignore[no-untyped-def]
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            try:
                return real(data, limits)
            finally:
                running -= 1

        monkeypatch.setattr(routes, "normalise", watched)
        photo = big_png(7000, 5000)
        responses = await asyncio.gather(*(post(client, photo, "Where was this taken?") for _ in range(4)))
        assert all(r.status_code == 201 for r in responses), [r.text for r in responses]
        assert peak == 1


class TestCooldownOnlyWhenDown:
    @pytest.mark.parametrize(
        ("model", "cools"), [("error-400", False), ("error-422", False), ("error-500", True), ("error-429", True)]
    )
    async def test_three_failures(self, tmp_path, database_url, openai_server, photo_bytes, model, cools):
        settings = arena_settings(
            tmp_path, database_url, openai_server[0], {"good": "echo-good", "picky": model}, battles_per_minute=0
        )
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
                for _ in range(3):
                    created = await start_battle(client, photo_bytes)
                    events = parse_sse((await client.get(created["events_url"])).text)
                    assert events[-1] == ("end", {"status": "failed"})
                status = app.state.services.policy.status("picky")
                assert status.startswith("cooling down") == cools, status
                after = await client.post(
                    "/api/battles",
                    files={"image": ("p.jpg", photo_bytes, "image/jpeg")},
                    data={"prompt": "Where was this taken?"},
                )
                assert after.status_code == (503 if cools else 201)


class TestAnswers:
    @pytest.fixture
    def settings(self, tmp_path, database_url, openai_server):
        return arena_settings(
            tmp_path,
            database_url,
            openai_server[0],
            {"long": "long-150000", "odd": "surrogate"},
            max_answer_chars=100_000,
        )

    async def test_long_answer_is_capped_and_deltas_carry_text_only(self, client, app, photo_bytes):
        created = await start_battle(client, photo_bytes)
        body = (await client.get(created["events_url"])).text
        events = parse_sse(body)
        with app.state.services.database.sessions() as session:
            sides = {r.contender: r.side for r in session.scalars(select(Response))}
            stored = {r.contender: r for r in session.scalars(select(Response))}
        errors = {d["side"]: d["message"] for n, d in events if n == "error"}
        assert "limit of 100,000 characters" in errors[sides["long"]]
        assert stored["long"].status == "error" and 100_000 < len(stored["long"].text) <= 101_000
        deltas = [d for n, d in events if n == "delta"]
        assert deltas and all(set(d) == {"side", "text"} for d in deltas)
        # each character travels once: the events are about as long as the answers
        assert len(body) < 3 * (len(stored["long"].text) + len(stored["odd"].text)) + 20_000

    async def test_a_lone_surrogate_or_nul_from_a_model_is_replaced(self, client, app, photo_bytes):
        created = await start_battle(client, photo_bytes)
        events = parse_sse((await client.get(created["events_url"])).text)
        with app.state.services.database.sessions() as session:
            odd = session.scalars(select(Response).where(Response.contender == "odd")).one()
        assert odd.status == "done", odd.error
        assert odd.text == "Best guess: **Paris** \ufffd (48.8566\ufffdN)."
        done = [d for n, d in events if n == "done" and d["side"] == odd.side]
        assert "<strong>Paris</strong>" in done[0]["html"]


class TestStorableText:
    def test_replaces_only_what_cannot_be_stored(self):
        assert storable("plain\ttext\n") == "plain\ttext\n"
        assert storable("a\x00b\ud800c\udfffd") == "a\ufffdb\ufffdc\ufffdd"
        assert storable("😀 ok") == "😀 ok"

    def test_typed_text_with_control_characters_is_not_storable(self):
        assert is_storable_text("Where?\nIn Paris\t", allow="\t\n\r")
        assert not is_storable_text("Where\x00?", allow="\t\n\r")
        assert not is_storable_text("Where\x1b[31m?", allow="\t\n\r")
        assert not is_storable_text("Where \ud800?", allow="\t\n\r")
