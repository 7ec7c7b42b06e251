"""Expert re-votes: reviewer links from the command line, the `/review` page
and its form served by the real app, stats from the command and the admin
API; real SQLite and PostgreSQL."""

from __future__ import annotations

import json
import re

import pytest
from sqlalchemy import select

from arena.cli import main
from arena.db.session import make_engine, make_sessionmaker
from arena.db.tables import Review, Vote
from tests.judge.seed import seed

TICKET = re.compile(r'name="ticket" value="([^"]+)"')


@pytest.fixture
async def seeded(settings, monkeypatch):
    monkeypatch.setenv("ARENA_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("ARENA_DATA_DIR", str(settings.data_dir))
    engine = make_engine(settings.database_url)
    maker = make_sessionmaker(engine)
    with maker() as session:
        ids = seed(session, settings.data_dir)
    yield maker, ids
    engine.dispose()


def add_reviewer(name: str, capsys) -> str:
    assert main(["reviewers", "add", name, "--base-url", "https://arena.example"]) == 0
    link = capsys.readouterr().out.splitlines()[0]
    assert link.startswith("https://arena.example/review?token=")
    return link.split("token=", 1)[1]


async def review_all(client, token: str, pick) -> int:
    """Re-vote every battle offered; `pick(battle_sides_crowd, swapped) -> button`."""
    done = 0
    while True:
        page = await client.get("/review", params={"token": token})
        assert page.status_code == 200
        found = TICKET.search(page.text)
        if found is None:
            assert "Nothing left to review" in page.text
            return done
        ticket = found.group(1)
        battle_id, swapped = ticket.split(".")[0], ticket.split(".")[1] == "1"
        answer = await client.post(
            "/review", data={"token": token, "ticket": ticket, "choice": pick(battle_id, swapped)}
        )
        assert answer.status_code == 303 and answer.headers["location"].startswith("/review?token=")
        done += 1


class TestReviewPage:
    async def test_anonymised_reshuffled_one_review_each(self, client, seeded, capsys):
        maker, _ = seeded
        token = add_reviewer("alice", capsys)
        page = await client.get("/review", params={"token": token})
        assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
        assert "geo-large" not in page.text and "geo-small" not in page.text  # no names
        assert "Answer 1" in page.text and "Answer 2" in page.text and "5 battles left" in page.text
        ticket = TICKET.search(page.text).group(1)
        battle_id, swapped = ticket.split(".")[0], ticket.split(".")[1] == "1"
        first = await client.post("/review", data={"token": token, "ticket": ticket, "choice": "first"})
        assert first.status_code == 303
        with maker() as session:
            review = session.scalars(select(Review)).one()
        # "Answer 1" was side b when the page swapped them
        assert review.battle_id == battle_id and review.choice == ("b" if swapped else "a")
        assert review.swapped is swapped
        again = await client.post("/review", data={"token": token, "ticket": ticket, "choice": "tie"})
        assert again.status_code == 409 and "already reviewed" in again.text

    async def test_bad_tokens_and_tickets(self, client, seeded, capsys):
        _ = seeded
        token = add_reviewer("bob", capsys)
        other = add_reviewer("carol", capsys)
        assert (await client.get("/review", params={"token": "nope"})).status_code == 403
        page = await client.get("/review", params={"token": token})
        ticket = TICKET.search(page.text).group(1)
        forged = ticket[:-1] + ("0" if ticket[-1] != "0" else "1")
        for data, status in (
            ({"token": token, "ticket": forged, "choice": "first"}, 422),
            ({"token": other, "ticket": ticket, "choice": "first"}, 422),  # signed for bob
            ({"token": token, "ticket": ticket, "choice": "maybe"}, 422),
            ({"token": "nope", "ticket": ticket, "choice": "first"}, 403),
        ):
            assert (await client.post("/review", data=data)).status_code == status
        assert main(["reviewers", "revoke", "bob"]) == 0
        assert (await client.get("/review", params={"token": token})).status_code == 403
        assert main(["reviewers", "add", "carol"]) == 1
        assert "already has a link" in capsys.readouterr().err

    async def test_stats_from_the_command_and_the_admin_api(self, client, seeded, capsys):
        maker, _ = seeded
        with maker() as session:
            crowd = {v.battle_id: v.choice for v in session.scalars(select(Vote))}

        def agree(battle_id: str, swapped: bool) -> str:  # the crowd's choice, in the shown order
            choice = crowd[battle_id]
            if choice in ("tie", "both_bad"):
                return choice
            return "first" if (choice == "a") != swapped else "second"

        def always_tie(battle_id: str, swapped: bool) -> str:
            return "tie"

        assert await review_all(client, add_reviewer("dana", capsys), agree) == 5
        assert await review_all(client, add_reviewer("eve", capsys), always_tie) == 5
        assert main(["review", "stats", "--json"]) == 0
        stats = json.loads(capsys.readouterr().out)
        assert stats["reviews"] == 10 and stats["battles_reviewed"] == 5
        crowd_agreement = stats["expert_crowd"]
        assert crowd_agreement["agreement"]["k"] == 6 and crowd_agreement["agreement"]["n"] == 10  # 5 + the tie
        assert crowd_agreement["by_class"]["tie"]["rate"] == 1.0 and crowd_agreement["by_class"]["a"]["rate"] == 0.5
        experts = stats["expert_expert"]
        assert experts["pairs"] == 5 and experts["agreement"]["k"] == 1
        assert 0 < experts["agreement"]["ci_high"] < 1
        assert main(["review", "stats"]) == 0
        assert "expert vs crowd: 60.0%" in capsys.readouterr().out

        assert (await client.get("/api/admin/reviews/stats")).status_code == 401
        api = await client.get(
            "/api/admin/reviews/stats", headers={"Authorization": "Bearer test-admin-token-0123456789"}
        )
        assert api.status_code == 200 and api.json()["expert_crowd"] == crowd_agreement
        assert (await client.get("/review", params={"token": "x" * 500})).status_code == 403
