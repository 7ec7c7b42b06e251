"""The anonymity audit on stored answers: distinct styles are recognised and
warned about, look-alike answers are not; the figure reaches the snapshot
for the admin only."""

from __future__ import annotations

import json
import random

import pytest

from arena.audit.anonymity import Sample, audit, visible_trajectory
from arena.cli import main
from arena.db.session import make_engine, make_sessionmaker
from arena.db.tables import Response
from arena.ratings.job import rank_database
from arena.ratings.leaderboard import RankOptions
from tests.export.seed import add_voted_battle

PLACES = ["Paris", "Lyon", "Osaka", "Lima", "Quito", "Hanoi", "Oslo", "Cairo", "Perth", "Lagos"]


def terse(rng: random.Random) -> str:
    return f"{rng.choice(PLACES)}."


def verbose(rng: random.Random) -> str:
    place = rng.choice(PLACES)
    return f"## Answer\n\n**{place}** is my best guess.\n\n- the signs\n- the road markings\n\nConfidence: moderate."


def plain(rng: random.Random) -> str:
    words = rng.sample(PLACES, 4)
    return f"It could be {words[0]} or {words[1]}, maybe {words[2]}; {words[3]} is less likely."


class TestAudit:
    def test_distinct_styles_are_recognised_and_warned_about(self):
        rng = random.Random(1)
        samples = [Sample("terse", terse(rng), "") for _ in range(20)]
        samples += [Sample("verbose", verbose(rng), "") for _ in range(20)]
        samples += [Sample("plain", plain(rng), "") for _ in range(20)]
        report = audit(samples)
        rows = {r["contender"]: r for r in report["answers"]["contenders"]}
        assert report["answers"]["chance"] == pytest.approx(1 / 3, abs=1e-3)
        assert all(r["accuracy"] >= 0.9 and r["warning"] for r in rows.values())
        assert len(report["warnings"]) == 3 and report["trajectories"] is None

    def test_look_alike_answers_stay_near_chance(self):
        rng = random.Random(2)
        samples = [Sample(name, plain(rng), "") for _ in range(40) for name in ("one", "two")]
        report = audit(samples)
        assert report["answers"]["accuracy"] < 0.7
        assert report["warnings"] == []

    def test_trajectories_are_audited_from_what_voters_see(self):
        steps_a = [{"tool": "crop", "args": {"box": [0, 0, 1, 1]}, "thought": "look at the sign", "observation": "ok"}]
        steps_b = [{"tool": "web_search", "args": {"query": "red bus"}, "thought": "search it", "observation": "r"}]
        samples = [Sample("a+gate", "Paris.", visible_trajectory(steps_a)) for _ in range(10)]
        samples += [Sample("b+gate", "Paris.", visible_trajectory(steps_b)) for _ in range(10)]
        report = audit(samples)
        assert report["trajectories"]["accuracy"] == 1.0
        assert report["answers"]["accuracy"] <= 0.7  # the same final answers
        assert "crop" in visible_trajectory(steps_a) and "look at the sign" in visible_trajectory(steps_a)

    def test_too_few_answers_is_said_not_guessed(self):
        assert audit([Sample("one", "x", ""), Sample("two", "y", "")])["answers"] is None


class TestInTheArena:
    def seed(self, sessions) -> None:  # type: ignore[no-untyped-def]
        rng = random.Random(3)
        with sessions() as session:
            for minute in range(24):
                add_voted_battle(session, "geo-large", "geo-small", "a" if minute % 3 else "b", minute=minute)
            session.flush()
            for response in session.query(Response).all():
                response.text = verbose(rng) if response.contender == "geo-large" else terse(rng)
            session.commit()

    def test_cli_prints_json_and_warns(self, database_url, monkeypatch, capsys, tmp_path):
        sessions = make_sessionmaker(make_engine(database_url))
        self.seed(sessions)
        monkeypatch.setenv("ARENA_DATABASE_URL", database_url)
        monkeypatch.setenv("ARENA_CONFIG", str(tmp_path / "none.toml"))
        code = main(["audit", "anonymity", "--json"])
        report = json.loads(capsys.readouterr().out)
        assert code == 1 and report["answers"]["accuracy"] == 1.0 and len(report["warnings"]) == 2
        assert main(["audit", "anonymity"]) == 1
        text = capsys.readouterr().out
        assert "geo-large" in text and "WARNING" in text and "chance 50.0%" in text

    async def test_snapshot_keeps_it_for_the_admin_only(self, client, app):
        self.seed(app.state.services.database.sessions)
        snapshot = rank_database(app.state.services.database.sessions, RankOptions(rounds=2, style=False))
        assert snapshot["anonymity"]["answers"]["accuracy"] == 1.0
        public = (await client.get("/api/leaderboard")).json()
        assert "anonymity" not in public
        assert "anonymity" not in (await client.get("/leaderboard")).text.split('id="lb-data">')[1]
        assert (await client.get("/api/admin/anonymity")).status_code == 401
        admin = await client.get(
            "/api/admin/anonymity", headers={"Authorization": "Bearer test-admin-token-0123456789"}
        )
        assert admin.status_code == 200 and admin.json()["anonymity"]["answers"]["worst"]["accuracy"] == 1.0

    def test_a_recent_audit_is_carried_over_and_an_old_one_redone(self, database_url, monkeypatch):
        """The audit costs tens of CPU-seconds on real answers and the background ranker
        ranks every half minute: the newest snapshot's audit serves for `ANONYMITY_EVERY`."""
        from arena.audit import anonymity
        from arena.ratings import job

        sessions = make_sessionmaker(make_engine(database_url))
        self.seed(sessions)
        audits = []
        real = anonymity.audit
        monkeypatch.setattr(anonymity, "audit", lambda samples: audits.append(len(samples)) or real(samples))
        options = RankOptions(rounds=2, style=False)
        first = rank_database(sessions, options)
        second = rank_database(sessions, options)
        assert len(audits) == 1 and second["anonymity"] == first["anonymity"]
        assert first["anonymity"]["answers"]["accuracy"] == 1.0 and "audited_at" in first["anonymity"]
        job.attach_anonymity(sessions, third := {}, every=job.timedelta(0))
        assert len(audits) == 2 and third["anonymity"]["audited_at"] > first["anonymity"]["audited_at"]
