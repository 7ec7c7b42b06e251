"""Outage cool-downs in memory and in the database (shared by replicas), by the same rules."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import select

from arena.db.session import make_engine, make_sessionmaker
from arena.db.tables import ContenderHealth
from arena.pool.cooldowns import Cooldowns, MemoryCooldowns, Outage, SharedCooldowns
from tests.battles.replicas import empty_database

OUTAGE = Outage(threshold=3, seconds=300)


@pytest.fixture
def replicas(database_url: str) -> Iterator[tuple[SharedCooldowns, SharedCooldowns]]:
    """Two books on one database, each with its own engine, as two replicas have."""
    engines = [make_engine(database_url), make_engine(database_url)]
    yield SharedCooldowns(make_sessionmaker(engines[0])), SharedCooldowns(make_sessionmaker(engines[1]))
    for engine in engines:
        engine.dispose()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def book(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cooldowns]:
    if request.param == "memory":
        yield MemoryCooldowns()
        return
    if request.param == "sqlite":
        shutil.copy(request.getfixturevalue("sqlite_template"), tmp_path / "arena.db")
        url = f"sqlite:///{tmp_path / 'arena.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
        empty_database(url)
    engine = make_engine(url)
    yield SharedCooldowns(make_sessionmaker(engine))
    engine.dispose()


class TestRules:
    def test_threshold_failures_in_a_row_start_a_cooldown(self, book: Cooldowns) -> None:
        for _ in range(2):
            book.record("c", False, 1000.0, OUTAGE)
        assert book.cooling(1000.0) == {}
        book.record("c", False, 1000.0, OUTAGE)
        assert book.cooling(1000.0) == {"c": 1300.0}
        assert book.cooling(1300.0) == {}  # over when its time is up

    def test_a_success_resets_the_streak(self, book: Cooldowns) -> None:
        book.record("c", False, 0.0, OUTAGE)
        book.record("c", False, 0.0, OUTAGE)
        book.record("c", True, 0.0, OUTAGE)
        book.record("c", False, 0.0, OUTAGE)
        assert book.cooling(0.0) == {}

    def test_after_a_cooldown_it_gets_a_full_set_of_chances(self, book: Cooldowns) -> None:
        for _ in range(3):
            book.record("c", False, 0.0, OUTAGE)
        book.record("c", False, 400.0, OUTAGE)
        assert book.cooling(400.0) == {}

    def test_a_threshold_of_one_cools_at_the_first_failure(self, book: Cooldowns) -> None:
        book.record("c", False, 0.0, Outage(threshold=1, seconds=60))
        assert book.cooling(1.0) == {"c": 60.0}


class TestShared:
    def test_failures_on_two_replicas_add_up(self, replicas: tuple[SharedCooldowns, SharedCooldowns]) -> None:
        one, two = replicas
        one.record("c", False, 0.0, OUTAGE)
        two.record("c", False, 0.0, OUTAGE)
        assert two.cooling(0.0) == {} == one.cooling(0.0)
        one.record("c", False, 0.0, OUTAGE)
        assert two.cooling(0.0) == {"c": 300.0}

    def test_failures_reported_at_once_are_all_counted(
        self, replicas: tuple[SharedCooldowns, SharedCooldowns], database_url: str
    ) -> None:
        one, two = replicas
        many = Outage(threshold=1000, seconds=300)
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: (one, two)[i % 2].record("c", False, 0.0, many), range(40)))
        with one.sessions() as session:
            assert session.scalar(select(ContenderHealth.failures).where(ContenderHealth.contender == "c")) == 40
