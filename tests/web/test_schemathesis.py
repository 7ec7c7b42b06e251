"""Schemathesis against the served arena's own OpenAPI spec: every operation,
fed inputs generated from the spec (and ones that break it), never answers 5xx.

The arena is a real `arena serve` process on loopback with SQLite and the
offline pool, its admin API on (the token is sent, so the export and stats
handlers run rather than stopping at 401). The examples are bounded so the
whole run stays well under a minute."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.openapi import from_url
from schemathesis.schemas import APIOperation

from tests.web.conftest import ArenaServer, serve_arena

ADMIN_TOKEN = "schemathesis-admin-token-0123456789"
EXAMPLES = 25  # per operation and mode: 14 operations, about 240 requests, 50 s on the loaded host


@pytest.fixture(scope="module")
def fuzzed_arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArenaServer]:
    base = tmp_path_factory.mktemp("schemathesis")
    env = {"ARENA_ADMIN_TOKEN": ADMIN_TOKEN, "ARENA_BATTLES_PER_MINUTE": "0"}  # fuzz the intake, not the limit
    with serve_arena(base, base / "no-pool.toml", env_extra=env) as server:
        yield server


def test_no_operation_answers_5xx(fuzzed_arena: ArenaServer) -> None:
    """Each operation of the served spec, with valid inputs and with inputs that break it."""
    spec = from_url(f"{fuzzed_arena.url}/openapi.json")
    operations = [result.ok() for result in spec.get_all_operations()]
    assert len(operations) >= 10, "the served spec lost its operations"
    failures: list[str] = []
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                _fuzz(operation, mode, fuzzed_arena.url)
            except Unsatisfiable:  # nothing to break: an operation without parameters or body
                continue
            except Exception as exc:  # the shrunk failing case of this operation, then the next one
                failures.append(f"{operation.label} ({mode.value}): {exc}")
    if failures:
        errors = [line for line in fuzzed_arena.log.read_text(errors="replace").splitlines() if "Error" in line]
        pytest.fail("\n\n".join(failures) + "\n\nserver errors:\n" + "\n".join(errors[-30:]))


def _fuzz(operation: APIOperation, mode: GenerationMode, base_url: str) -> None:
    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
    )
    def call(case: Case) -> None:
        response = case.call(base_url=base_url, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=30)
        case.validate_response(response, checks=[not_a_server_error])

    call()


def test_the_spec_describes_the_upload_form(fuzzed_arena: ArenaServer) -> None:
    """Without it schemathesis would post empty bodies to the one endpoint that takes files."""
    document = httpx.get(f"{fuzzed_arena.url}/openapi.json", trust_env=False).json()
    form = document["paths"]["/api/battles"]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert {"image", "prompt"} <= set(form["required"])
    assert form["properties"]["image"]["format"] == "binary"
