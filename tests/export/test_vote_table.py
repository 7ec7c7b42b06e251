"""The database's votes read as columns give exactly the log of their export file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sqlalchemy import select, update

from arena.answers.style import style_features
from arena.db.session import make_engine, make_sessionmaker
from arena.db.tables import Battle, BattleLabel, Response
from arena.export.columnar import RANK_SCHEMA
from arena.export.db import export_rows
from arena.export.vote_table import read_vote_table
from arena.export.writers import write_rows
from arena.ratings.job import log_from_database, log_from_file
from tests.export.seed import add_voted_battle, seed_arena
from tests.ratings.test_columnar import assert_same_log

PARIS = {"lat": 48.8566, "lon": 2.3522, "level": "city", "place": "Paris", "country": "FR"}
LYON = {"lat": 45.764, "lon": 4.8357, "level": "city", "place": "Lyon", "country": "FR"}


def seed_varied(session) -> None:  # type: ignore[no-untyped-def]
    """seed_arena's votes (answers without stored counts, flags, a failed side)
    plus stored counts, blank answers, commitments and location labels."""
    seed_arena(session)
    styled = add_voted_battle(session, "geo-large", "geo-small+gate", "a", minute=90, voter="s" * 64)
    blank = add_voted_battle(session, "geo-small", "geo-large", "tie", minute=91, language=None)
    labelled = add_voted_battle(session, "geo-small+gate", "geo-small", "b", minute=92)
    agreeing = add_voted_battle(session, "geo-large", "geo-small", "both_bad", minute=93)
    json_null = add_voted_battle(session, "geo-large", "geo-small+gate", "b", minute=94)
    # a Core write of None stores JSON null, not SQL NULL (as `arena import` does for FastChat rows)
    session.execute(update(Response).where(Response.battle_id == json_null).values(style=None))
    old_style = add_voted_battle(session, "geo-small", "geo-large+gate", "a", minute=95)
    # counts in the JSON only, as code older than the integer columns stored them
    session.execute(
        update(Response)
        .where(Response.battle_id == old_style, Response.side == "b")
        .values(style=style_features("## B\n1. one\n2. two\n_it_ at (48.85, 2.35)") | {"tool_calls": 2})
    )
    # quotes, commas and a line break in text cells, and propensities no short decimal holds
    quirky = add_voted_battle(session, 'it\'s, "geo"', "geo-large", "a", minute=96, voter="v'1,\n2")
    for battle_id, propensity in ((quirky, 1 / 3), (styled, 0.1 + 0.2)):
        session.execute(update(Battle).where(Battle.id == battle_id).values(propensity=propensity))
    sides = {(r.battle_id, r.side): r for r in session.scalars(select(Response))}
    sides[styled, "a"].style = style_features("# A\n- one\n- two\n**bold** 48.85 N, 2.35 E") | {"tool_calls": 3}
    # no stored counts: the tool calls are the trajectory's steps
    sides[labelled, "a"].trajectory = [{"tool": "crop", "args": {}}, {"tool": "search", "args": {"q": "x"}}]
    sides[styled, "b"].style = {"tokens": 7, "header_count": {"h2": 1}, "list_count": {}, "bold_count": {"__": 2}}
    for side in "ab":
        sides[blank, side].text = ""
    sides[labelled, "a"].commitment = PARIS
    sides[labelled, "b"].commitment = {"level": "nowhere"}  # not a commitment at a known level
    sides[agreeing, "a"].commitment = PARIS
    sides[agreeing, "b"].commitment = LYON
    session.add(
        BattleLabel(
            battle_id=labelled, lat=48.86, lon=2.35, precision_km=1.0, source="pin", country="FR", continent="EU"
        )
    )
    session.commit()


class TestVoteTable:
    def test_same_log_as_the_export_file(self, database_url, tmp_path: Path):
        sessions = make_sessionmaker(make_engine(database_url))
        with sessions() as session:
            seed_varied(session)
            table = read_vote_table(session).table
            from_database = log_from_database(session)
            rows = list(export_rows(session))
        assert table.schema == RANK_SCHEMA and table.num_rows == 22
        path = tmp_path / "votes.jsonl"
        path.write_bytes(b"".join(write_rows(rows, "jsonl")))
        from_file = log_from_file(path)
        assert_same_log(from_database, from_file)
        log = from_database[0]
        assert len(log.labelled) == 1 and log.labelled[0].country_hit_a is True
        assert log.labelled[0].country_hit_b is None and log.labelled[0].error_km_b is None
        assert {"continent:Europe", "country:France", "answers agree:France"} <= set(log.categories)
        assert sorted(set(log.features_a[:, -1]) | set(log.features_b[:, -1])) == [0.0, 2.0, 3.0]
        assert sorted(log.propensity[~np.isnan(log.propensity)]) == [0.1 + 0.2, 1 / 3]
        assert from_database[1] == {"abandoned": 1, "flagged:identity_leak": 1, "side_failed": 1}

    def test_answers_without_counts_are_counted_once_per_process(self, database_url):
        sessions = make_sessionmaker(make_engine(database_url))
        cache: dict = {}
        with sessions() as session:
            seed_varied(session)
            first = log_from_database(session, cache)
            counted = dict(cache)
            assert counted and all(isinstance(k, int) for k in counted)
            second = log_from_database(session, cache)
        assert cache == counted
        assert_same_log(first, second)

    def test_an_empty_database(self, database_url):
        with make_sessionmaker(make_engine(database_url))() as session:
            table = read_vote_table(session).table
            log, excluded = log_from_database(session)
        assert table.num_rows == 0 and table.schema == RANK_SCHEMA
        assert log.size == 0 and excluded == {}
