"""The battle flow over HTTP: create, stream, vote — on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from sqlalchemy import select

from arena.db.tables import Battle, GatekeeperRejection, Image, Response, Vote


def parse_sse(body: str) -> list[tuple[str, dict]]:
    events = []
    for block in body.strip().split("\n\n"):
        name, data = "message", ""
        for line in block.splitlines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data += line.removeprefix("data: ")
        if data:
            events.append((name, json.loads(data)))
    return events


async def start_battle(client: httpx.AsyncClient, photo: bytes, prompt: str = "Where was this taken?") -> dict:
    response = await client.post(
        "/api/battles", files={"image": ("photo.jpg", photo, "image/jpeg")}, data={"prompt": prompt}
    )
    assert response.status_code == 201, response.text
    return response.json()


async def run_battle(client: httpx.AsyncClient, photo: bytes) -> tuple[str, list[tuple[str, dict]]]:
    created = await start_battle(client, photo)
    events = await client.get(created["events_url"])
    assert events.headers["content-type"].startswith("text/event-stream")
    return created["battle_id"], parse_sse(events.text)


class TestCreateBattle:
    async def test_returns_id_and_events_url(self, client, photo_bytes):
        created = await start_battle(client, photo_bytes)
        assert len(created["battle_id"]) == 32
        assert created["events_url"] == f"/api/battles/{created['battle_id']}/events"

    async def test_draws_two_distinct_contenders(self, client, app, photo_bytes):
        await start_battle(client, photo_bytes)
        with app.state.services.database.sessions() as session:
            battle = session.scalars(select(Battle)).one()
            assert {battle.model_a, battle.model_b} == {"model-one", "model-two"}
            assert battle.status == "pending"
            assert battle.language == "en"

    async def test_same_photo_is_stored_once(self, client, app, photo_bytes):
        await start_battle(client, photo_bytes)
        await start_battle(client, photo_bytes)
        stored = list(app.state.settings.image_dir.rglob("*.jpg"))
        assert len(stored) == 1

    async def test_rejects_missing_prompt(self, client, photo_bytes):
        response = await client.post("/api/battles", files={"image": ("p.jpg", photo_bytes, "image/jpeg")})
        assert response.status_code == 422
        assert response.json()["error"] == "missing_prompt"

    async def test_rejects_missing_image(self, client):
        response = await client.post("/api/battles", data={"prompt": "Where is this?"})
        assert response.status_code == 422
        assert response.json() == {"error": "missing_image", "message": "Attach a photo in the `image` field."}

    async def test_rejects_pdf_and_stores_nothing(self, client, app):
        response = await client.post(
            "/api/battles",
            files={"image": ("photo.jpg", b"%PDF-1.7\n" + b"0" * 100, "image/jpeg")},
            data={"prompt": "Where is this?"},
        )
        assert response.status_code == 415
        assert "JPEG" in response.json()["message"]
        with app.state.services.database.sessions() as session:
            assert session.scalars(select(Battle)).first() is None
        assert not list(app.state.settings.image_dir.rglob("*.jpg"))

    async def test_rejects_oversized_upload_before_reading_it(self, client, app):
        too_big = b"\xff\xd8" + b"0" * (app.state.settings.max_upload_bytes + 100_000)
        response = await client.post(
            "/api/battles", files={"image": ("big.jpg", too_big, "image/jpeg")}, data={"prompt": "Where?"}
        )
        assert response.status_code == 413
        assert response.json()["error"] == "file_too_large"


class TestBattleEvents:
    async def test_streams_both_sides_then_ready(self, client, app, photo_bytes):
        battle_id, events = await run_battle(client, photo_bytes)
        names = [name for name, _ in events]
        assert names[-2:] == ["ready", "end"]
        assert events[-1][1] == {"status": "ready"}
        done = {data["side"]: data for name, data in events if name == "done"}
        assert set(done) == {"a", "b"}
        assert "<strong>Paris, France</strong>" in done["a"]["html"]
        deltas = [data for name, data in events if name == "delta"]
        assert {d["side"] for d in deltas} == {"a", "b"}
        with app.state.services.database.sessions() as session:
            battle = session.get(Battle, battle_id)
            assert battle.status == "ready"
            responses = session.scalars(select(Response).where(Response.battle_id == battle_id)).all()
            assert {r.status for r in responses} == {"done"}
            assert all("Paris" in r.text for r in responses)
            assert all(r.input_tokens == 812 and r.output_tokens == 57 for r in responses)
            assert all(r.latency_ms is not None for r in responses)
            # style counts of the final answer are stored for the rating job
            assert all(r.style["gps_count"] == 1 and r.style["header_count"]["h2"] == 1 for r in responses)
            assert all(r.style["list_count"]["unordered"] == 2 for r in responses)

    async def test_contenders_see_the_prompt_and_clean_image(self, client, openai_server, photo_bytes):
        _, server = openai_server
        before = len(server.requests)
        await run_battle(client, photo_bytes)
        requests = server.requests[before:]
        assert len(requests) == 2
        for body in requests:
            parts = body["messages"][-1]["content"]
            assert parts[0] == {"type": "text", "text": "Where was this taken?"}
            assert parts[1]["image_url"]["url"].startswith("data:image/jpeg;base64,")
            assert body["stream"] is True

    async def test_second_stream_replays_without_running_again(self, client, openai_server, photo_bytes):
        _, server = openai_server
        battle_id, first = await run_battle(client, photo_bytes)
        calls = len(server.requests)
        again = parse_sse((await client.get(f"/api/battles/{battle_id}/events")).text)
        assert len(server.requests) == calls
        assert [n for n, _ in again][-2:] == ["ready", "end"]
        final = {d["side"]: d["html"] for n, d in first if n == "done"}
        assert {d["side"]: d["html"] for n, d in again if n == "done"} == final

    async def test_concurrent_streams_run_contenders_once(self, client, openai_server, photo_bytes):
        _, server = openai_server
        created = await start_battle(client, photo_bytes)
        before = len(server.requests)
        first, second = await asyncio.gather(client.get(created["events_url"]), client.get(created["events_url"]))
        assert len(server.requests) - before == 2  # one call per side, not four
        for body in (first.text, second.text):
            assert parse_sse(body)[-1] == ("end", {"status": "ready"})

    async def test_unknown_battle_is_404(self, client):
        response = await client.get("/api/battles/" + "0" * 32 + "/events")
        assert response.status_code == 404
        assert response.json()["error"] == "battle_not_found"


class TestVote:
    async def test_vote_reveals_names_and_is_stored_hashed(self, client, app, photo_bytes):
        battle_id, _ = await run_battle(client, photo_bytes)
        response = await client.post(f"/api/battles/{battle_id}/vote", json={"choice": "a"})
        assert response.status_code == 200, response.text
        reveal = response.json()
        assert {reveal["model_a"], reveal["model_b"]} == {"model-one", "model-two"}
        assert reveal["choice"] == "a"
        with app.state.services.database.sessions() as session:
            vote = session.scalars(select(Vote)).one()
            assert vote.choice == "a"
            assert len(vote.voter_hash) == 64 and "127.0.0.1" not in vote.voter_hash
            assert session.get(Battle, battle_id).status == "voted"

    async def test_second_vote_is_409(self, client, photo_bytes):
        battle_id, _ = await run_battle(client, photo_bytes)
        assert (await client.post(f"/api/battles/{battle_id}/vote", json={"choice": "tie"})).status_code == 200
        again = await client.post(f"/api/battles/{battle_id}/vote", json={"choice": "b"})
        assert again.status_code == 409
        assert again.json()["error"] == "already_voted"

    async def test_concurrent_votes_store_exactly_one(self, client, app, photo_bytes):
        battle_id, _ = await run_battle(client, photo_bytes)
        url = f"/api/battles/{battle_id}/vote"
        results = await asyncio.gather(*(client.post(url, json={"choice": c}) for c in ("a", "b", "tie", "both_bad")))
        statuses = sorted(r.status_code for r in results)
        assert statuses == [200, 409, 409, 409]
        with app.state.services.database.sessions() as session:
            assert len(session.scalars(select(Vote)).all()) == 1

    async def test_vote_before_ready_is_409(self, client, photo_bytes):
        created = await start_battle(client, photo_bytes)
        response = await client.post(f"/api/battles/{created['battle_id']}/vote", json={"choice": "a"})
        assert response.status_code == 409
        assert response.json()["error"] == "not_ready"

    async def test_bad_choice_is_422_with_reason(self, client, photo_bytes):
        battle_id, _ = await run_battle(client, photo_bytes)
        response = await client.post(f"/api/battles/{battle_id}/vote", json={"choice": "c"})
        assert response.status_code == 422
        assert "choice" in response.json()["message"]

    async def test_unknown_battle_is_404(self, client):
        response = await client.post("/api/battles/" + "f" * 32 + "/vote", json={"choice": "a"})
        assert response.status_code == 404


class TestGatekeeper:
    async def test_non_geographic_prompt_is_refused_and_only_counted(self, client, app, photo_bytes):
        response = await client.post(
            "/api/battles",
            files={"image": ("p.jpg", photo_bytes, "image/jpeg")},
            data={"prompt": "What breed is this dog?"},
        )
        assert response.status_code == 422
        body = response.json()
        assert body["error"] == "not_geographic"
        assert "questions about the place in your photo" in body["message"]
        assert response.headers["content-language"] == "en"  # the refusal's language, for the page
        with app.state.services.database.sessions() as session:
            assert session.scalars(select(Battle)).first() is None
            counters = {r.reason: r.count for r in session.scalars(select(GatekeeperRejection))}
        assert sum(counters.values()) == 1
        assert not list(app.state.settings.image_dir.rglob("*.jpg"))

    async def test_an_unsure_prompt_runs_and_is_tagged(self, client, app, photo_bytes):
        from arena.gatekeeper import Gatekeeper

        taken = await start_battle(client, photo_bytes)
        # every geographic prompt falls between these lines: the battle runs, tagged unsure
        gatekeeper = Gatekeeper(threshold=0.001, sure=0.999999)
        await gatekeeper.warm()
        app.state.services.gatekeeper = gatekeeper
        unsure = await start_battle(client, photo_bytes, "ok where is this lol")
        with app.state.services.database.sessions() as session:
            tags = {b.id: (b.unsure, b.recheck, b.flags) for b in session.scalars(select(Battle))}
        assert tags == {taken["battle_id"]: (False, None, []), unsure["battle_id"]: (True, None, [])}


class TestIdentityLeak:
    @pytest.fixture
    def settings(self, tmp_path, database_url, openai_server):
        from tests.battles.test_failures import arena_settings

        return arena_settings(tmp_path, database_url, openai_server[0], {"honest": "echo-h", "leaky": "leaky"})

    async def test_a_leaky_answer_flags_the_battle_but_the_vote_is_taken(self, client, app, photo_bytes):
        battle_id, events = await run_battle(client, photo_bytes)
        assert events[-1] == ("end", {"status": "ready"})
        vote = await client.post(f"/api/battles/{battle_id}/vote", json={"choice": "b"})
        assert vote.status_code == 200
        with app.state.services.database.sessions() as session:
            assert session.get(Battle, battle_id).flags[0] == "identity_leak"  # (too_fast too: a test votes at once)


class TestReplicas:
    async def test_a_battle_created_on_one_replica_streams_and_is_voted_on_another(self, settings, photo_bytes):
        from arena.app import create_app

        first, second = create_app(settings), create_app(settings)  # same database and image store
        async with first.router.lifespan_context(first), second.router.lifespan_context(second):
            async with (
                httpx.AsyncClient(transport=httpx.ASGITransport(app=first), base_url="http://one") as one,
                httpx.AsyncClient(transport=httpx.ASGITransport(app=second), base_url="http://two") as two,
            ):
                created = await start_battle(one, photo_bytes)
                events = parse_sse((await two.get(created["events_url"])).text)
                assert events[-1] == ("end", {"status": "ready"})
                replay = parse_sse((await one.get(created["events_url"])).text)
                assert [n for n, _ in replay][-2:] == ["ready", "end"]
                # the same browser (its voter cookie) votes through the other replica
                cookie = {"Cookie": f"arena_voter={one.cookies.get('arena_voter')}"}
                vote = await two.post(
                    f"/api/battles/{created['battle_id']}/vote", json={"choice": "tie"}, headers=cookie
                )
                assert vote.status_code == 200
                again = await one.post(f"/api/battles/{created['battle_id']}/vote", json={"choice": "a"})
                assert again.status_code == 409


class TestRateLimit:
    @pytest.fixture
    def settings(self, settings):
        return settings.model_copy(update={"battles_per_minute": 2})

    async def test_third_battle_in_a_minute_from_one_address_is_429(self, client, app, photo_bytes):
        await start_battle(client, photo_bytes)
        await start_battle(client, photo_bytes)
        refused = await client.post(
            "/api/battles", files={"image": ("p.jpg", photo_bytes, "image/jpeg")}, data={"prompt": "Where?"}
        )
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == "60"
        assert refused.json()["error"] == "rate_limited" and "2 photos in the last minute" in refused.json()["message"]
        with app.state.services.database.sessions() as session:
            hashes = {b.ip_hash for b in session.scalars(select(Battle))}
        assert len(hashes) == 1 and "127.0.0.1" not in hashes.pop()


class TestChunkedUpload:
    @pytest.fixture
    def settings(self, settings):
        return settings.model_copy(update={"max_upload_bytes": 256 * 1024})

    async def test_upload_without_content_length_is_cut_off_at_the_limit(self, client, app):
        limit = app.state.settings.max_upload_bytes
        boundary = "arena-test-boundary"
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="prompt"\r\n\r\nWhere?\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="image"; filename="big.jpg"\r\n'
            "Content-Type: image/jpeg\r\n\r\n"
        ).encode()
        sent = 0

        async def body():  # no length known up front: httpx sends it chunked
            nonlocal sent
            for chunk in [head, b"\xff\xd8"] + [b"0" * 65536] * (20 * limit // 65536):
                sent += len(chunk)
                yield chunk
            yield f"\r\n--{boundary}--\r\n".encode()

        response = await client.post(
            "/api/battles", content=body(), headers={"Content-Type": f"multipart/form-data; boundary={boundary}"}
        )
        assert response.status_code == 413
        assert response.json()["error"] == "file_too_large"
        assert sent < 2 * limit  # the server stopped reading instead of spooling all 20x the limit


class TestSamePhotoAtOnce:
    def test_two_replicas_storing_the_same_photo_both_succeed(self, database_url):
        """Content addressing makes a double submit (or a popular photo) write
        the same image row from two replicas at once; neither may fail."""
        import threading
        import time

        from arena.battles import repository
        from arena.db.session import make_engine, make_sessionmaker

        engine = make_engine(database_url)
        sessions = make_sessionmaker(engine)
        sha = "c" * 64
        errors: list[Exception] = []

        def second() -> None:
            try:
                with sessions.begin() as session:
                    repository.save_image(session, sha, 4, 3, 100)
            except Exception as exc:  # noqa: BLE001 - the assertion below shows it
                errors.append(exc)

        try:
            with sessions() as first:
                repository.save_image(first, sha, 4, 3, 100)  # written, not yet committed
                thread = threading.Thread(target=second)
                thread.start()
                time.sleep(0.5)  # the second now waits on the first one's row
                first.commit()
            thread.join(30)
            assert not errors, errors
            with sessions() as session:
                assert session.get(Image, sha) is not None
        finally:
            engine.dispose()


class TestRejectionCounter:
    def test_concurrent_first_rejections_are_all_counted(self, database_url):
        """The first two rejections for a reason, on two replicas at once: both
        requests succeed and both are counted."""
        import threading
        import time

        from arena.battles import repository
        from arena.db.session import make_engine, make_sessionmaker

        engine = make_engine(database_url)
        sessions = make_sessionmaker(engine)
        errors: list[Exception] = []

        def second() -> None:
            try:
                with sessions.begin() as session:
                    repository.count_rejection(session, "offline")
            except Exception as exc:  # noqa: BLE001 - the assertion below shows it
                errors.append(exc)

        try:
            with sessions() as first:
                repository.count_rejection(first, "offline")
                first.flush()
                thread = threading.Thread(target=second)
                thread.start()
                time.sleep(0.5)  # the second now waits on the first one's row
                first.commit()
            thread.join(30)
            assert not errors, errors
            with sessions() as session:
                assert session.get(GatekeeperRejection, "offline").count == 2
        finally:
            engine.dispose()


class TestSlowUpload:
    async def test_no_database_connection_is_held_while_the_body_arrives(self, client, app, photo_bytes):
        """A slow upload (a phone on a bad network, or a deliberate trickle) must
        not keep a pooled connection idle in a transaction: a few dozen of them
        would starve every other request of the database."""
        boundary = "arena-test-boundary"
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="prompt"\r\n\r\nWhere was this taken?\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="image"; filename="p.jpg"\r\n'
            "Content-Type: image/jpeg\r\n\r\n"
        ).encode()
        halfway, resume = asyncio.Event(), asyncio.Event()

        async def body():
            yield head + photo_bytes[:1000]
            halfway.set()
            await resume.wait()
            yield photo_bytes[1000:] + f"\r\n--{boundary}--\r\n".encode()

        request = asyncio.create_task(
            client.post(
                "/api/battles", content=body(), headers={"Content-Type": f"multipart/form-data; boundary={boundary}"}
            )
        )
        await asyncio.wait_for(halfway.wait(), 10)
        await asyncio.sleep(0.1)
        held = app.state.services.database.engine.pool.checkedout()
        resume.set()
        response = await request
        assert response.status_code == 201, response.text
        assert held == 0
