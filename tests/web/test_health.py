"""`/healthz` and `/readyz` against real SQLite and PostgreSQL, including a
database left at an older migration and one that does not answer."""

from __future__ import annotations

import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from sqlalchemy.engine import make_url

from arena.app import create_app
from arena.config import Settings
from arena.db.migrate import head_revisions, upgrade
from arena.gatekeeper import Gatekeeper

OLDER = "0006"  # a real earlier revision of migrations/versions


@pytest.fixture(params=["sqlite", "postgres"])
def old_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database of each kind migrated only up to an older revision."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'old.db'}"
        upgrade(url, OLDER)
        yield url
        return
    admin = make_url(request.getfixturevalue("postgres_url")).set(database="postgres")
    dsn = admin.set(drivername="postgresql").render_as_string(hide_password=False)
    name = f"geoarena_old_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = admin.set(database=name).render_as_string(hide_password=False)
    try:
        upgrade(url, OLDER)
        yield url
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def served(settings: Settings) -> AsyncIterator[tuple[httpx.AsyncClient, object]]:
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield client, app


async def test_healthz_answers_while_the_process_is_up(client):
    response = await client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert response.headers["cache-control"] == "no-store"


async def test_readyz_is_ready_on_a_migrated_database(client):
    response = await client.get("/readyz")
    assert response.status_code == 200, response.text
    assert response.json() == {
        "status": "ready",
        "checks": {
            "database": "ok",
            "migrations": "ok",
            "pool": "ok",
            "gatekeeper": "ok",
            "place_names": "ok",
            "accepting": "ok",
            "images": "ok",
        },
    }


async def test_readyz_names_migrations_when_the_database_is_behind(settings, old_database_url):
    behind = settings.model_copy(update={"database_url": old_database_url})
    async for client, _app in served(behind):
        response = await client.get("/readyz")
        assert response.status_code == 503
        body = response.json()
        assert body["checks"] == {
            "database": "ok",
            "migrations": "failing",
            "pool": "ok",
            "gatekeeper": "ok",
            "place_names": "ok",
            "accepting": "ok",
            "images": "ok",
        }
        assert body["error"] == "not_ready"
        assert f"at {OLDER}" in body["message"] and head_revisions()[0] in body["message"]
        assert (await client.get("/healthz")).status_code == 200  # alive, just not ready
    upgrade(old_database_url)  # the operator runs the migration: the same replica turns ready
    async for client, _app in served(behind):
        assert (await client.get("/readyz")).status_code == 200


async def test_readyz_names_the_database_when_it_does_not_answer(settings, tmp_path):
    if settings.database_url.startswith("sqlite"):
        url = f"sqlite:///{tmp_path / 'no-such-folder' / 'arena.db'}"  # SQLite cannot open it
    else:
        with socket.socket() as s:  # a loopback port nobody listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        url = f"postgresql+psycopg://postgres@127.0.0.1:{port}/arena"
    gone = settings.model_copy(update={"database_url": url})
    async for client, _app in served(gone):
        response = await client.get("/readyz")
        assert response.status_code == 503
        body = response.json()
        assert body["checks"]["database"] == "failing" and "migrations" not in body["checks"]
        assert body["message"].startswith("Not ready. database: unreachable")
        assert "127.0.0.1" not in body["message"]  # no addresses in a public answer


async def test_readyz_waits_for_the_gatekeeper_model(client, app):
    app.state.services.gatekeeper = Gatekeeper(mode="offline")  # a real gatekeeper, model not loaded yet
    response = await client.get("/readyz")
    assert response.status_code == 503 and response.json()["checks"]["gatekeeper"] == "failing"
    await app.state.services.gatekeeper.warm()
    assert (await client.get("/readyz")).status_code == 200


async def test_readyz_waits_for_the_place_name_index(client, app):
    app.state.services.place_names.clear()  # as while the start-up warm-up builds it
    response = await client.get("/readyz")
    assert response.status_code == 503 and response.json()["checks"]["place_names"] == "failing"
    assert "place-name index" in response.json()["message"]
    app.state.services.place_names.set()
    assert (await client.get("/readyz")).status_code == 200


class TestReadyzImageStore:
    async def test_a_local_directory_that_cannot_be_written_is_not_ready(self, settings, tmp_path):
        blocker = tmp_path / "not-a-directory"
        blocker.write_text("a file where the image directory's parent should be")
        unwritable = settings.model_copy(update={"image_store": str(blocker / "images")})
        async for client, _app in served(unwritable):
            response = await client.get("/readyz")
            assert response.status_code == 503 and response.json()["checks"]["images"] == "failing"
            assert "images: the image directory cannot be written (NotADirectoryError)" in response.json()["message"]
            assert str(tmp_path) not in response.json()["message"]  # no paths in a public answer

    async def test_a_reachable_bucket_is_ready_and_a_missing_one_is_not(self, settings, s3_env):
        bucket = s3_env.create_bucket(f"ready-{uuid.uuid4().hex[:8]}")
        store = settings.model_copy(update={"image_store": f"s3://{bucket}/photos", **_s3(s3_env)})
        async for client, _app in served(store):
            response = await client.get("/readyz")
            assert response.status_code == 200 and response.json()["checks"]["images"] == "ok", response.text
        missing = settings.model_copy(update={"image_store": "s3://no-such-bucket", **_s3(s3_env)})
        async for client, _app in served(missing):
            response = await client.get("/readyz")
            assert response.status_code == 503 and response.json()["checks"]["images"] == "failing"
            assert "images: the S3 bucket no-such-bucket does not exist" in response.json()["message"]


def _s3(server) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {"s3_endpoint_url": server.endpoint_url}
