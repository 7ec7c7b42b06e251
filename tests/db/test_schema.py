"""The schema as Alembic builds it, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect
from sqlalchemy.exc import IntegrityError

from arena.db.session import make_engine, make_sessionmaker
from arena.db.tables import Base, Battle, Image, Response, Vote


@pytest.fixture
def sessions(database_url):
    engine = make_engine(database_url)
    yield make_sessionmaker(engine)
    engine.dispose()


def add_battle(session, battle_id="b" * 32) -> Battle:
    session.add(Image(sha256="e" * 64, width=10, height=10, size_bytes=100))
    session.flush()  # no relationship orders the image before the battle
    battle = Battle(id=battle_id, prompt="Where?", image_sha256="e" * 64, model_a="x", model_b="y")
    session.add(battle)
    session.flush()
    return battle


class TestMigrations:
    def test_migrations_match_the_tables(self, database_url):
        engine = make_engine(database_url)
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        engine.dispose()
        assert diff == [], "the tables changed without a migration: run `alembic revision --autogenerate`"

    def test_every_table_exists(self, database_url):
        engine = make_engine(database_url)
        names = set(inspect(engine).get_table_names())
        engine.dispose()
        assert {"images", "battles", "responses", "votes", "leaderboard_snapshots", "alembic_version"} <= names


class TestConstraints:
    def test_one_vote_per_battle_is_enforced_by_the_database(self, sessions):
        with sessions.begin() as session:
            add_battle(session)
            session.add(Vote(battle_id="b" * 32, choice="a", voter_hash="h"))
        with pytest.raises(IntegrityError), sessions.begin() as session:
            session.add(Vote(battle_id="b" * 32, choice="b", voter_hash="h2"))

    def test_vote_choice_is_checked(self, sessions):
        with sessions.begin() as session:
            add_battle(session)
        with pytest.raises(IntegrityError), sessions.begin() as session:
            session.add(Vote(battle_id="b" * 32, choice="maybe", voter_hash="h"))

    def test_one_response_per_side(self, sessions):
        with sessions.begin() as session:
            add_battle(session)
            session.add(Response(battle_id="b" * 32, side="a", contender="x"))
        with pytest.raises(IntegrityError), sessions.begin() as session:
            session.add(Response(battle_id="b" * 32, side="a", contender="y"))

    def test_a_contender_cannot_battle_itself(self, sessions):
        with pytest.raises(IntegrityError), sessions.begin() as session:
            session.add(Image(sha256="e" * 64, width=1, height=1, size_bytes=1))
            session.flush()
            session.add(Battle(prompt="p", image_sha256="e" * 64, model_a="x", model_b="x"))

    def test_json_columns_round_trip(self, sessions):
        with sessions.begin() as session:
            battle = add_battle(session)
            battle.flags = ["identity_leak"]
            session.add(Response(battle_id=battle.id, side="a", contender="x",
                                 trajectory=[{"tool": "crop", "args": {"box": [0, 0, 0.5, 0.5]}}]))
        with sessions() as session:
            assert session.get(Battle, "b" * 32).flags == ["identity_leak"]
            response = session.query(Response).one()
            assert response.trajectory[0]["args"]["box"] == [0, 0, 0.5, 0.5]
