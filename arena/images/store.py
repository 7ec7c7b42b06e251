"""Content-addressed image storage: a file per SHA-256 under the data dir.

The same photo uploaded twice is stored once. Writes go to a temporary file
first and are renamed into place, so a reader never sees half an image.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class ImageStore:
    """Stores JPEG/PNG bytes by their SHA-256 hex digest."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def put(self, data: bytes, ext: str = "jpg") -> str:
        sha = hashlib.sha256(data).hexdigest()
        path = self._path(sha, ext)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        return sha

    def get(self, sha: str, ext: str = "jpg") -> bytes:
        return self.path(sha, ext).read_bytes()

    def path(self, sha: str, ext: str = "jpg") -> Path:
        """Where an image lives; KeyError for a malformed or missing digest."""
        if not _SHA256.match(sha):
            raise KeyError(sha)
        path = self._path(sha, ext)
        if not path.exists():
            raise KeyError(sha)
        return path

    def exists(self, sha: str, ext: str = "jpg") -> bool:
        return bool(_SHA256.match(sha)) and self._path(sha, ext).exists()

    def _path(self, sha: str, ext: str) -> Path:
        # two-level fan-out keeps directories small at millions of images
        return self.root / sha[:2] / f"{sha}.{ext}"
