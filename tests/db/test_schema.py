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
            session.add(
                Response(
                    battle_id=battle.id,
                    side="a",
                    contender="x",
                    trajectory=[{"tool": "crop", "args": {"box": [0, 0, 0.5, 0.5]}}],
                )
            )
        with sessions() as session:
            assert session.get(Battle, "b" * 32).flags == ["identity_leak"]
            response = session.query(Response).one()
            assert response.trajectory[0]["args"]["box"] == [0, 0, 0.5, 0.5]


class TestConcurrentUpgrade:
    def test_replicas_starting_together_wait_for_each_other(self, tmp_path):
        """N replicas run `arena db upgrade` at once on a fresh PostgreSQL: the
        later ones wait for the first, then find the schema at head."""
        import subprocess
        import sys
        import time
        import uuid

        import psycopg
        from alembic import command
        from sqlalchemy import text
        from sqlalchemy.engine import make_url

        from arena.db.migrate import alembic_config
        from tests.conftest import POSTGRES_ADMIN_URL

        admin = make_url(POSTGRES_ADMIN_URL)
        dsn = admin.set(drivername="postgresql").render_as_string(hide_password=False)
        name = f"geoarena_race_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        url = admin.set(database=name).render_as_string(hide_password=False)
        engine = make_engine(url)
        try:
            with engine.connect() as conn, conn.begin():
                # the first replica, mid-migration: its transaction is still open
                config = alembic_config(url)
                config.attributes["connection"] = conn
                command.upgrade(config, "head")
                second = subprocess.Popen(
                    [sys.executable, "-c", f"from arena.db.migrate import upgrade; upgrade({url!r})"],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                deadline = time.monotonic() + 30
                with psycopg.connect(dsn, autocommit=True) as watch:
                    while time.monotonic() < deadline:  # until the second one waits on a lock
                        waiting = watch.execute(
                            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'",
                            (name,),
                        ).fetchone()[0]
                        if waiting:
                            break
                        assert second.poll() is None, second.communicate()[1][-2000:]
                        time.sleep(0.05)
            _, stderr = second.communicate(timeout=60)
            assert second.returncode == 0, stderr[-2000:]
            with engine.connect() as conn:
                assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
        finally:
            engine.dispose()
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
