"""Ranking's copy of the votes gives what a full read gives, after every kind of change."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import delete, func, select, update

from arena.answers.style import style_features
from arena.db.session import make_engine, make_sessionmaker
from arena.db.tables import Battle, BattleLabel, DatabaseIdentity, Response, Vote, VoteChange
from arena.export import vote_copy
from arena.export.vote_copy import read_votes
from arena.export.vote_table import DatabaseVotes, read_vote_table
from tests.export.seed import add_voted_battle
from tests.export.test_vote_table import seed_varied


@pytest.fixture
def sessions(database_url):
    engine = make_engine(database_url)
    yield make_sessionmaker(engine)
    engine.dispose()


def assert_same_votes(got: DatabaseVotes, want: DatabaseVotes) -> None:
    assert got.table.equals(want.table), "the RANK_SCHEMA columns differ"
    assert got.vote_id.equals(want.vote_id) and got.battle_id.equals(want.battle_id)
    for side in "ab":
        for mine, theirs in zip(got.counts[side], want.counts[side], strict=True):
            np.testing.assert_array_equal(mine, theirs)


def read_both(sessions, folder: Path) -> vote_copy.Refresh:
    """A read through the copy, checked against a full read of the database as it is."""
    engine = sessions.kw["bind"]
    through_copy, refresh = read_votes(engine, folder)
    with sessions() as session:
        assert_same_votes(through_copy, read_vote_table(session))
    return refresh


def one_battle(sessions, minute: int) -> str:
    with sessions() as session:
        return session.scalars(select(Vote.battle_id).order_by(Vote.id).offset(minute).limit(1)).one()


class TestVoteCopy:
    def test_each_kind_of_change_reads_only_its_battle_again(self, sessions, tmp_path: Path):
        with sessions() as session:
            seed_varied(session)
        assert read_both(sessions, tmp_path) == vote_copy.Refresh(full=True, battles=0)
        assert list(tmp_path.glob("votes-*.arrow"))
        assert read_both(sessions, tmp_path) == vote_copy.Refresh(full=False, battles=0)

        first, second, third = (one_battle(sessions, i) for i in (0, 1, 2))
        changes = [
            # a new vote
            lambda s: add_voted_battle(s, "geo-large", "geo-small", "b", minute=200),
            # a battle flagged after its vote (as the voter screening does)
            lambda s: s.execute(update(Battle).where(Battle.id == first).values(flags=["outlier_voter"])),
            # an answer's counts and commitment written again
            lambda s: s.execute(
                update(Response)
                .where(Response.battle_id == second, Response.side == "a")
                .values(style=style_features("# One\n- two"), style_tokens=99, commitment={"level": "city"})
            ),
            # a location label given, then the vote taken back
            lambda s: s.add(BattleLabel(battle_id=third, lat=1.0, lon=2.0, precision_km=5.0, source="pin")),
            lambda s: s.execute(delete(Vote).where(Vote.battle_id == first)),
        ]
        for change in changes:
            with sessions() as session:
                change(session)
                session.commit()
            refresh = read_both(sessions, tmp_path)
            assert not refresh.full and refresh.battles >= 1

    def test_the_votes_of_a_battle_read_again_keep_their_place(self, sessions, tmp_path: Path):
        with sessions() as session:
            for minute in range(5):
                add_voted_battle(session, "geo-large", "geo-small", "a", minute=minute)
            session.commit()
        read_both(sessions, tmp_path)
        oldest = one_battle(sessions, 0)
        with sessions() as session:
            session.execute(update(Vote).where(Vote.battle_id == oldest).values(choice="tie"))
            session.commit()
        got, refresh = read_votes(sessions.kw["bind"], tmp_path)
        assert refresh == vote_copy.Refresh(full=False, battles=1)
        assert got.vote_id.to_pylist() == sorted(got.vote_id.to_pylist())
        assert got.table.column("winner").to_pylist()[0] == "tie"

    def test_a_change_the_log_never_saw_means_a_full_read(self, sessions, tmp_path: Path):
        with sessions() as session:
            seed_varied(session)
        read_both(sessions, tmp_path)
        with sessions() as session:
            session.execute(delete(Vote).where(Vote.battle_id == one_battle(sessions, 3)))
            session.execute(delete(VoteChange))  # as if the change had bypassed the triggers
            session.commit()
        assert read_both(sessions, tmp_path).full

    def test_a_copy_of_another_database_or_version_is_not_used(self, sessions, tmp_path: Path, monkeypatch):
        with sessions() as session:
            seed_varied(session)
        read_both(sessions, tmp_path)
        monkeypatch.setattr(vote_copy, "VERSION", "another")
        assert read_both(sessions, tmp_path).full
        with sessions() as session:
            session.execute(delete(DatabaseIdentity))  # what TRUNCATE of every table leaves
            session.commit()
        assert read_both(sessions, tmp_path).full
        assert len(list(tmp_path.glob("votes-*.arrow"))) == 2

    def test_the_copy_is_written_again_once_enough_battles_changed(self, sessions, tmp_path: Path, monkeypatch):
        monkeypatch.setattr(vote_copy, "REWRITE_AT", 2)
        with sessions() as session:
            seed_varied(session)
        read_both(sessions, tmp_path)
        (path,) = tmp_path.glob("votes-*.arrow")
        for minute, battles, rewritten in ((200, 1, False), (201, 2, True), (202, 1, False)):
            written = path.stat().st_ino
            with sessions() as session:
                add_voted_battle(session, "geo-large", "geo-small", "b", minute=minute)
                session.commit()
            # the changes since the copy was written are read each time, until it is written again
            assert read_both(sessions, tmp_path) == vote_copy.Refresh(full=False, battles=battles)
            assert (path.stat().st_ino != written) is rewritten

    def test_many_changed_battles_are_read_with_every_vote(self, sessions, tmp_path: Path, monkeypatch):
        with sessions() as session:
            seed_varied(session)
        read_both(sessions, tmp_path)
        with sessions() as session:
            add_voted_battle(session, "geo-large", "geo-small", "b", minute=200)
            add_voted_battle(session, "geo-small", "geo-large", "a", minute=201)
            session.commit()
        monkeypatch.setattr(vote_copy, "FEW", 1)
        monkeypatch.setattr(vote_copy, "MANY", 0.0)
        assert read_both(sessions, tmp_path).full

    def test_an_unreadable_copy_is_replaced(self, sessions, tmp_path: Path):
        with sessions() as session:
            seed_varied(session)
        read_both(sessions, tmp_path)
        (path,) = tmp_path.glob("votes-*.arrow")
        path.write_bytes(path.read_bytes()[:1000])
        assert read_both(sessions, tmp_path).full
        assert read_both(sessions, tmp_path) == vote_copy.Refresh(full=False, battles=0)

    def test_an_empty_database(self, sessions, tmp_path: Path):
        assert read_both(sessions, tmp_path).full
        with sessions() as session:
            add_voted_battle(session, "geo-large", "geo-small", "a")
            session.commit()
        assert read_both(sessions, tmp_path) == vote_copy.Refresh(full=False, battles=1)

    def test_changes_older_than_a_week_are_trimmed(self, sessions, tmp_path: Path):
        with sessions() as session:
            add_voted_battle(session, "geo-large", "geo-small", "a")
            session.commit()
            logged = session.scalar(select(func.count()).select_from(VoteChange))
            session.execute(update(VoteChange).values(at=VoteChange.at - vote_copy.KEPT - 60))
            add_voted_battle(session, "geo-small", "geo-large", "b", minute=1)
            session.commit()
        read_both(sessions, tmp_path)
        with sessions() as session:
            assert session.scalar(select(func.count()).select_from(VoteChange)) == logged


def test_a_change_committed_after_a_later_one_is_not_missed(postgres_url, tmp_path: Path):
    """PostgreSQL hands out ids before commit: the change holding the smaller
    id can commit after the copy has read the larger one."""
    from tests.conftest import truncate_all

    truncate_all(postgres_url)
    engine = make_engine(postgres_url)
    sessions = make_sessionmaker(engine)
    try:
        with sessions() as session:
            add_voted_battle(session, "geo-large", "geo-small", "a")
            session.commit()
        read_both(sessions, tmp_path)
        slow, quick = sessions(), sessions()
        try:
            add_voted_battle(slow, "geo-large", "geo-small", "tie", minute=1)  # its change row is logged first
            add_voted_battle(quick, "geo-small", "geo-large", "b", minute=2, voter="q" * 64)
            quick.commit()
            read_both(sessions, tmp_path)
            slow.commit()
        finally:
            slow.close()
            quick.close()
        got, refresh = read_votes(engine, tmp_path)
        assert not refresh.full and got.table.num_rows == 3
        read_both(sessions, tmp_path)
    finally:
        engine.dispose()
