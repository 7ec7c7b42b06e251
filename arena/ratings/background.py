"""The rating job inside `arena serve`: so the board fills without a second
terminal running `arena rank --every`.

One thread per server process wakes every `interval` seconds, counts the
votes and, when some arrived since its last run, computes and stores a
snapshot exactly as `arena rank` does. At shutdown it is told to stop and
abandons a bootstrap in progress at the next round rather than holding the
process (a half-computed snapshot is never stored).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from arena.export.db import count_votes
from arena.ratings.job import FeatureCounts, rank_database
from arena.ratings.options import RankOptions

log = logging.getLogger(__name__)


class _Stopped(Exception):
    """Raised from the progress callback to abandon a run at shutdown."""


class BackgroundRanker:
    def __init__(
        self, sessions: sessionmaker[Session], options: RankOptions, interval: float, copies: Path | None = None
    ) -> None:
        if interval <= 0:
            raise ValueError("the background rating interval must be positive")
        self.sessions = sessions
        self.options = options
        self.interval = interval
        self.copies = copies  # the folder of ranking's copy of the votes (`export.vote_copy`)
        self.runs = 0  # snapshots stored by this ranker
        self._stop = threading.Event()
        self._last_seen: tuple[int, int] | None = None
        self._cache: FeatureCounts = {}  # style counts of answers already counted
        self._thread = threading.Thread(target=self._loop, name="arena-background-rank", daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("background rating did not stop within %.0f s", timeout)

    def rank_if_new(self) -> bool:
        """One round: rank when votes arrived since the last; True when a snapshot was stored."""
        with self.sessions() as session:
            marker = count_votes(session)
        if marker == self._last_seen or marker[0] == 0:
            self._last_seen = marker
            return False
        rank_database(self.sessions, self.options, progress=self._check_stop, cache=self._cache, copies=self.copies)
        # the marker read before ranking: a vote that came in during the run triggers the next one
        self._last_seen = marker
        self.runs += 1
        log.info("background rating: snapshot of %d votes stored", marker[0])
        return True

    def _check_stop(self, _done: int) -> None:
        if self._stop.is_set():
            raise _Stopped

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.rank_if_new()
            except _Stopped:
                return
            except Exception:  # noqa: BLE001 - a database outage or a bad vote must not end the thread
                log.exception("background rating failed; trying again in %.0f s", self.interval)
            self._stop.wait(self.interval)
