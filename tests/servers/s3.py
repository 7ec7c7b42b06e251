"""A real S3-compatible server on loopback: moto's server mode in its own process.

It speaks the S3 REST protocol (SigV4, path-style buckets, checksums), so the
arena's store talks to it exactly as it would to MinIO or AWS."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.servers import free_port

# moto accepts any credentials; these are the variables boto3 reads, as in production
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "arena-test-key",
    "AWS_SECRET_ACCESS_KEY": "arena-test-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@dataclass(frozen=True)
class S3Server:
    endpoint_url: str

    def env(self) -> dict[str, str]:
        """What a replica needs to reach it (besides ARENA_IMAGE_STORE)."""
        return {"ARENA_S3_ENDPOINT_URL": self.endpoint_url, **CREDENTIALS}

    def client(self) -> Any:
        import boto3

        return boto3.session.Session(
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            region_name=CREDENTIALS["AWS_DEFAULT_REGION"],
        ).client("s3", endpoint_url=self.endpoint_url)

    def create_bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        return name


@contextmanager
def s3_server(log: Path) -> Iterator[S3Server]:
    """`moto_server` on a free loopback port until the block ends."""
    port = free_port()
    moto = Path(sys.executable).with_name("moto_server")
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(moto), "-H", "127.0.0.1", "-p", str(port)], stdout=out, stderr=subprocess.STDOUT
        )
    server = S3Server(f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"moto_server exited with {process.returncode}: {log.read_text()[-2000:]}")
            try:
                httpx.get(server.endpoint_url + "/", timeout=1, trust_env=False)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise RuntimeError("moto_server did not answer within 30 s") from None
                time.sleep(0.1)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
