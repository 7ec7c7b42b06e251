"""The judge tests share the benchmark's loopback judge server."""

from tests.bench.conftest import judge_server  # noqa: F401  (a fixture)
