"""Casting the one vote of a battle and revealing the contenders."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy.orm import Session

from arena.battles import integrity, repository
from arena.config import PoolConfig
from arena.db.tables import Battle
from arena.errors import ClientError


class VoteRefused(ClientError):
    """A vote that cannot be cast (unknown battle, not ready, already voted)."""


@dataclass(frozen=True)
class Reveal:
    choice: str
    model_a: str
    model_b: str
    label_a: str
    label_b: str
    gate_a: bool
    gate_b: bool

    @classmethod
    def of(cls, choice: str, model_a: str, model_b: str, gates: Mapping[str, bool], pool: PoolConfig) -> Reveal:
        labels = {c.name: c.label for c in pool.contenders}
        return cls(
            choice=choice,
            model_a=model_a,
            model_b=model_b,
            label_a=labels.get(model_a, ""),
            label_b=labels.get(model_b, ""),
            gate_a=gates.get("a", False),
            gate_b=gates.get("b", False),
        )


def voter_hash(secret: str, voter_id: str, ip: str) -> str:
    """A salted, keyed hash of who voted: lets us spot ballot stuffing
    without storing an IP address or a reversible id."""
    return hmac.new(secret.encode(), f"{voter_id}|{ip}".encode(), hashlib.sha256).hexdigest()


class VotedOn(Protocol):
    """What the rules read of a battle: the ORM row or the vote writer's own read."""

    @property
    def status(self) -> str: ...
    @property
    def starter_hash(self) -> str | None: ...


def vote_refusal(battle: VotedOn | None, voter: str, *, taken: bool = False) -> VoteRefused | None:
    """Why `voter` may not vote on `battle`, in the order the rules are checked, or None.
    `taken`: a vote earlier in the same batch already took the battle (ballots.py)."""
    if battle is None:
        return VoteRefused(404, "battle_not_found", "There is no battle with this id.")
    if not voter:
        return VoteRefused(
            403,
            "not_your_battle",
            "Votes count only from the browser that started the battle, and this request carries no arena cookie.",
        )
    if battle.starter_hash and not hmac.compare_digest(battle.starter_hash, voter):
        return VoteRefused(403, "not_your_battle", "Votes count only from the browser that started the battle.")
    if battle.status == "voted" or taken:  # "voted" is set with the vote, in its transaction
        return VoteRefused(409, "already_voted", "This battle has already been voted on.")
    if battle.status == "failed":
        return VoteRefused(409, "side_failed", "One of the answers failed, so this battle cannot be voted on.")
    if battle.status == "abandoned":
        return VoteRefused(409, "not_ready", "This battle was abandoned before both answers finished.")
    if battle.status != "ready":
        return VoteRefused(409, "not_ready", "Both answers must finish before you can vote.")
    return None


def cast_vote(
    session: Session, battle_id: str, choice: str, voter: str, pool: PoolConfig, *, address: str = ""
) -> Reveal:
    """Cast the battle's vote from `voter` (the hash of the client's cookie),
    after the integrity checks: only the client that started the battle, within
    the daily limits; a vote before the answers could be read is kept but
    flagged `too_fast` (not rated)."""
    battle = repository.battle_with_answers(session, battle_id)
    refused = vote_refusal(battle, voter)
    if refused is not None:
        raise refused
    assert battle is not None  # vote_refusal refuses a missing battle
    integrity.count_vote(session, pool.integrity, voter, address)  # 429 past the daily limits
    voted_at = repository.add_vote(session, battle, choice, voter)
    if voted_at is None:  # another request voted between our read and our insert
        raise VoteRefused(409, "already_voted", "This battle has already been voted on.")
    texts = {r.side: r.text or "" for r in battle.responses}
    ready_at = max((r.finished_at for r in battle.responses if r.finished_at is not None), default=None)
    if integrity.too_fast(pool.integrity, ready_at, voted_at, texts.get("a", ""), texts.get("b", "")):
        repository.add_flag(session, battle, integrity.TOO_FAST)
        integrity.bump(session, f"too_fast:voter:{voter}")  # a risk signal for the challenge
        integrity.bump(session, f"too_fast:address:{address}")
    return reveal_of(battle, choice, pool)


def reveal_of(battle: Battle, choice: str, pool: PoolConfig) -> Reveal:
    """Who answered a voted battle (its responses loaded), as the vote's answer says it."""
    return Reveal.of(choice, battle.model_a, battle.model_b, {r.side: r.gate for r in battle.responses}, pool)
