"""The `arena` command: serve the arena, manage the database, and the batch
jobs of the other packages (rank, export, import, classify, models, ...).

Each package's `cli` module adds its commands and imports its heavy parts
only when one of them runs, so `arena --help` stays fast."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from arena.config import Settings

# command -> the package module that adds it (its `register`). A command line
# that names one imports only that module: `arena rank` then never loads the
# web stack, the database layer of the pool or the gatekeeper's model.
COMMAND_MODULES = {
    "models": "arena.pool.cli",
    "classify": "arena.gatekeeper.cli",
    "unsure": "arena.gatekeeper.cli",
    "rank": "arena.ratings.cli",
    "export": "arena.export.cli",
    "import": "arena.export.cli",
    "bench": "arena.bench.cli",
    "judge": "arena.judge.cli",
    "reviewers": "arena.review.cli",
    "review": "arena.review.cli",
    "audit": "arena.audit.cli",
}


def main(argv: Sequence[str] | None = None) -> int:
    console = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    if console and argv[:1] == ["rank"]:
        _arrow_without_pandas()
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if getattr(args, "verbose", False) else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not hasattr(args, "func"):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except (ValueError, FileNotFoundError) as exc:
        print(f"arena: {exc}", file=sys.stderr)
        return 1


def _arrow_without_pandas() -> None:
    """pyarrow imports pandas (half a CPU-second) at its first conversion of a
    Python or numpy value, only to recognise pandas objects among them; `arena
    rank` hands it none. So the console command lets that first look fail:
    pyarrow then no longer special-cases pandas objects in conversions, and
    still imports pandas when a caller asks for a DataFrame. In-process
    callers (tests) keep pyarrow as it is."""
    if "pandas" in sys.modules:
        return
    import pyarrow

    class NoPandas:
        def find_spec(self, name: str, *args: object) -> None:
            if name == "pandas":
                raise ImportError("pandas is not needed here")

    blocker = NoPandas()
    sys.meta_path.insert(0, blocker)
    try:
        pyarrow.array([0])
    finally:
        sys.meta_path.remove(blocker)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with every command, or with only `command`'s module when
    it names one of COMMAND_MODULES (its help and its errors are the same)."""
    parser = argparse.ArgumentParser(prog="arena", description="GeoArena: a geographic VLM arena.")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    serve = sub.add_parser("serve", help="upgrade the database, then serve the arena")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=1)
    serve.add_argument(
        "--loop",
        choices=["asyncio", "uvloop"],
        default="asyncio",
        help="event loop (default asyncio: uvloop accepts one connection a loop turn, so a busy replica "
        "took new streams at 3 a second)",
    )
    serve.add_argument("--reload", action="store_true", help="restart on code changes (development)")
    serve.set_defaults(func=_serve)

    db = sub.add_parser("db", help="database schema")
    db_sub = db.add_subparsers(title="db commands", metavar="DBCOMMAND")
    upgrade = db_sub.add_parser("upgrade", help="apply Alembic migrations up to head")
    upgrade.add_argument("revision", nargs="?", default="head")
    upgrade.set_defaults(func=_db_upgrade)

    if command in ("serve", "db"):
        wanted: Sequence[str] = []
    elif command in COMMAND_MODULES:
        wanted = [COMMAND_MODULES[command]]
    else:  # `arena --help`, no command or an unknown one: every command
        wanted = list(COMMAND_MODULES.values())
    for module in dict.fromkeys(wanted):
        importlib.import_module(module).register(sub)
    return parser


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from arena.db.migrate import upgrade
    from arena.web.terms import check_terms_file

    settings = Settings()
    _ = settings.pool  # fail early, with the pool file's error, before binding the port
    check_terms_file(settings)
    upgrade(settings.resolved_database_url)
    print(
        f"GeoArena on http://{args.host}:{args.port}  (database: {_redacted(settings.resolved_database_url)}, "
        f"{len(settings.pool.contenders)} contenders)",
        file=sys.stderr,
    )
    uvicorn.run(
        "arena.app:create_served_app",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        reload=args.reload,
        loop=args.loop,
        log_level=settings.log_level,
        log_config=None,  # the app configures the log (ARENA_LOG_FORMAT)
        access_log=False,  # the app writes its own access line, without client addresses
        # after the app's own drain (ARENA_SHUTDOWN_GRACE) uvicorn waits this long for the last connections
        timeout_graceful_shutdown=5,
        proxy_headers=True,
        forwarded_allow_ips=settings.forwarded_allow_ips,
    )
    return 0


def _db_upgrade(args: argparse.Namespace) -> int:
    from arena.db.migrate import upgrade

    settings = Settings()
    upgrade(settings.resolved_database_url, args.revision)
    print(f"database at {args.revision}: {_redacted(settings.resolved_database_url)}", file=sys.stderr)
    return 0


def _redacted(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


if __name__ == "__main__":
    raise SystemExit(main())
