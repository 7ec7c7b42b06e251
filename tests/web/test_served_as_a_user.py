"""`arena serve` run by a normal user, as a container that drops root runs it: the same battle
from upload to vote, every file it writes its own. Run as root (as CI is), the server runs as
`nobody`, allowed to read root's folders but to write only its own (`as_user`); run by anyone
else, as that user."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.web.conftest import BASELINE_POOL, SAMPLE_IMAGES, serve_arena

NOBODY = 65534
POOL = BASELINE_POOL + "min_read_seconds = 0\n"


@pytest.fixture
def base() -> Iterator[Path]:
    """A folder another user can reach: pytest's own are root's alone (mode 700 under /tmp/pytest-of-root)."""
    folder = Path(tempfile.mkdtemp(prefix="arena-as-a-user-"))
    folder.chmod(0o755)
    if os.geteuid() == 0:
        os.chown(folder, NOBODY, NOBODY)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_battle_served_by_a_normal_user(base: Path) -> None:
    user = NOBODY if os.geteuid() == 0 else os.geteuid()
    pool = base / "arena.toml"
    pool.write_text(POOL)
    photo = (SAMPLE_IMAGES / "level1-1.jpg").read_bytes()
    with serve_arena(base, pool, user=user) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        assert client.get("/").status_code == 200
        created = client.post(
            "/api/battles",
            files={"image": ("p.jpg", photo, "image/jpeg")},
            data={"prompt": "Which country is this? What clues give it away?"},
        )
        assert created.status_code == 201, created.text
        battle = created.json()
        with client.stream("GET", battle["events_url"]) as events:
            lines = [line for line in events.iter_lines() if line.startswith("event: ")]
        assert lines.count("event: done") == 2 and lines[-1] == "event: end", lines
        vote = client.post(f"/api/battles/{battle['battle_id']}/vote", json={"choice": "a"})
        assert vote.status_code == 200, vote.text
        assert vote.json()["choice"] == "a" and vote.json()["model_a"] and vote.json()["model_b"]
        written = list(server.data_dir.rglob("*"))
        assert server.database in written and any(p.suffix in {".jpg", ".webp", ".png"} for p in written)
        assert {p.stat().st_uid for p in [server.data_dir, *written]} == {user}, server.log_tail()
