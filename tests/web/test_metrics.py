"""`/metrics`: Prometheus' text format, parsed with the official client's
parser, after real battles, votes and refusals through the app."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import write_pool
from tests.ratings.test_background import vote_once

ADMIN = {"Authorization": "Bearer test-admin-token-0123456789"}


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def scrape(client) -> dict:  # type: ignore[no-untyped-def]
    response = await client.get("/metrics", headers=ADMIN)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    return samples(response.text)


async def test_battles_votes_and_refusals_are_counted(client, photo_bytes):
    before = await scrape(client)

    def delta(after: dict, name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    await vote_once(client, photo_bytes, "a")
    await vote_once(client, photo_bytes, "tie")
    refused = await client.post(
        "/api/battles",
        files={"image": ("p.jpg", photo_bytes, "image/jpeg")},
        data={"prompt": "What breed is this dog?"},
    )
    assert refused.status_code == 422
    after = await scrape(client)
    for contender in ("model-one", "model-two"):
        assert delta(after, "arena_battles_started_total", contender=contender) == 2
        assert delta(after, "arena_battle_sides_finished_total", contender=contender, outcome="done") == 2
        assert delta(after, "arena_battle_sides_finished_total", contender=contender, outcome="failed") == 0
    assert delta(after, "arena_votes_total", choice="a") == 1
    assert delta(after, "arena_votes_total", choice="tie") == 1
    assert delta(after, "arena_votes_total", choice="b") == 0
    assert delta(after, "arena_gatekeeper_refusals_total", classifier="offline") == 1


async def test_behind_the_admin_token_by_default(client):
    anonymous = await client.get("/metrics")
    assert anonymous.status_code == 401 and anonymous.json()["error"] == "unauthorised"
    wrong = await client.get("/metrics", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401


class TestPublic:
    @pytest.fixture
    def settings(self, settings):
        return settings.model_copy(update={"metrics": "public"})

    async def test_anyone_may_scrape(self, client):
        response = await client.get("/metrics")
        assert response.status_code == 200 and "arena_votes_total" in response.text


class TestOff:
    @pytest.fixture
    def settings(self, settings):
        return settings.model_copy(update={"metrics": "off"})

    async def test_not_served(self, client):
        response = await client.get("/metrics", headers=ADMIN)
        assert response.status_code == 404 and response.json()["error"] == "not_found"


class TestFailedBattles:
    @pytest.fixture
    def settings(self, settings, openai_server):
        base_url, _ = openai_server
        write_pool(settings.config, base_url, {"model-one": "echo-one", "model-two": "error-500"})
        return settings

    async def test_a_failed_side_fails_the_battle_for_both_contenders(self, client, photo_bytes):
        before = await scrape(client)
        created = await client.post(
            "/api/battles", files={"image": ("p.jpg", photo_bytes, "image/jpeg")}, data={"prompt": "Where is this?"}
        )
        events = await client.get(created.json()["events_url"])
        assert '"status": "failed"' in events.text or '"status":"failed"' in events.text, events.text[-300:]
        after = await scrape(client)
        for contender in ("model-one", "model-two"):
            key = ("arena_battles_finished_total", (("contender", contender), ("outcome", "failed")))
            assert after.get(key, 0) - before.get(key, 0) == 1
        latency = ("arena_contender_latency_seconds_count", (("contender", "model-one"),))
        assert after.get(latency, 0) - before.get(latency, 0) == 1  # only answers that finished are timed
        failed = ("arena_contender_latency_seconds_count", (("contender", "model-two"),))
        assert after.get(failed, 0) - before.get(failed, 0) == 0
