"""A TCP relay on loopback that a test can cut: the database (or any server) behind it
goes away for whoever connects through it, as when a database host fails."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from tests.servers import free_port


class TcpRelay:
    """Relays each connection to `target` until `cut()`: then the open connections are
    closed and new ones are refused (nothing listens on the port any more)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = free_port()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, name="tcp-relay", daemon=True)
        self._thread.start()

    def cut(self) -> None:
        _close(self._listener)  # shut down first: a bare close leaves the blocked accept() listening
        with self._lock:
            for sock in self._open:
                _close(sock)
            self._open.clear()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # cut
            try:
                origin = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open |= {client, origin}
            for source, sink in ((client, origin), (origin, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            _close(sink)
            _close(source)


def _close(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


@contextmanager
def tcp_relay(host: str, port: int) -> Iterator[TcpRelay]:
    relay = TcpRelay((host, port))
    try:
        yield relay
    finally:
        relay.cut()
