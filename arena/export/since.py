"""Reading the `since` bound of an export, for the API and the CLI alike."""

from __future__ import annotations

from datetime import UTC, datetime


def parse_since(text: str | None) -> datetime | None:
    """ISO 8601 date or time; a time without zone is UTC. Returned in UTC:
    SQLite keeps times as UTC text and compares them as text, ignoring an offset."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"since must be an ISO 8601 date or time such as 2026-01-31T12:00:00Z, got {text!r}") from exc
    try:
        return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    except OverflowError:  # year 1 east of UTC, or year 9999 west of it: no UTC time holds it
        raise ValueError(
            f"since is out of range: {text!r} falls outside the years 1 to 9999 once turned into UTC"
        ) from None
