"""Settings from the environment and the pool file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from arena.config import DEFAULT_SECRET, Settings, load_pool

POOL_OF_TWO = """
[[contenders]]
name = "one"
provider = "baseline"
model = "ocr-geolocator"

[[contenders]]
name = "two"
provider = "baseline"
model = "ocr-geolocator"

"""


class TestSettings:
    def test_environment_prefix(self, monkeypatch, tmp_path):
        monkeypatch.setenv("ARENA_DATA_DIR", str(tmp_path))
        monkeypatch.setenv("ARENA_MAX_UPLOAD_BYTES", "1000")
        settings = Settings()
        assert settings.data_dir == tmp_path and settings.max_upload_bytes == 1000
        assert settings.resolved_database_url == f"sqlite:///{tmp_path.resolve()}/arena.db"

    def test_default_secret_refused_in_production(self):
        with pytest.raises(ValueError, match="ARENA_SECRET_KEY"):
            Settings(env="production", secret_key=DEFAULT_SECRET)
        with pytest.raises(ValueError, match="ARENA_SECRET_KEY"):
            Settings(env="production", secret_key="short")
        assert Settings(env="production", secret_key="x" * 32).secret_key == "x" * 32

    def test_a_missing_pool_file_is_an_error_in_production(self, tmp_path):
        settings = Settings(env="production", secret_key="x" * 32, config=tmp_path / "arena.toml")
        with pytest.raises(ValueError, match="does not exist"):
            _ = settings.pool
        assert Settings(config=tmp_path / "arena.toml").pool.contenders[0].provider == "baseline"

    def test_searxng_url_from_the_environment_points_gate_web_search_there(self, monkeypatch, tmp_path):
        pool = tmp_path / "arena.toml"
        pool.write_text(POOL_OF_TWO + '[tools]\nsearch_backend = "brave"\nsearch_results = 4\n')
        assert Settings(config=pool).pool.tools.search_backend == "brave"  # unset: the pool file's
        monkeypatch.setenv("ARENA_SEARXNG_URL", "http://searxng:8080")
        tools = Settings(config=pool).pool.tools
        assert (tools.search_backend, tools.search_url) == ("searxng", "http://searxng:8080")
        assert tools.search_results == 4  # the rest of [tools] stays as written

    def test_default_secret_allowed_in_development(self):
        assert Settings(env="development").secret_key == DEFAULT_SECRET


class TestPoolFile:
    def test_no_file_means_the_offline_pool(self, tmp_path):
        pool = load_pool(tmp_path / "missing.toml")
        assert [c.name for c in pool.contenders] == ["ocr-geolocator", "ocr-geolocator+gate"]
        assert all(c.label == "baseline" for c in pool.contenders)

    def test_reads_contenders(self, tmp_path):
        path = tmp_path / "arena.toml"
        path.write_text(
            '[[contenders]]\nname = "gpt-4o"\nprovider = "openai"\nbase_url = "https://api.openai.com/v1"\n'
            'model = "gpt-4o"\napi_key_env = "OPENAI_API_KEY"\nweight = 2\nmax_tokens = 800\n\n'
            '[[contenders]]\nname = "gpt-4o+gate"\nprovider = "openai"\nbase_url = "https://api.openai.com/v1"\n'
            'model = "gpt-4o"\ngate = true\n'
        )
        pool = load_pool(path)
        first, second = pool.contenders
        assert (first.weight, first.max_tokens, first.gate, second.gate) == (2, 800, False, True)

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("[[contenders]\nname=", "not valid TOML"),
            ('[[contenders]]\nname = "a"\nprovider = "openai"\nbogus = 1\n', "bogus"),
            ('[[contenders]]\nname = "a"\nprovider = "openai"\n', "at least two contenders"),
            (
                '[[contenders]]\nname = "a"\nprovider = "openai"\n[[contenders]]\nname = "a"\nprovider = "openai"\n',
                "repeated: a",
            ),
            ('[[contenders]]\nname = "a"\nprovider = "openai"\nweight = -1\n', "weight"),
        ],
    )
    def test_mistakes_are_named(self, tmp_path, text, message):
        path = tmp_path / "arena.toml"
        path.write_text(text)
        with pytest.raises(ValueError, match=message):
            load_pool(path)

    def test_a_directory_is_not_a_pool_file(self, tmp_path):
        with pytest.raises(ValueError, match="is a directory"):
            load_pool(tmp_path)


class TestExamplePoolFile:
    async def test_the_readme_example_loads_and_builds_every_contender(self, tmp_path):
        import httpx

        from arena.contenders.compose import ProviderDeps, build_pool
        from arena.gatekeeper import build_gatekeeper
        from arena.images.store import LocalImageStore
        from tests.conftest import ROOT

        pool_config = load_pool(ROOT / "arena.example.toml")
        async with httpx.AsyncClient() as http:
            deps = ProviderDeps(http=http, images=LocalImageStore(tmp_path), pool=pool_config)
            pool = build_pool(deps)
            build_gatekeeper(pool_config, deps)
        assert len(pool) == len(pool_config.contenders) == 10
        assert pool["gpt-4o+gate"].gate and not pool["gpt-4o"].gate
        assert pool["gpt-4o+fixed"].gate and type(pool["gpt-4o+fixed"]).__name__ == "FixedPolicyContender"
        search_only = pool["gpt-4o+search"]
        assert [t.name for t in search_only.tools] == ["visit", "web_search"]  # type: ignore[attr-defined]
        # without ARENA_PUBLIC_URL the search engine could not fetch the image: the tool says so
        assert "ARENA_PUBLIC_URL" in search_only.disabled["reverse_image_search"]  # type: ignore[attr-defined]


class TestDocumentedSettings:
    def test_readme_table_lists_every_setting(self):
        # The README's configuration table and the Settings class name the same variables.
        readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
        documented = set(re.findall(r"^\| `(ARENA_[A-Z0-9_]+)` \|", readme, flags=re.MULTILINE))
        declared = {f"ARENA_{name.upper()}" for name in Settings.model_fields}
        assert documented == declared, (
            f"in Settings but not in the README: {sorted(declared - documented)}; "
            f"in the README but not in Settings: {sorted(documented - declared)}"
        )


class TestPoolSections:
    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("[sampeling]\nfailure_threshold = 2\n", "sampeling"),
            ("[ratings]\nrouns = 10\n", "rouns"),
            ("[gatekeeper]\nmodee = 'off'\n", "modee"),
            ("[tools]\nmax_turn = 3\n", "max_turn"),
        ],
    )
    def test_misspelled_table_or_key_is_named(self, tmp_path, text, message):
        path = tmp_path / "arena.toml"
        path.write_text(POOL_OF_TWO + text)
        with pytest.raises(ValueError, match=message):
            load_pool(path)


class TestBattlesTrajectory:
    def test_collapsed_unless_the_pool_file_says_otherwise(self, tmp_path):
        path = tmp_path / "arena.toml"
        path.write_text(POOL_OF_TWO)
        assert load_pool(path).battles.trajectory == "collapsed"
        for mode in ("after_vote", "open", "collapsed"):
            path.write_text(POOL_OF_TWO + f'[battles]\ntrajectory = "{mode}"\n')
            assert load_pool(path).battles.trajectory == mode

    def test_an_unknown_display_is_named_with_the_choices(self, tmp_path):
        path = tmp_path / "arena.toml"
        path.write_text(POOL_OF_TWO + '[battles]\ntrajectory = "hidden"\n')
        with pytest.raises(ValueError, match=r"battles\.trajectory(.|\n)*'collapsed', 'after_vote' or 'open'"):
            load_pool(path)
