"""Fixtures shared by the whole suite.

Databases are built the production way, by `alembic upgrade head`: SQLite
once per session into a template file copied for each test, PostgreSQL once
per session into a fresh database that each test truncates. PostgreSQL is
never skipped: if it is unreachable the tests that need it fail, loudly.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from sqlalchemy import Connection, Engine, event, text
from sqlalchemy.engine import make_url

from arena.app import create_app
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.session import make_engine
from arena.db.tables import Base
from tests.servers import serve_in_thread
from tests.servers.openai_compatible import OpenAICompatibleServer
from tests.servers.s3 import S3Server, s3_server
from tests.servers.scripted import ScriptedServer

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("GEOARENA_SHARED", ROOT.parent / "shared"))
SAMPLE_DIR = SHARED / "data" / "geobrowse-sample"
SAMPLE_IMAGES = sorted((SAMPLE_DIR / "images").glob("*.jpg"))
# Debian's Chromium; the flags keep it from reaching for Google's hosts, which
# this machine's closed network refuses.
CHROMIUM = Path(os.environ.get("GEOARENA_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Screenshots for a person to look at, outside the checkout (GEOARENA_SCREENSHOTS to choose).
SCREENSHOTS = Path(os.environ.get("GEOARENA_SCREENSHOTS", Path(tempfile.gettempdir()) / "geoarena-screenshots"))
POSTGRES_ADMIN_URL = os.environ.get("ARENA_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


# -- databases -----------------------------------------------------------------


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sqlite-template") / "arena.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    admin = make_url(POSTGRES_ADMIN_URL)
    name = f"geoarena_test_{uuid.uuid4().hex[:12]}"
    dsn = admin.set(drivername="postgresql").render_as_string(hide_password=False)
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as exc:
        pytest.fail(f"PostgreSQL is required and unreachable at {admin.render_as_string()}: {exc}")
    url = admin.set(database=name).render_as_string(hide_password=False)
    upgrade(url)
    yield url
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A freshly migrated, empty database of each kind."""
    if request.param == "sqlite":
        path = tmp_path / "arena.db"
        shutil.copy(request.getfixturevalue("sqlite_template"), path)
        return f"sqlite:///{path}"
    url: str = request.getfixturevalue("postgres_url")
    truncate_all(url)
    return url


def truncate_all(url: str) -> None:
    """Empty every table of the PostgreSQL database at `url`."""
    engine = make_engine(url)
    with engine.begin() as conn:
        tables = ", ".join(t.name for t in Base.metadata.sorted_tables)
        conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
    engine.dispose()


@pytest.fixture(autouse=True)
def _engines_disposed() -> Iterator[None]:
    """Every database engine that connected during a test is disposed when the test ends:
    its pooled connections are closed then, not by the garbage collector some tests later
    (psycopg warns of each connection it finds still open). The engines are held until then,
    not weakly: a test or fixture that drops its engine early (`make_sessionmaker(make_engine(url))`
    in a fixture that returns) would otherwise leave it to the collector, open connections and all."""
    engines: set[Engine] = set()

    def connected(connection: Connection) -> None:
        engines.add(connection.engine)

    event.listen(Engine, "engine_connect", connected)
    try:
        yield
    finally:
        event.remove(Engine, "engine_connect", connected)
        for engine in list(engines):
            engine.dispose()


# -- model servers ---------------------------------------------------------------


@pytest.fixture(scope="session")
def openai_server() -> Iterator[tuple[str, OpenAICompatibleServer]]:
    """A loopback OpenAI-compatible server; yields (base_url ending in /v1, server)."""
    server = OpenAICompatibleServer()
    with serve_in_thread(server.app) as url:
        yield f"{url}/v1", server


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A real S3-compatible server (moto's server mode) on loopback, for the whole session."""
    with s3_server(tmp_path_factory.mktemp("s3") / "moto.log") as server:
        yield server


@pytest.fixture
def s3_env(s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    """The S3 server's credentials in this process's environment, where boto3 looks for them."""
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    return s3


@pytest.fixture
async def server() -> AsyncIterator[ScriptedServer]:
    """A raw loopback HTTP server answering each request with the next script."""
    loopback = ScriptedServer()
    await loopback.start()
    yield loopback
    await loopback.stop()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client for talking to the loopback servers directly."""
    async with httpx.AsyncClient() as client:
        yield client


# -- the browser -----------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    """Debian's Chromium, headless, through Playwright's sync API.

    Module-scoped on purpose: the sync API keeps an event loop running while
    it is open, and pytest-asyncio cannot run async tests beside it."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"Chromium not found at {CHROMIUM}. The browser test needs Debian's chromium: "
            "`apt-get install -y chromium` (or set GEOARENA_CHROMIUM to its path). "
            "It is not skipped on purpose: CI must run it."
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


# -- the app ---------------------------------------------------------------------


def write_pool(path: Path, base_url: str, models: dict[str, str], **extra: str) -> Path:
    """A pool file with one OpenAI-compatible contender per (name -> model)."""
    lines = []
    for name, model in models.items():
        lines += [
            "[[contenders]]",
            f'name = "{name}"',
            'provider = "openai"',
            f'base_url = "{base_url}"',
            f'model = "{model}"',
            'api_key_env = "TEST_MODEL_KEY"',
            "timeout = 10",
            "options = { stall_timeout = 2 }",
            "",
        ]
    for key, value in extra.items():
        lines.append(f"{key} = {value}")
    path.write_text("\n".join(lines))
    return path


@pytest.fixture
def settings(tmp_path: Path, database_url: str, openai_server: tuple[str, OpenAICompatibleServer]) -> Settings:
    """Settings for a test arena: its own data dir and database, and a pool of
    two contenders served by the loopback OpenAI-compatible server."""
    base_url, _ = openai_server
    pool = write_pool(tmp_path / "arena.toml", base_url, {"model-one": "echo-one", "model-two": "echo-two"})
    # tests vote the moment a battle is ready: no reading time here (tests/battles/test_integrity.py sets one)
    pool.write_text(pool.read_text() + "\n[integrity]\nmin_read_seconds = 0\nread_chars_per_second = 1e9\n")
    return Settings(
        env="test",
        data_dir=tmp_path / "data",
        database_url=database_url,
        config=pool,
        secret_key="test-secret-key",
        admin_token="test-admin-token-0123456789",
        battle_timeout=20,
    )


@pytest.fixture
async def app(settings: Settings):  # type: ignore[no-untyped-def]
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def client(app) -> AsyncIterator[httpx.AsyncClient]:  # type: ignore[no-untyped-def]
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


@pytest.fixture
def photo_bytes() -> bytes:
    """A real photo from the GeoBrowse sample."""
    return (SAMPLE_DIR / "images" / "level1-1.jpg").read_bytes()


# -- the sample photos, opened (GATE's tools and the image operations) ------------


@pytest.fixture
def load_photo():  # type: ignore[no-untyped-def]
    """Open any sample photo by file name."""
    from tests.photos import photo

    return photo


@pytest.fixture
def street():  # type: ignore[no-untyped-def]
    """Tokyo street: trees, a car, a fence, road markings; no sky."""
    from tests.photos import photo

    return photo("level1-1.jpg")


@pytest.fixture
def town():  # type: ignore[no-untyped-def]
    """A hillside town under an overcast sky, blue roofs, mountains."""
    from tests.photos import photo

    return photo("level1-55.jpg")


@pytest.fixture
def street_jpeg():  # type: ignore[no-untyped-def]
    from tests.photos import contender_photo

    return contender_photo("level1-1.jpg")
