"""`/metrics`: Prometheus' text format, parsed with the official client's
parser, after real battles, votes and refusals through the app."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

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
