"""docker-compose.yml for production, checked by `docker compose config` (there
is no Docker engine here: the file is validated and read, never run)."""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from arena.config import Settings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
SECRETS = {
    "ARENA_SECRET_KEY": "a-long-random-secret-for-the-test",
    "ARENA_ADMIN_TOKEN": "an-admin-token-for-the-test",
    "POSTGRES_PASSWORD": "pg-secret",
    "MINIO_ROOT_USER": "arena",
    "MINIO_ROOT_PASSWORD": "minio-secret",
    "SEARXNG_SECRET": "searxng-secret",
}


def compose_config(tmp_path: Path, values: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env_file = tmp_path / ".env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    compose = shutil.which("docker-compose")
    command = [compose] if compose else ["docker", "compose"]
    if not compose and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode:
        pytest.fail("neither `docker compose` nor `docker-compose` is installed (make test installs it)")
    # the suite's own environment must not fill in what the .env file leaves out
    env = {k: v for k, v in os.environ.items() if k not in SECRETS and not k.startswith("ARENA_")}
    return subprocess.run(
        [*command, "--env-file", str(env_file), "-f", str(COMPOSE), "config"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    result = compose_config(tmp_path_factory.mktemp("compose"), SECRETS)
    assert result.returncode == 0, result.stderr
    return dict(yaml.safe_load(result.stdout)["services"])


class TestComposeFile:
    def test_has_the_production_services(self, services: dict[str, Any]) -> None:
        assert {"db", "app", "nginx", "rank", "searxng", "minio", "minio-init"} <= set(services)

    def test_long_running_services_have_health_checks(self, services: dict[str, Any]) -> None:
        for name in ("db", "minio", "searxng", "app", "nginx"):
            assert services[name].get("healthcheck", {}).get("test"), name
        assert "/readyz" in " ".join(services["app"]["healthcheck"]["test"])

    def test_replicas_sit_behind_nginx_only(self, services: dict[str, Any], tmp_path: Path) -> None:
        app = services["app"]
        assert app["deploy"]["replicas"] == 2 and "ports" not in app
        assert [p for p in services["nginx"]["ports"] if "80" in str(p)]
        three = compose_config(tmp_path, {**SECRETS, "ARENA_REPLICAS": "3"})
        assert yaml.safe_load(three.stdout)["services"]["app"]["deploy"]["replicas"] == 3
        mounted = [str(v.get("source", v)) if isinstance(v, dict) else v for v in services["nginx"]["volumes"]]
        assert any("deploy/nginx/locations.conf" in m for m in mounted)
        assert "server app:8000" in (ROOT / "deploy/nginx/nginx.conf").read_text()

    def test_replicas_trust_forwarding_headers_from_nginx_alone(self, services: dict[str, Any]) -> None:
        trusted = services["app"]["environment"]["ARENA_FORWARDED_ALLOW_IPS"]
        nginx_address = services["nginx"]["networks"]["default"]["ipv4_address"]
        assert trusted == nginx_address  # one address, not "*" nor a network
        (pool,) = yaml.safe_load(COMPOSE.read_text())["networks"]["default"]["ipam"]["config"]
        subnet, dynamic = ipaddress.ip_network(pool["subnet"]), ipaddress.ip_network(pool["ip_range"])
        # nginx's address is in the network, and no other container can be handed it
        assert ipaddress.ip_address(nginx_address) in subnet
        assert ipaddress.ip_address(nginx_address) not in dynamic

    def test_nginx_logs_in_the_arena_format(self, services: dict[str, Any]) -> None:
        config = (ROOT / "deploy/nginx/nginx.conf").read_text()
        assert "include /etc/nginx/arena/http.conf;" in config
        assert re.search(r"^\s*access_log /dev/stdout arena;$", config, flags=re.M)  # no address, no query
        mounted = [str(v.get("source", v)) if isinstance(v, dict) else v for v in services["nginx"]["volumes"]]
        assert any("deploy/nginx/http.conf" in m for m in mounted)

    def test_replicas_share_postgres_and_the_bucket(self, services: dict[str, Any]) -> None:
        env = services["app"]["environment"]
        assert env["ARENA_DATABASE_URL"].startswith("postgresql+psycopg://arena:pg-secret@db:5432/")
        assert env["ARENA_IMAGE_STORE"].startswith("s3://")
        assert env["ARENA_S3_ENDPOINT_URL"] == "http://minio:9000"
        assert env["AWS_SECRET_ACCESS_KEY"] == "minio-secret"  # from .env, never written in the file
        assert env["ARENA_RANK_EVERY"] == "0" and "rank" in services["rank"]["command"]
        bucket = env["ARENA_IMAGE_STORE"].removeprefix("s3://").split("/")[0]
        assert f"store/{bucket}" in " ".join(services["minio-init"]["command"])

    def test_searxng_answers_json_at_the_address_the_replicas_are_given(
        self, services: dict[str, Any], tmp_path: Path
    ) -> None:
        settings = yaml.safe_load((ROOT / "deploy/searxng/settings.yml").read_text())
        assert "json" in settings["search"]["formats"]
        assert "searxng:8080" in services["searxng"]["environment"]["SEARXNG_BASE_URL"]
        url = services["app"]["environment"]["ARENA_SEARXNG_URL"]
        assert url == "http://searxng:8080"
        # what a replica makes of it: GATE's web search at that SearxNG, whatever arena.toml's [tools] say
        pool = tmp_path / "arena.toml"
        pool.write_text((ROOT / "arena.example.toml").read_text())
        tools = Settings(config=pool, searxng_url=url).pool.tools
        assert (tools.search_backend, tools.search_url) == ("searxng", url)

    def test_every_image_is_pinned_to_an_exact_release(self, services: dict[str, Any]) -> None:
        version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
        exact = re.compile(r"\d+\.\d+\.\d+|RELEASE\.\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ|\d{4}\.\d+\.\d+-[0-9a-f]{7,}")
        for name, service in services.items():
            image, _, tag = service["image"].rpartition(":")
            # PostgreSQL numbers its releases major.minor (16.6); nginx 1.27 would be a series
            pinned = re.fullmatch(r"\d+\.\d+", tag) if image == "postgres" else exact.fullmatch(tag)
            assert image and pinned, f"{name}: {service['image']} is not an exact release"
            if image == "geoarena":
                assert tag == version, f"{name}: geoarena:{tag}, but pyproject.toml says {version}"


class TestSecrets:
    def test_without_the_secrets_compose_refuses_and_says_which(self, tmp_path: Path) -> None:
        result = compose_config(tmp_path, {k: v for k, v in SECRETS.items() if k != "ARENA_SECRET_KEY"})
        assert result.returncode != 0
        assert "set ARENA_SECRET_KEY in .env" in result.stderr

    def test_env_example_lists_every_variable_the_file_reads(self) -> None:
        used = set(re.findall(r"\$\{(\w+)", COMPOSE.read_text()))
        listed = set(re.findall(r"^(\w+)=", (ROOT / ".env.example").read_text(), flags=re.M))
        assert used == listed, (sorted(used - listed), sorted(listed - used))
