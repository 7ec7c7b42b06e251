"""An answer's style counts as integer columns beside its JSON: every writer keeps them, the migration backfills them."""

from __future__ import annotations

import json

from sqlalchemy import select, text

from arena.answers.style import style_features
from arena.battles.repository import update_response
from arena.db.migrate import downgrade, upgrade
from arena.db.session import make_engine, make_sessionmaker
from arena.db.tables import STYLE_COLUMNS, Battle, Response, style_columns
from tests.db.test_schema import add_battle

COUNTS = style_features("# Paris\n## Seine\n- one\n1. two\n**bold** __b__ *it* _it_ at 48.85 N, 2.35 E") | {
    "tool_calls": 4
}


def stored(session, side: str = "a") -> dict[str, int | None]:  # type: ignore[no-untyped-def]
    query = select(*(getattr(Response, c) for c in STYLE_COLUMNS)).where(Response.side == side).order_by(Response.id)
    row = session.execute(query).first()
    return dict(zip(STYLE_COLUMNS, row, strict=True))


class TestStyleColumns:
    def test_the_sums_of_the_style_fit(self):
        assert style_columns(COUNTS) == {
            "style_tokens": COUNTS["tokens"],
            "style_list_items": 2,
            "style_headers": 2,
            "style_emphasis": 4,
            "style_gps": 1,
            "style_tool_calls": 4,
        }
        partial = style_columns({"tokens": 7, "header_count": {"h2": 1}, "bold_count": {"__": 2}})
        assert partial == {
            "style_tokens": 7,
            "style_list_items": 0,
            "style_headers": 1,
            "style_emphasis": 2,
            "style_gps": 0,
            "style_tool_calls": None,  # not stored with the counts: the trajectory says
        }
        assert style_columns(None) == dict.fromkeys(STYLE_COLUMNS)

    def test_orm_writes_keep_them_beside_the_json(self, database_url):
        sessions = make_sessionmaker(make_engine(database_url))
        with sessions.begin() as session:
            battle = add_battle(session)
            session.add(Response(battle_id=battle.id, side="a", contender="x", style=COUNTS))
            session.add(Response(battle_id=battle.id, side="b", contender="y"))
        with sessions.begin() as session:
            assert stored(session) == style_columns(COUNTS)
            assert stored(session, "b") == dict.fromkeys(STYLE_COLUMNS)
            answer = session.scalars(select(Response).where(Response.side == "a")).one()
            answer.style = None
        with sessions() as session:
            assert stored(session) == dict.fromkeys(STYLE_COLUMNS)

    def test_the_runners_write_keeps_them(self, database_url):
        sessions = make_sessionmaker(make_engine(database_url))
        with sessions.begin() as session:
            battle = add_battle(session)
            session.add(Response(battle_id=battle.id, side="a", contender="x"))
        with sessions.begin() as session:
            update_response(session, battle.id, "a", status="done", style=COUNTS)
        with sessions() as session:
            assert stored(session) == style_columns(COUNTS)

    def test_the_migration_fills_them_from_the_json(self, database_url):
        """Answers stored before the columns: the upgrade computes them in the database."""
        engine = make_engine(database_url)
        sessions = make_sessionmaker(engine)
        with sessions.begin() as session:
            first = add_battle(session).id
            session.add(Battle(id="c" * 32, prompt="Where?", image_sha256="e" * 64, model_a="x", model_b="y"))
        partial = {"tokens": 7, "header_count": {"h2": 1}, "list_count": {}, "bold_count": {"__": 2}}
        answers = [(first, "a", json.dumps(COUNTS)), (first, "b", json.dumps(partial)), ("c" * 32, "a", "null")]
        downgrade(database_url, "0009")
        try:
            with engine.begin() as conn:
                for battle_id, side, style in answers:
                    conn.execute(
                        text(
                            "INSERT INTO responses (battle_id, side, contender, gate, status, text, trajectory, style) "
                            "VALUES (:battle, :side, 'x', false, 'done', '', '[]', :style)"
                        ),
                        {"battle": battle_id, "side": side, "style": style},
                    )
        finally:
            upgrade(database_url)
        with sessions() as session:
            assert stored(session, "a") == style_columns(COUNTS)  # the first battle's (ordered by id)
            assert stored(session, "b") == style_columns(partial)
            json_null = select(Response.style_tokens).where(Response.battle_id == "c" * 32)
            assert session.execute(json_null).scalar_one() is None
        engine.dispose()
