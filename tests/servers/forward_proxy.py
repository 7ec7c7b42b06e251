"""A forward HTTP proxy on loopback for tests: absolute-URI requests, no CONNECT.

It reads each request's head, records the URL it was asked for in `forwarded`,
sends the request on to its origin in origin form (with `Connection: close`, so
one connection carries one request) and relays bytes both ways until the origin
closes.
"""

from __future__ import annotations

import selectors
import socket
import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit


class ForwardProxy(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        self.forwarded: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Forward(socketserver.BaseRequestHandler):
    server: ForwardProxy

    def handle(self) -> None:
        client: socket.socket = self.request
        head, rest = _read_head(client)
        if head is None:
            return
        request_line, *headers = head.decode("latin-1").split("\r\n")
        method, target, version = request_line.split(" ", 2)
        self.server.forwarded.append(target)
        parts = urlsplit(target)
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        kept = [line for line in headers if line and not line.lower().startswith(("connection:", "proxy-"))]
        upstream_head = "\r\n".join([f"{method} {path} {version}", *kept, "Connection: close", "", ""])
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=30) as origin:
            origin.sendall(upstream_head.encode("latin-1") + rest)
            _relay(client, origin)


def _read_head(connection: socket.socket) -> tuple[bytes | None, bytes]:
    received = b""
    while b"\r\n\r\n" not in received:
        piece = connection.recv(65536)
        if not piece:
            return None, b""
        received += piece
    head, _, rest = received.partition(b"\r\n\r\n")
    return head, rest


def _relay(client: socket.socket, origin: socket.socket) -> None:
    """Bytes both ways until the origin has answered and closed."""
    with selectors.DefaultSelector() as selector:
        selector.register(client, selectors.EVENT_READ, origin)
        selector.register(origin, selectors.EVENT_READ, client)
        while True:
            for key, _ in selector.select(timeout=30):
                source: socket.socket = key.fileobj  # type: ignore[assignment]
                piece = source.recv(65536)
                if not piece:
                    return
                key.data.sendall(piece)


@contextmanager
def forward_proxy() -> Iterator[ForwardProxy]:
    proxy = ForwardProxy()
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        proxy.shutdown()
        proxy.server_close()
