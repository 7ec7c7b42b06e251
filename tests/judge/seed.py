"""Voted battles on a real sample photo, for the judge and review tests."""

from __future__ import annotations

import hashlib
from pathlib import Path

from sqlalchemy.orm import Session

from arena.db.tables import Battle, Image, Response, Vote
from arena.images.intake import normalise
from arena.images.store import LocalImageStore
from tests.conftest import SAMPLE_DIR

LONG = (
    "## Japan\n\nThe billboard's date is written in kanji (4月4日), traffic keeps left and the plates are "
    "white: **Japan**, most likely a city street in Kansai."
)
SHORT = "Probably China."
SAME_A = "It is Japan, from the kanji on the sign."
SAME_B = "Japan: the sign is written in kanji."

# (answer a, answer b, human vote); the loopback `voter-longer` prefers the longer answer
PLAN = [
    (LONG, SHORT, "a"),  # judge agrees
    (SHORT, LONG, "b"),  # judge agrees
    (SAME_A, SAME_B, "tie"),  # judge agrees (a tie)
    (LONG, SHORT, "b"),  # judge disagrees
    (SHORT, LONG, "a"),  # judge disagrees
]


def store_photo(session: Session, data_dir: Path) -> str:
    clean = normalise((SAMPLE_DIR / "images" / "level1-1.jpg").read_bytes())
    LocalImageStore(data_dir / "images").put(clean.jpeg)
    if session.get(Image, clean.sha256) is None:
        session.add(Image(sha256=clean.sha256, width=clean.width, height=clean.height, size_bytes=len(clean.jpeg)))
        session.flush()
    return clean.sha256


def add_battle(
    session: Session,
    sha: str,
    text_a: str,
    text_b: str,
    choice: str | None,
    *,
    model_a: str = "geo-large",
    model_b: str = "geo-small",
    side_b_status: str = "done",
) -> str:
    battle = Battle(
        prompt="Where was this photo taken?",
        image_sha256=sha,
        model_a=model_a,
        model_b=model_b,
        status="voted" if choice else "ready",
        language="en",
    )
    session.add(battle)
    session.flush()
    for side, name, text, status in (("a", model_a, text_a, "done"), ("b", model_b, text_b, side_b_status)):
        session.add(Response(battle_id=battle.id, side=side, contender=name, status=status, text=text))
    if choice:
        session.add(Vote(battle_id=battle.id, choice=choice, voter_hash=hashlib.sha256(battle.id.encode()).hexdigest()))
    session.flush()
    return battle.id


def seed(session: Session, data_dir: Path) -> list[str]:
    """Five voted battles to judge, plus one with a failed side and one not voted."""
    sha = store_photo(session, data_dir)
    ids = [add_battle(session, sha, a, b, choice) for a, b, choice in PLAN]
    add_battle(session, sha, LONG, "", "a", side_b_status="error")
    add_battle(session, sha, LONG, SHORT, None)
    session.commit()
    return ids
