"""Settings: the deployment from the environment (ARENA_ prefix), the pool
and its tools from `arena.toml`.

`Settings` says where things live and which secrets to use; `PoolConfig`
says which contenders battle and how. With no pool file the offline pool of
baselines is used, so a fresh checkout needs no keys.
"""

from __future__ import annotations

import os
import re
import tomllib
from functools import cached_property
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_SECRET = "change-me-development-only"
DEFAULT_RANK_EVERY = "30s"  # how often `arena serve` re-ranks when votes arrived
DATABASE_CONNECTIONS = 30  # ARENA_DATABASE_CONNECTIONS: PostgreSQL connections of one process
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def interval_seconds(text: str) -> float:
    """`30s` -> 30.0, `10m` -> 600.0, `0` -> 0.0 (off); a bare number is seconds."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"{text!r} is not an interval like 30s, 10m or 1h (0 turns it off)")
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


class Settings(BaseSettings):
    """The deployment. Every field can be set as ARENA_<NAME>."""

    model_config = SettingsConfigDict(env_prefix="ARENA_", extra="ignore")

    env: Literal["development", "production", "test"] = "development"
    data_dir: Path = Path("./arena-data")
    database_url: str = ""  # empty: SQLite file under data_dir
    config: Path = Path("./arena.toml")
    # where photos live: empty = `images/` under data_dir; a directory; or s3://bucket/prefix,
    # shared by every replica (credentials from the usual AWS_* variables)
    image_store: str = ""
    s3_endpoint_url: str = ""  # an S3-compatible server (MinIO, Ceph, R2); empty: AWS itself
    secret_key: str = DEFAULT_SECRET
    admin_token: str = ""
    # the arena's address as the internet reaches it (https://arena.example.org): a
    # reverse image search engine fetches GATE's images from here
    public_url: str = ""
    # GATE's web search at this SearxNG (the compose file's): over `[tools]` search_backend/search_url
    searxng_url: str = ""

    # image intake
    max_upload_bytes: int = 15 * 1024 * 1024
    upload_timeout: float = 60.0  # seconds for a whole upload body to arrive (408 after: slow or stalled clients)
    max_pixels: int = 40_000_000
    contender_long_side: int = 2048
    max_prompt_chars: int = 2000
    # decodes run at once are bounded so their memory stays under this (about 10 bytes a pixel)
    decode_memory_mb: int = 1024

    # battles
    battle_timeout: float = 180.0  # seconds for both contenders together
    # opt-in photo locations are stored rounded to this many km (issue 14)
    label_precision_km: float = Field(default=1.0, gt=0, le=1000)
    battles_per_minute: int = 10  # uploads per IP address (refused ones count); 0 turns the limit off
    max_answer_chars: int = 200_000  # an answer longer than this is stopped and fails its side
    battle_lease: float = Field(default=30.0, gt=0)  # seconds a running battle's replica may go silent
    # proxies whose X-Forwarded-For is believed (comma-separated, or "*")
    forwarded_allow_ips: str = "127.0.0.1"
    # the background rating job of `arena serve`: "" = `[ratings] every` of the
    # pool file, else 30s (off under env=test); "0" turns it off
    rank_every: str = ""
    # who may read /metrics: "admin" (the admin token), "public", or "off"
    metrics: Literal["admin", "public", "off"] = "admin"
    # the operator's own terms (Markdown) for /terms; None: the built-in text
    terms_file: Path | None = None

    # on SIGTERM: seconds running battles get to finish (503 for new ones meanwhile); the rest are abandoned
    shutdown_grace: float = Field(default=30.0, ge=0)
    # `arena serve`'s log: "text" or "json" (one object a line, with the request id)
    log_format: Literal["text", "json"] = "text"
    log_level: Literal["debug", "info", "warning", "error"] = "info"

    # load: battles this replica runs at once; one more is answered 503 with Retry-After
    max_battles: int = Field(default=200, ge=1)
    # connections to each provider (one pool per origin, e.g. https://api.openai.com); 0 = two per
    # battle the replica accepts, so a stream never waits for one; `[connections]` overrides per origin
    upstream_connections: int = Field(default=0, ge=0)
    # PostgreSQL connections one `arena serve` process keeps open (and never exceeds)
    database_connections: int = Field(default=DATABASE_CONNECTIONS, ge=1)

    @field_validator("rank_every")
    @classmethod
    def _interval(cls, value: str) -> str:
        if value.strip():
            interval_seconds(value)
        return value

    @field_validator("image_store")
    @classmethod
    def _image_store(cls, value: str) -> str:
        value = value.strip()
        if value.startswith("s3://"):
            if not value.removeprefix("s3://").split("/")[0]:
                raise ValueError(f"{value!r} names no bucket (expected s3://bucket/prefix)")
        elif "://" in value:
            raise ValueError(f"{value!r}: give a directory or s3://bucket/prefix")
        elif value:
            value = str(Path(value).expanduser().absolute())  # as data_dir: from the start directory
        return value

    @field_validator("terms_file", mode="before")
    @classmethod
    def _unset_when_empty(cls, value: object) -> object:
        return None if value == "" else value

    @field_validator("data_dir", "config", "terms_file")
    @classmethod
    def _absolute(cls, path: Path | None) -> Path | None:
        # Resolved once, against the directory `arena` was started in, so the
        # database, the images and every message name the same absolute place.
        return None if path is None else path.expanduser().absolute()

    @model_validator(mode="after")
    def _refuse_default_secret(self) -> Settings:
        if self.env == "production" and (self.secret_key == DEFAULT_SECRET or len(self.secret_key) < 16):
            raise ValueError(
                "ARENA_SECRET_KEY is unset, short or at its development default; set a long random "
                "value (e.g. `python -c 'import secrets; print(secrets.token_hex(32))'`)"
            )
        if self.env == "production" and self.admin_token and len(self.admin_token) < 16:
            raise ValueError("ARENA_ADMIN_TOKEN must be at least 16 characters")
        return self

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'arena.db').resolve()}"

    @property
    def image_dir(self) -> Path:
        return self.data_dir / "images"

    def connections_for(self, origin: str) -> int:
        """The connection pool size of one provider origin."""
        return self.pool.connections.get(origin) or self.upstream_connections or 2 * self.max_battles

    @property
    def image_location(self) -> str:
        """ARENA_IMAGE_STORE, or the `images/` directory under the data dir."""
        return self.image_store or str(self.image_dir)

    @property
    def rank_interval(self) -> float:
        """Seconds between background ratings by `arena serve`; 0 = off. ARENA_RANK_EVERY over
        `[ratings] every`; unset, 30 s, except in tests, whose boards only change when they rank."""
        text = self.rank_every.strip() or self.pool.ratings.every or ("0" if self.env == "test" else DEFAULT_RANK_EVERY)
        return interval_seconds(text)

    @cached_property
    def pool(self) -> PoolConfig:
        if self.env == "production" and not self.config.exists():
            # A deployment that silently fell back to the offline baselines
            # would rank the wrong arena: a missing pool file is a mistake there.
            raise ValueError(f"ARENA_CONFIG={self.config} does not exist (copy arena.example.toml there)")
        pool = load_pool(self.config)
        if self.searxng_url.strip():
            given = pool.tools.model_dump(exclude_unset=True)
            tools = {**given, "search_backend": "searxng", "search_url": self.searxng_url.strip()}
            pool = pool.model_copy(update={"tools": GateSettings.from_pool(tools)})
        return pool


# Every tool a GATE contender can be offered, by the name the model calls it
# (`arena.contenders.gate.toolbox` builds them; a test keeps the two in step).
GATE_TOOLS = (
    "crop",
    "rotate",
    "auxiliary_lines",
    "super_resolution",
    "pixel_analysis",
    "web_search",
    "web_image_search",
    "reverse_image_search",
    "visit",
    "code_interpreter",
)


class ContenderConfig(BaseModel):
    """One `[[contenders]]` table of the pool file."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/+@-]*$")
    provider: str  # "openai" (any OpenAI-compatible endpoint), "anthropic", "gemini", "baseline"
    model: str = ""
    base_url: str = ""
    api_key_env: str = ""  # name of the environment variable holding the key
    weight: float = Field(default=1.0, ge=0)
    gate: bool = False
    max_tokens: int = Field(default=1024, ge=1, le=32768)
    temperature: float | None = Field(default=0.7, ge=0, le=2)
    timeout: float = Field(default=90.0, gt=0)
    system_prompt: str = ""
    label: str = ""  # shown after the reveal, e.g. "baseline"
    options: dict[str, Any] = Field(default_factory=dict)  # provider-specific extras
    # GATE contenders: the tools offered (None: every tool that has a backend), and how
    # they are used: "react" lets the model choose, "fixed" runs GeoBrowse's fixed policy.
    tools: list[str] | None = None
    policy: Literal["react", "fixed"] = "react"

    @model_validator(mode="after")
    def _gate_keys(self) -> ContenderConfig:
        if self.policy == "fixed" and "gate" not in self.model_fields_set:
            self.gate = True  # a fixed tool policy is a tool-equipped contender
        if self.policy == "fixed" and not self.gate:
            raise ValueError(f"contender {self.name!r}: policy = 'fixed' uses tools, so it cannot have gate = false")
        if self.tools is not None:
            unknown = [t for t in dict.fromkeys(self.tools) if t not in GATE_TOOLS]
            if unknown:
                raise ValueError(
                    f"contender {self.name!r}: unknown tool {', '.join(map(repr, unknown))} in tools "
                    f"(the tools are: {', '.join(GATE_TOOLS)})"
                )
            if not self.gate:
                raise ValueError(f"contender {self.name!r}: tools = [...] is for GATE contenders: add gate = true")
        return self

    def api_key(self) -> str:
        if not self.api_key_env:
            return ""
        return os.environ.get(self.api_key_env, "")


class IntegrityConfig(BaseModel):
    """`[integrity]`: what makes a vote count, and the friction for risky clients.

    The defaults are far above what a person does in a day; a script meets them."""

    model_config = ConfigDict(extra="forbid")

    votes_per_day: int = Field(default=200, ge=0)  # per voter (cookie); 0 = no limit
    votes_per_address_per_day: int = Field(default=1000, ge=0)  # per address hash (IPv6 by /64); 0 = no limit
    min_read_seconds: float = Field(default=2.0, ge=0)  # the shortest look at two answers
    read_chars_per_second: float = Field(default=60.0, gt=0)  # plus this for their length (skimming speed)
    max_read_seconds: float = Field(default=20.0, ge=0)  # however long the answers, no more than this
    challenge: Literal["off", "risk", "always"] = "risk"
    challenge_bits: int = Field(default=14, ge=1, le=28)  # leading zero bits of SHA-256 when challenged
    challenge_ttl_seconds: int = Field(default=600, ge=30)
    risk_battles_per_day: int = Field(default=30, ge=1)  # battles a day before "risk" starts challenging


class GateSettings(BaseModel):
    """`[tools]`: what GATE contenders may use. A contender may override
    `max_turns` and `time_budget` in its `options`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_turns: int = Field(default=10, ge=1, le=50)
    time_budget: float = Field(default=150.0, gt=0, le=3600)
    final_reserve: float = Field(default=30.0, ge=0)  # seconds kept for the forced final answer
    tool_timeout: float = Field(default=20.0, gt=0, le=600)
    web: bool = True
    search_backend: Literal["searxng", "brave", ""] = ""
    search_url: str = ""
    search_api_key_env: str = ""
    search_results: int = Field(default=6, ge=1, le=20)
    # reverse_image_search: the engine fetches the image from ARENA_PUBLIC_URL
    reverse_search_backend: Literal["searxng", "serpapi", ""] = ""
    reverse_search_url: str = ""  # searxng: its base URL (default search_url); serpapi: the API's
    reverse_search_engines: list[str] = Field(default_factory=lambda: ["tineye"], min_length=1)  # searxng's
    reverse_search_api_key_env: str = ""  # serpapi: the variable holding the key
    visit_max_bytes: int = Field(default=2_000_000, ge=1024)
    visit_timeout: float = Field(default=15.0, gt=0, le=120)
    visit_max_chars: int = Field(default=6000, ge=200)  # of page text given to the model
    code: bool = True
    code_timeout: float = Field(default=15.0, gt=0, le=300)
    code_memory_mb: int = Field(default=768, ge=384)  # the whole sandbox: every process and its tmpfs
    code_processes: int = Field(default=2, ge=1, le=4)

    @classmethod
    def from_pool(cls, tools: GateSettings | dict[str, Any], overrides: dict[str, Any] | None = None) -> GateSettings:
        """Settings from the `[tools]` table plus a contender's `max_turns` /
        `time_budget` options; a clear ValueError for a bad table."""
        data = tools.model_dump(exclude_unset=True) if isinstance(tools, GateSettings) else dict(tools)
        for key in ("max_turns", "time_budget"):
            if overrides and key in overrides:
                data[key] = overrides[key]
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ValueError(f"[tools] in the pool file: {problems}") from None

    def search_api_key(self) -> str:
        return os.environ.get(self.search_api_key_env, "") if self.search_api_key_env else ""

    def reverse_search_api_key(self) -> str:
        return os.environ.get(self.reverse_search_api_key_env, "") if self.reverse_search_api_key_env else ""


class Section(BaseModel):
    """A table of the pool file: a misspelled key is an error that names it."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(cls.model_fields))
            if unknown:
                raise ValueError(f"unknown keys {', '.join(unknown)} (known: {', '.join(cls.model_fields)})")
        return data

    def given(self) -> dict[str, Any]:
        """The keys the pool file set, as a plain table."""
        return self.model_dump(exclude_unset=True)


class GatekeeperSection(Section):
    """`[gatekeeper]`: which prompts may start a battle."""

    mode: str | None = None  # "offline" | "llm" | "off", checked by the gatekeeper
    contender: str | None = None  # judge with a pool contender...
    provider: str | None = None  # ... or with its own model
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    system_prompt: str | None = None
    options: dict[str, Any] | None = None
    timeout: float | None = None
    threshold: float | None = None  # offline: the score under which a prompt is refused
    sure: float | None = None  # offline: the score from which a battle runs untagged (between: unsure)


class SamplingSection(Section):
    """`[sampling]`: how battles draw their pair (checked by `pool.policy`)."""

    weights: dict[str, float] | None = None
    new_contender_boost: float | None = None
    boost_until_votes: int | None = None
    targets: list[dict[str, Any]] | None = None
    failure_threshold: int | None = None
    cooldown_seconds: float | None = None
    mode: str | None = None  # "weighted" | "active"
    exploration: float | None = None


class LeaksSection(Section):
    """`[leaks]`: words that reveal a contender's identity."""

    words: list[str] | None = None
    ignore: list[str] | None = None
    defaults: bool | None = None


class RatingsSection(Section):
    """`[ratings]`: defaults of `arena rank` and the background rating of `arena serve`."""

    rounds: int | None = None
    ci: str | None = None
    seed: int | None = None
    style: bool | None = None
    level: float | None = None
    anchor: str | None = None
    anchor_rating: float | None = None
    min_category_votes: int | None = None
    ties: str | None = None  # "half" | "davidson" | "ignore"
    inverse_propensity: bool | None = None
    provisional_votes: int | None = None
    outlier_alpha: float | None = None
    every: str | None = None  # the background rating interval of `arena serve` (ARENA_RANK_EVERY wins)

    @field_validator("every")
    @classmethod
    def _interval(cls, value: str | None) -> str | None:
        if value is not None:
            interval_seconds(value)
        return value


class BattlesSection(Section):
    """`[battles]`: what every battle shares."""

    # the arena instruction for every chat contender, plain or GATE
    # (None: arena.contenders.instruction.DEFAULT_INSTRUCTION; "": none)
    instruction: str | None = Field(default=None, max_length=8000)
    # how voters see a GATE contender's tool steps before their vote, so the display does not by
    # itself pick a side: "collapsed" (a one-line summary on both sides, the steps on request),
    # "after_vote" (hidden until the vote), "open" (the steps open beside the answer)
    trajectory: Literal["collapsed", "after_vote", "open"] = "collapsed"


class PoolConfig(Section):
    """The whole pool file; a misspelled table is an error that names it."""

    contenders: list[ContenderConfig] = Field(default_factory=list)
    gatekeeper: GatekeeperSection = Field(default_factory=GatekeeperSection)
    sampling: SamplingSection = Field(default_factory=SamplingSection)
    leaks: LeaksSection = Field(default_factory=LeaksSection)
    tools: GateSettings = Field(default_factory=GateSettings)
    ratings: RatingsSection = Field(default_factory=RatingsSection)
    integrity: IntegrityConfig = Field(default_factory=IntegrityConfig)
    battles: BattlesSection = Field(default_factory=BattlesSection)
    # the keys of a contender; read and checked by arena.bench.judges
    judge: dict[str, Any] | None = None
    # connections to one provider, by origin: `"https://api.openai.com" = 100` (ARENA_UPSTREAM_CONNECTIONS
    # for the rest); fewer than two per battle the replica accepts makes streams queue for one
    connections: dict[str, int] = Field(default_factory=dict)

    @field_validator("connections")
    @classmethod
    def _origins(cls, connections: dict[str, int]) -> dict[str, int]:
        for origin, size in connections.items():
            if origin != origin_of(origin):
                raise ValueError(f'[connections]: {origin!r} is not an origin like "https://api.openai.com"')
            if size < 1:
                raise ValueError(f"[connections]: {origin} needs at least 1 connection, not {size}")
        return connections

    @field_validator("contenders")
    @classmethod
    def _distinct_names(cls, contenders: list[ContenderConfig]) -> list[ContenderConfig]:
        names = [c.name for c in contenders]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"contender names must be unique; repeated: {', '.join(duplicates)}")
        return contenders


OFFLINE_POOL: list[dict[str, Any]] = [
    {
        "name": "ocr-geolocator",
        "provider": "baseline",
        "model": "ocr-geolocator",
        "label": "baseline",
    },
    {
        "name": "ocr-geolocator+gate",
        "provider": "baseline",
        "model": "ocr-geolocator",
        "gate": True,
        "label": "baseline",
    },
]


def origin_of(url: str) -> str:
    """`https://api.openai.com/v1` -> `https://api.openai.com` (the default port dropped)."""
    parts = urlsplit(url.strip())
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if scheme not in ("http", "https") or not host:
        return ""
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    port = parts.port
    if port is None or port == {"http": 80, "https": 443}[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def load_pool(path: Path) -> PoolConfig:
    """Read the pool file; without one, the offline pool of baselines."""
    if path.is_dir():
        raise ValueError(f"{path} is a directory; the pool file must be a TOML file (see arena.example.toml)")
    if not path.exists():
        return PoolConfig(contenders=[ContenderConfig(**c) for c in OFFLINE_POOL])
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML ({exc})") from None
    try:
        pool = PoolConfig.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"{path}: {exc}") from None
    if len([c for c in pool.contenders if c.weight > 0]) < 2:
        raise ValueError(f"{path}: a battle needs at least two contenders with weight > 0")
    return pool
