"""Voted battles written straight into a test database."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from sqlalchemy.orm import Session

from arena.db.tables import Battle, Image, Response, Vote

SHA = hashlib.sha256(b"test photo").hexdigest()
START = datetime(2026, 1, 1, tzinfo=UTC)

ANSWERS = {
    "geo-large": "# Paris\n\n**Eiffel Tower** at 48.8584° N, 2.2945° E.\n\n- iron lattice\n- Seine\n",
    "geo-small": "Probably Paris, France.",
    "geo-small+gate": "## Paris\n1. cropped the sign\n2. read *Rue de Rivoli*\n\n(48.86, 2.34)",
}


def add_voted_battle(
    session: Session,
    model_a: str,
    model_b: str,
    choice: str,
    *,
    minute: int = 0,
    flags: tuple[str, ...] = (),
    language: str | None = "en",
    status: str = "voted",
    side_status: str = "done",
    voter: str | None = None,
    address: str = "",
) -> str:
    if session.get(Image, SHA) is None:
        session.add(Image(sha256=SHA, width=640, height=480, size_bytes=1234))
        session.flush()
    when = START + timedelta(minutes=minute)
    battle = Battle(
        prompt="Where was this taken?",
        image_sha256=SHA,
        model_a=model_a,
        model_b=model_b,
        status=status,
        language=language,
        categories=["landmark"],
        flags=list(flags),
        created_at=when,
        ip_hash=address,
    )
    session.add(battle)
    session.flush()
    for side, name in (("a", model_a), ("b", model_b)):
        session.add(
            Response(
                battle_id=battle.id,
                side=side,
                contender=name,
                gate=name.endswith("+gate"),
                status=side_status if side == "b" else "done",
                text=ANSWERS.get(name, f"An answer from {name}."),
            )
        )
    session.add(
        Vote(
            battle_id=battle.id,
            choice=choice,
            voter_hash=voter or hashlib.sha256(f"v{minute}".encode()).hexdigest(),
            created_at=when,
        )
    )
    session.flush()
    return battle.id


def seed_arena(session: Session) -> None:
    """Three contenders, twelve counted votes, three that must be excluded."""
    plan = [
        ("geo-large", "geo-small", "a"),
        ("geo-small", "geo-large", "b"),
        ("geo-large", "geo-small", "tie"),
        ("geo-large", "geo-small+gate", "a"),
        ("geo-small+gate", "geo-large", "a"),
        ("geo-small+gate", "geo-large", "both_bad"),
        ("geo-small", "geo-small+gate", "b"),
        ("geo-small+gate", "geo-small", "a"),
        ("geo-small", "geo-small+gate", "a"),
        ("geo-large", "geo-small", "a"),
        ("geo-small+gate", "geo-large", "b"),
        ("geo-small", "geo-small+gate", "tie"),
    ]
    for minute, (a, b, choice) in enumerate(plan):
        add_voted_battle(session, a, b, choice, minute=minute, language="en" if minute % 3 else "fr")
    add_voted_battle(session, "geo-large", "geo-small", "a", minute=50, flags=("identity_leak",))
    add_voted_battle(session, "geo-large", "geo-small", "b", minute=51, status="abandoned")
    add_voted_battle(session, "geo-large", "geo-small", "b", minute=52, side_status="error")
    session.commit()
