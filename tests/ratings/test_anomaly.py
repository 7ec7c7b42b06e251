"""The voter anomaly test: honest voters spared, scripted ones flagged, flags
written back to the database and shown in the export."""

from __future__ import annotations

import numpy as np
from scipy.special import expit
from sqlalchemy import select

from arena.db.session import make_engine, make_sessionmaker
from arena.db.tables import Battle
from arena.export.db import export_rows
from arena.ratings import bt
from arena.ratings.anomaly import screen_voters
from arena.ratings.job import rank_database
from arena.ratings.leaderboard import (
    ADDRESS_OUTLIER_REASON,
    OUTLIER_REASON,
    RankOptions,
    build_snapshot,
)
from arena.ratings.vote_log import VoteLogBuilder
from tests.export.seed import add_voted_battle

TIE_RATE = 0.25


def honest_votes(theta: np.ndarray, voters: int, per_voter: int, rng: np.random.Generator):  # type: ignore[no-untyped-def]
    """Bradley-Terry voters with the arena's tie rate, each casting `per_voter` votes."""
    n = theta.size
    size = voters * per_voter
    a = rng.integers(0, n, size)
    b = (a + rng.integers(1, n, size)) % n
    y = np.where(rng.random(size) < expit(theta[a] - theta[b]), 1.0, 0.0)
    y[rng.random(size) < TIE_RATE] = 0.5
    voter = np.repeat(np.arange(voters), per_voter)
    return a, b, y, voter


def with_scripted_voter(a, b, y, voter, n, rng, *, votes, favour=None, against=None):  # type: ignore[no-untyped-def]
    """One more voter who sees `votes` battles with their contender in it and
    votes for (`favour`) or against (`against`) it every time."""
    c = favour if favour is not None else against
    side = rng.integers(1, n, votes)
    sa = np.full(votes, c)
    sb = (c + side) % n
    sy = np.ones(votes) if favour is not None else np.zeros(votes)
    me = voter.max() + 1
    return np.r_[a, sa], np.r_[b, sb], np.r_[y, sy], np.r_[voter, np.full(votes, me)], me


def fitted(a, b, y, n):  # type: ignore[no-untyped-def]
    return bt.fit_bt(bt.aggregate(a, b, y, n)).theta


class TestScreenVoters:
    def test_honest_voters_are_spared(self):
        rng = np.random.default_rng(11)
        theta = rng.normal(0, 0.7, 20)
        a, b, y, voter = honest_votes(theta, voters=3000, per_voter=30, rng=rng)
        result = screen_voters(a, b, y, voter, fitted(a, b, y, 20), alpha=0.01)
        # the guarantee is <= alpha of honest voters; in practice far fewer
        assert result.voters_tested == 3000
        assert result.flagged.size <= 30
        assert result.votes_flagged / a.size < 0.01

    def test_a_voter_pushing_one_contender_is_flagged(self):
        rng = np.random.default_rng(12)
        theta = np.linspace(1.0, -1.0, 20)
        a, b, y, voter = honest_votes(theta, voters=1000, per_voter=20, rng=rng)
        a, b, y, voter, me = with_scripted_voter(a, b, y, voter, 20, rng, votes=40, favour=10)
        result = screen_voters(a, b, y, voter, fitted(a, b, y, 20))
        assert me in result.flagged.tolist()
        assert result.vote_flagged[voter == me].all() and not result.vote_flagged[voter != me].any()

    def test_a_voter_sinking_one_contender_is_flagged(self):
        """Omnipresent rigging pushes down the contender above the target."""
        rng = np.random.default_rng(13)
        theta = np.linspace(1.0, -1.0, 20)
        a, b, y, voter = honest_votes(theta, voters=1000, per_voter=20, rng=rng)
        a, b, y, voter, me = with_scripted_voter(a, b, y, voter, 20, rng, votes=40, against=3)
        assert me in screen_voters(a, b, y, voter, fitted(a, b, y, 20)).flagged.tolist()

    def test_a_few_votes_are_not_enough_evidence(self):
        rng = np.random.default_rng(14)
        theta = np.linspace(1.0, -1.0, 20)
        a, b, y, voter = honest_votes(theta, voters=500, per_voter=20, rng=rng)
        a, b, y, voter, me = with_scripted_voter(a, b, y, voter, 20, rng, votes=3, favour=10)
        assert me not in screen_voters(a, b, y, voter, fitted(a, b, y, 20)).flagged.tolist()

    def test_votes_without_a_voter_are_not_tested(self):
        a, b, y = np.array([0, 0, 0]), np.array([1, 1, 1]), np.array([0.0, 0.0, 0.0])
        result = screen_voters(a, b, y, np.array([-1, -1, -1]), np.array([3.0, -3.0]))
        assert result.voters_tested == 0 and result.votes_flagged == 0


class TestSnapshotExcludesOutliers:
    def test_flagged_votes_are_counted_not_rated(self):
        rng = np.random.default_rng(15)
        theta = np.linspace(1.0, -1.0, 8)
        a, b, y, voter = honest_votes(theta, voters=300, per_voter=20, rng=rng)
        a, b, y, voter, _ = with_scripted_voter(a, b, y, voter, 8, rng, votes=60, favour=7)
        builder = VoteLogBuilder()
        for i in range(a.size):
            builder.add(f"c{a[i]}", f"c{b[i]}", float(y[i]), tstamp=float(i), voter=f"voter-{voter[i]}")
        snapshot = build_snapshot(builder.build(), RankOptions(rounds=5, style=False))
        assert snapshot["excluded"][OUTLIER_REASON] == 60
        assert snapshot["votes_used"] == a.size - 60
        assert snapshot["voter_screening"]["voters_flagged"] == 1
        off = build_snapshot(builder.build(), RankOptions(rounds=5, style=False, outlier_alpha=None))
        assert OUTLIER_REASON not in off["excluded"] and off["votes_used"] == a.size


class TestFlagsInTheDatabase:
    def test_scripted_voter_flagged_in_the_export_and_kept_flagged(self, database_url):
        sessions = make_sessionmaker(make_engine(database_url))
        names = ["geo-large", "geo-small", "geo-small+gate"]
        rng = np.random.default_rng(16)
        with sessions() as session:
            minute = 0
            for voter in range(40):  # honest: the stronger contender usually wins
                for _ in range(6):
                    i, j = rng.choice(3, 2, replace=False)
                    winner = "a" if (rng.random() < 0.5 + 0.15 * (j - i)) else "b"
                    add_voted_battle(session, names[i], names[j], winner, minute=minute, voter=f"honest-{voter}")
                    minute += 1
            for _ in range(30):  # the script always picks geo-small+gate, the weakest
                other = names[int(rng.integers(0, 2))]
                add_voted_battle(session, other, "geo-small+gate", "b", minute=minute, voter="script")
                minute += 1
            session.commit()
        first = rank_database(sessions, RankOptions(rounds=5, style=False, provisional_votes=0))
        assert first["excluded"][OUTLIER_REASON] == 30
        with sessions() as session:
            rows = list(export_rows(session))
        flagged = [r for r in rows if "outlier_voter" in r["flags"]]
        assert len(flagged) == 30 and {r["judge"] for r in flagged} == {"script"}
        # the flag sticks: a later vote of the same voter, even an ordinary one, is left out too
        with sessions() as session:
            add_voted_battle(session, "geo-large", "geo-small", "a", minute=5000, voter="script")
            session.commit()
        second = rank_database(sessions, RankOptions(rounds=5, style=False, provisional_votes=0))
        assert second["excluded"][OUTLIER_REASON] == 31
        with sessions() as session:
            flags = session.scalars(select(Battle.flags)).all()
        assert sum("outlier_voter" in f for f in flags) == 31


class TestScreeningByAddress:
    """A script that takes a fresh cookie for every vote is many voters with a few votes
    each, too few for any one of them to be evidence; at one address it is one address
    with many votes."""

    def cookie_rotating_script(self, rng: np.random.Generator):  # type: ignore[no-untyped-def]
        theta = np.linspace(1.0, -1.0, 8)
        a, b, y, voter = honest_votes(theta, voters=300, per_voter=20, rng=rng)
        # honest voters come from 150 addresses (households, a campus: several voters each)
        address = voter % 150
        start = voter.max() + 1
        for k in range(40):  # 40 fresh cookies, two votes each, all for contender 7
            a, b, y, voter, _ = with_scripted_voter(a, b, y, voter, 8, rng, votes=2, favour=7)
            assert voter[-1] == start + k
        address = np.r_[address, np.full(80, 999)]
        builder = VoteLogBuilder()
        for i in range(a.size):
            builder.add(f"c{a[i]}", f"c{b[i]}", float(y[i]), tstamp=float(i), voter=f"voter-{voter[i]}")
        log = builder.build()
        codes = {value: i for i, value in enumerate(dict.fromkeys(address.tolist()))}
        return log, np.array([codes[v] for v in address]), [f"address-{v}" for v in codes]

    def test_many_fresh_voters_at_one_address_are_caught(self):
        log, address, names = self.cookie_rotating_script(np.random.default_rng(21))
        blind = build_snapshot(log, RankOptions(rounds=5, style=False))
        assert blind["voter_screening"]["voters_flagged"] == 0  # each cookie alone is no evidence
        log.address, log.addresses = address, names
        snapshot = build_snapshot(log, RankOptions(rounds=5, style=False))
        assert snapshot["excluded"][ADDRESS_OUTLIER_REASON] == 80
        assert snapshot["voter_screening"]["addresses_flagged"] == 1
        assert snapshot["voter_screening"]["addresses_tested"] == 151
        assert snapshot["votes_used"] == log.size - 80

    def test_addresses_flagged_in_the_database_and_kept_flagged(self, database_url):
        sessions = make_sessionmaker(make_engine(database_url))
        names = ["geo-large", "geo-small", "geo-small+gate"]
        rng = np.random.default_rng(22)
        with sessions() as session:
            minute = 0
            for voter in range(40):  # honest, from 20 addresses
                for _ in range(6):
                    i, j = rng.choice(3, 2, replace=False)
                    winner = "a" if (rng.random() < 0.5 + 0.15 * (j - i)) else "b"
                    add_voted_battle(
                        session,
                        names[i],
                        names[j],
                        winner,
                        minute=minute,
                        voter=f"honest-{voter}",
                        address=f"home-{voter % 20}",
                    )
                    minute += 1
            for cookie in range(30):  # one address, a fresh cookie per vote, always the weakest
                other = names[int(rng.integers(0, 2))]
                add_voted_battle(
                    session, other, "geo-small+gate", "b", minute=minute, voter=f"fresh-{cookie}", address="script"
                )
                minute += 1
            session.commit()
        first = rank_database(sessions, RankOptions(rounds=5, style=False, provisional_votes=0))
        assert first["excluded"].get(OUTLIER_REASON, 0) == 0
        assert first["excluded"][ADDRESS_OUTLIER_REASON] == 30
        with sessions() as session:
            battles = session.execute(select(Battle.ip_hash, Battle.flags)).all()
            rows = list(export_rows(session))
        assert sum("outlier_address" in r["flags"] for r in rows) == 30
        assert all("script" not in str(value) for row in rows for value in row.values())  # no address leaves
        assert {address for address, flags in battles if "outlier_address" in flags} == {"script"}
        # the flag sticks: a later vote from that address, with yet another cookie, is left out too
        with sessions() as session:
            add_voted_battle(session, "geo-large", "geo-small", "a", minute=5000, voter="fresh-99", address="script")
            session.commit()
        second = rank_database(sessions, RankOptions(rounds=5, style=False, provisional_votes=0))
        assert second["excluded"]["flagged:outlier_address"] == 31
