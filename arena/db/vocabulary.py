"""The values the tables' check constraints allow, importable without SQLAlchemy
(the export format and `arena rank --input` check against them)."""

from __future__ import annotations

SIDES = ("a", "b")
VOTE_CHOICES = ("a", "b", "tie", "both_bad")
BATTLE_STATUSES = ("pending", "running", "ready", "failed", "abandoned", "voted")
RESPONSE_STATUSES = ("pending", "streaming", "done", "error", "abandoned")
LABEL_SOURCES = ("exif", "pin", "place")
