"""Debian's nginx on loopback, as the test user, with the arena's own proxy
rules (deploy/nginx/http.conf and locations.conf) in front of the replicas a
test names."""

from __future__ import annotations

import getpass
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.servers import free_port

ROOT = Path(__file__).resolve().parents[2]
LOCATIONS = ROOT / "deploy" / "nginx" / "locations.conf"
HTTP_SETTINGS = ROOT / "deploy" / "nginx" / "http.conf"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
PIN = "X-Arena-Replica"  # test header: send this request to that replica, not the round robin


@dataclass(frozen=True)
class Proxy:
    url: str
    access_log: Path  # the test's own format: which replica served what
    shipped_log: Path  # the same requests in the shipped `arena` format

    def requests(self) -> list[tuple[str, str, str]]:
        """(replica host:port, method, path) of each request nginx passed on, as they ended."""
        lines = self.access_log.read_text().splitlines()
        return [(upstream, method, uri) for upstream, method, uri, _ in (line.split(" ") for line in lines)]


@contextmanager
def nginx_proxy(base: Path, replicas: dict[str, str]) -> Iterator[Proxy]:
    """nginx round-robin over `replicas` (name -> http://host:port); a request with
    `X-Arena-Replica: name` goes to that one."""
    if not Path(NGINX).exists():
        pytest.fail("nginx not found: `apt-get install -y nginx` (it is in the Makefile's DEBIAN_PACKAGES)")
    base.mkdir(parents=True, exist_ok=True)
    port = free_port()
    hosts = {name: url.removeprefix("http://") for name, url in replicas.items()}
    pinned = "\n".join(f"        upstream {name} {{ server {host}; keepalive 8; }}" for name, host in hosts.items())
    pins = "\n".join(f"            {name} {name};" for name in hosts)
    # as root, nginx would hand its worker to `nobody`, which cannot write the temp dirs here
    user = f"user {getpass.getuser()};" if os.geteuid() == 0 else ""
    temp = "\n".join(
        f"        {kind}_temp_path {base}/{kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    config = base / "nginx.conf"
    config.write_text(f"""
    {user}
    worker_processes 1;
    daemon off;
    pid {base}/nginx.pid;
    error_log {base}/error.log warn;
    events {{ worker_connections 512; }}
    http {{
        include {HTTP_SETTINGS};
        log_format upstream '$upstream_addr $request_method $uri $status';
        access_log {base}/access.log upstream;
        access_log {base}/arena-access.log arena;
{temp}
        upstream arena {{
{chr(10).join(f"            server {host};" for host in hosts.values())}
            keepalive 16;
        }}
{pinned}
        map $http_x_arena_replica $arena_backend {{
            default arena;
{pins}
        }}
        server {{
            listen 127.0.0.1:{port};
            include {LOCATIONS};
        }}
    }}
    """)
    check = subprocess.run(
        [NGINX, "-t", "-q", "-e", str(base / "error.log"), "-p", str(base), "-c", str(config)],
        capture_output=True,
        text=True,
    )
    if check.returncode != 0:
        pytest.fail(f"nginx refused its test config:\n{check.stderr}")
    log = (base / "nginx.out").open("wb")
    process = subprocess.Popen(
        [NGINX, "-e", str(base / "error.log"), "-p", str(base), "-c", str(config)], stdout=log, stderr=subprocess.STDOUT
    )
    proxy = Proxy(f"http://127.0.0.1:{port}", base / "access.log", base / "arena-access.log")
    try:
        deadline = time.monotonic() + 20
        while True:
            if process.poll() is not None:
                pytest.fail(f"nginx exited with {process.returncode}: {(base / 'error.log').read_text()[-2000:]}")
            try:
                httpx.get(proxy.url + "/healthz", timeout=1, trust_env=False)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    pytest.fail("nginx did not answer within 20 s")
                time.sleep(0.05)
        yield proxy
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
