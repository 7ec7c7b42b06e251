"""Content-addressed image storage: one object per SHA-256, in a local
directory (the default) or an S3-compatible bucket shared by every replica.

The same photo uploaded twice is stored once. A reader never sees half an
image: the local store writes a temporary file and renames it into place, and
an S3 PUT is atomic. `open_image_store(location)` picks the backend from
`ARENA_IMAGE_STORE`: a path, or `s3://bucket/prefix`.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from arena.config import Settings

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_CONTENT_TYPES = {"jpg": "image/jpeg", "png": "image/png"}


class ImageStore(Protocol):
    """Stores JPEG/PNG bytes by their SHA-256 hex digest. Blocking calls: run them in a thread
    from async code. `get` raises KeyError for a malformed or missing digest; any call raises
    StoreUnavailable when the store itself does not answer."""

    def put(self, data: bytes, ext: str = "jpg") -> str: ...

    def get(self, sha: str, ext: str = "jpg") -> bytes: ...

    def exists(self, sha: str, ext: str = "jpg") -> bool: ...

    def check(self) -> None:
        """Raise StoreUnavailable unless a photo could be stored now (readiness)."""


class StoreUnavailable(Exception):
    """The store does not answer: the bucket unreachable or refusing us, the directory
    unwritable or gone. The message names the store, never its address or path."""


def store_for(settings: Settings) -> ImageStore:
    """The deployment's image store (ARENA_IMAGE_STORE, ARENA_S3_ENDPOINT_URL)."""
    return open_image_store(settings.image_location, endpoint_url=settings.s3_endpoint_url)


def open_image_store(location: str | Path, *, endpoint_url: str = "") -> ImageStore:
    """The store at `location`: `s3://bucket/prefix` (credentials from the usual AWS variables,
    `endpoint_url` for MinIO, Ceph, R2 ...) or a local directory."""
    text = str(location)
    if text.startswith("s3://"):
        bucket, _, prefix = text.removeprefix("s3://").partition("/")
        if not bucket:
            raise ValueError(f"ARENA_IMAGE_STORE={text!r} names no bucket (expected s3://bucket/prefix)")
        return S3ImageStore(bucket, prefix, endpoint_url=endpoint_url)
    if "://" in text:
        raise ValueError(f"ARENA_IMAGE_STORE={text!r}: only a directory or s3://bucket/prefix is understood")
    return LocalImageStore(Path(text))


def _checked(sha: str) -> str:
    if not _SHA256.match(sha):
        raise KeyError(sha)
    return sha


class LocalImageStore:
    """A file per image under `root`, fanned out by the digest's first two characters."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def put(self, data: bytes, ext: str = "jpg") -> str:
        sha = hashlib.sha256(data).hexdigest()
        path = self._path(sha, ext)
        if not path.exists():
            with _local_errors("written"):
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
        path = self.path(sha, ext)
        with _local_errors("read"):
            return path.read_bytes()

    def check(self) -> None:
        """A file can be made and removed in the directory (made if missing, as `put` would)."""
        with _local_errors("written"):
            self.root.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=self.root, prefix=".ready-")
            os.close(fd)
            os.unlink(probe)

    def path(self, sha: str, ext: str = "jpg") -> Path:
        """Where an image lives; KeyError for a malformed or missing digest."""
        path = self._path(_checked(sha), ext)
        if not path.exists():
            raise KeyError(sha)
        return path

    def exists(self, sha: str, ext: str = "jpg") -> bool:
        return bool(_SHA256.match(sha)) and self._path(sha, ext).exists()

    def _path(self, sha: str, ext: str) -> Path:
        # two-level fan-out keeps directories small at millions of images
        return self.root / sha[:2] / f"{sha}.{ext}"


class S3ImageStore:
    """One object per image at `<prefix>/<sha[:2]>/<sha>.<ext>` in an S3-compatible bucket.

    The key layout is the local store's, so a directory synced to the bucket
    (`aws s3 sync arena-data/images s3://bucket/prefix`) is read unchanged."""

    def __init__(self, bucket: str, prefix: str = "", *, endpoint_url: str = "", client: Any = None) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self._client: Any = client if client is not None else _s3_client(endpoint_url)
        self._endpoint_url = endpoint_url
        self._probe_client: Any = client

    def put(self, data: bytes, ext: str = "jpg") -> str:
        sha = hashlib.sha256(data).hexdigest()
        key = self._key(sha, ext)
        # content-addressed: an object already there holds these very bytes
        if not self._head(key):
            with self._errors():
                self._client.put_object(
                    Bucket=self.bucket,
                    Key=key,
                    Body=data,
                    ContentType=_CONTENT_TYPES.get(ext, "application/octet-stream"),
                    ChecksumAlgorithm="SHA256",  # the server refuses a body that arrived damaged
                )
        return sha

    def get(self, sha: str, ext: str = "jpg") -> bytes:
        key = self._key(_checked(sha), ext)
        with self._errors(missing=KeyError(sha)):
            answer = self._client.get_object(Bucket=self.bucket, Key=key)
            body: bytes = answer["Body"].read()
        return body

    def exists(self, sha: str, ext: str = "jpg") -> bool:
        return bool(_SHA256.match(sha)) and self._head(self._key(sha, ext))

    def check(self) -> None:
        """The bucket answers HEAD, asked with short timeouts and no retries (a probe must answer)."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self._probe().head_bucket(Bucket=self.bucket)
        except ClientError as exc:
            if _missing(exc):
                raise StoreUnavailable(f"the S3 bucket {self.bucket} does not exist") from None
            raise StoreUnavailable(f"the S3 bucket {self.bucket} refused us ({_code(exc)})") from None
        except BotoCoreError as exc:
            raise StoreUnavailable(f"the S3 bucket {self.bucket} did not answer ({type(exc).__name__})") from None

    def _head(self, key: str) -> bool:
        with self._errors(missing=False):
            self._client.head_object(Bucket=self.bucket, Key=key)
            return True
        return False  # missing

    @contextmanager
    def _errors(self, missing: Exception | bool | None = None) -> Iterator[None]:
        """A missing object raises `missing` (an exception) or is left to the caller (False);
        any other failure of the store is StoreUnavailable."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            yield
        except ClientError as exc:
            if missing is not None and _missing(exc):
                if isinstance(missing, Exception):
                    raise missing from None
                return
            raise StoreUnavailable(f"the S3 bucket {self.bucket} refused us ({_code(exc)})") from exc
        except BotoCoreError as exc:
            raise StoreUnavailable(f"the S3 bucket {self.bucket} did not answer ({type(exc).__name__})") from exc

    def _probe(self) -> Any:
        if self._probe_client is None:
            self._probe_client = _s3_client(self._endpoint_url, probe=True)
        return self._probe_client

    def _key(self, sha: str, ext: str) -> str:
        name = f"{sha[:2]}/{sha}.{ext}"
        return f"{self.prefix}/{name}" if self.prefix else name


@contextmanager
def _local_errors(doing: str) -> Iterator[None]:
    try:
        yield
    except OSError as exc:  # full, read-only, unmounted, not a directory, no permission
        raise StoreUnavailable(f"the image directory cannot be {doing} ({type(exc).__name__})") from exc


def _missing(exc: Any) -> bool:
    return _code(exc) in ("404", "NoSuchKey", "NotFound")


def _code(exc: Any) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _s3_client(endpoint_url: str, *, probe: bool = False) -> Any:
    """The bucket's client; `probe`: one for readiness checks, which gives up within seconds."""
    # boto3 is imported only when an S3 store is configured: it takes a while to load
    import boto3
    from botocore.config import Config

    # path-style addressing works on every S3-compatible server (MinIO, Ceph, moto) and on AWS
    config = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3, "mode": "standard"})
    if probe:
        config = config.merge(Config(connect_timeout=2, read_timeout=3, retries={"max_attempts": 1}))
    return boto3.session.Session().client("s3", endpoint_url=endpoint_url or None, config=config)
