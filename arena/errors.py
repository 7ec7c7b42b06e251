"""Refusals a person reads: every one is answered as
`{"error": code, "message": text}` with its 4xx/5xx status."""

from __future__ import annotations


class ClientError(Exception):
    """A request we refuse, with a status, a stable code and a sentence for a person."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
