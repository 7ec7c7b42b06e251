"""Clients that misbehave on the wire, against a real `arena serve` over raw sockets: an
upload body that trickles or stops half-way is cut off with a 408 after ARENA_UPLOAD_TIMEOUT,
and a client that goes away (mid-upload, or from an event stream) costs one log line, never
a traceback."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import SAMPLE_DIR, write_pool
from tests.web.conftest import ArenaServer, serve_arena

UPLOAD_TIMEOUT = 2.0
PHOTO = SAMPLE_DIR / "images" / "level1-1.jpg"
BOUNDARY = "arena-test-boundary"


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory, openai_server) -> Iterator[ArenaServer]:  # type: ignore[no-untyped-def]
    base = tmp_path_factory.mktemp("slow-clients")
    base_url, _ = openai_server
    # slow-* models stream for about 20 s: long enough to walk away from
    pool = write_pool(base / "arena.toml", base_url, {"slow-one": "slow-one", "slow-two": "slow-two"})
    env = {"ARENA_UPLOAD_TIMEOUT": str(UPLOAD_TIMEOUT), "ARENA_BATTLES_PER_MINUTE": "0"}
    with serve_arena(base, pool, env_extra=env) as server:
        yield server


def upload_request(server: ArenaServer) -> tuple[bytes, bytes]:
    """(request head, multipart body) of a valid battle upload."""
    body = (
        (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="prompt"\r\n\r\nWhere was this taken?\r\n'
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="p.jpg"\r\n'
            "Content-Type: image/jpeg\r\n\r\n"
        ).encode()
        + PHOTO.read_bytes()
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )
    host = server.url.removeprefix("http://")
    head = (
        f"POST /api/battles HTTP/1.1\r\nHost: {host}\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    return head, body


def connect(server: ArenaServer) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=30)


def read_answer(sock: socket.socket) -> tuple[int, dict, bytes]:
    """Status, JSON body and the rest, read until the server closes the connection."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(body), head


def log_lines(server: ArenaServer, since: int) -> list[str]:
    return server.log.read_text(errors="replace").splitlines()[since:]


def wait_for_log(server: ArenaServer, since: int, needle: str, timeout: float = 15) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = log_lines(server, since)
        if any(needle in line for line in lines):
            time.sleep(0.5)  # a traceback would follow within this
            return log_lines(server, since)
        time.sleep(0.1)
    return log_lines(server, since)


class TestUploadTimeout:
    def test_a_body_that_stops_half_way_gets_a_408(self, arena: ArenaServer) -> None:
        head, body = upload_request(arena)
        with connect(arena) as sock:
            sock.sendall(head + body[: len(body) // 2])
            started = time.monotonic()
            status, answer, headers = read_answer(sock)
            waited = time.monotonic() - started
        assert status == 408 and answer["error"] == "upload_timeout", answer
        assert f"within {UPLOAD_TIMEOUT:g} seconds" in answer["message"]
        assert b"connection: close" in headers.lower()
        # cut off at the configured time, not at some other timeout (generous for a loaded host)
        assert UPLOAD_TIMEOUT - 0.5 <= waited < UPLOAD_TIMEOUT + 20

    def test_a_trickled_body_gets_a_408(self, arena: ArenaServer) -> None:
        head, body = upload_request(arena)
        with connect(arena) as sock:
            sock.sendall(head)
            sock.settimeout(0.3)
            answer = b""
            give_up = time.monotonic() + UPLOAD_TIMEOUT + 20  # fail, not hang, when nothing cuts us off
            for offset in range(0, len(body), 64):  # 64 bytes every 0.3 s: the photo would take minutes
                if time.monotonic() > give_up:
                    break
                try:
                    sock.sendall(body[offset : offset + 64])
                    answer += sock.recv(65536)
                except TimeoutError:
                    continue
                except (BrokenPipeError, ConnectionResetError):
                    break
                if answer:
                    break
            sock.settimeout(10)
            try:
                while chunk := sock.recv(65536):
                    answer += chunk
            except ConnectionResetError:
                pass
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert b'"upload_timeout"' in answer

    def test_an_upload_in_time_still_starts_a_battle(self, arena: ArenaServer) -> None:
        head, body = upload_request(arena)
        with connect(arena) as sock:
            sock.sendall(head + body)
            data = b""
            while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
                data += sock.recv(65536)
        assert data.startswith(b"HTTP/1.1 201"), data[:300]


class TestQuietDisconnects:
    def test_an_aborted_upload_logs_one_line(self, arena: ArenaServer) -> None:
        since = len(log_lines(arena, 0))
        head, body = upload_request(arena)
        with connect(arena) as sock:
            sock.sendall(head + body[: len(body) // 2])
            time.sleep(0.3)
        lines = wait_for_log(arena, since, "closed the connection")
        said = [line for line in lines if "closed the connection" in line]
        assert (
            len(said) == 1 and "WARNING arena.app: the client closed the connection during POST /api/battles" in said[0]
        )
        assert not any("Traceback" in line or "ClientDisconnect" in line for line in lines), "\n".join(lines)

    def test_a_dropped_event_stream_logs_no_traceback(self, arena: ArenaServer) -> None:
        created = httpx.post(
            f"{arena.url}/api/battles",
            files={"image": ("p.jpg", PHOTO.read_bytes(), "image/jpeg")},
            data={"prompt": "Where was this taken?"},
            trust_env=False,
            timeout=30,
        )
        assert created.status_code == 201, created.text
        events_url = created.json()["events_url"]
        since = len(log_lines(arena, 0))
        host = arena.url.removeprefix("http://")
        with connect(arena) as sock:
            sock.sendall(f"GET {events_url} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n".encode())
            seen = b""
            while b"delta" not in seen:  # the answers are streaming
                seen += sock.recv(65536)
        # the watcher is gone; the battle goes on and another watcher can still follow it
        with httpx.stream("GET", f"{arena.url}{events_url}", trust_env=False, timeout=60) as again:
            assert again.status_code == 200
            text = "".join(again.iter_text())
        assert "event: end" in text  # (the slow answers outlast the pool's 10 s timeout: that is the end here)
        lines = log_lines(arena, since)
        assert not any("Traceback" in line or "CancelledError" in line for line in lines), "\n".join(lines)
