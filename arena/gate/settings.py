"""GATE's configuration: the pool file's `[tools]` table.

```toml
[tools]
max_turns = 10            # assistant turns per battle, the last one must answer
time_budget = 150         # seconds per battle for the whole trajectory
web = true                # false: no web_search, web_image_search or visit
search_backend = "searxng"            # "searxng" | "brave" | "" (no search tools)
search_url = "http://searxng:8080"    # brave: optional, its API by default
search_api_key_env = "BRAVE_API_KEY"  # the environment variable holding the key
code = true               # code_interpreter, when bubblewrap works here
```
A contender may override `max_turns` and `time_budget` in its `options`.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class GateSettings(BaseModel):
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
    visit_max_bytes: int = Field(default=2_000_000, ge=1024)
    visit_timeout: float = Field(default=15.0, gt=0, le=120)
    visit_max_chars: int = Field(default=6000, ge=200)  # of page text given to the model
    code: bool = True
    code_timeout: float = Field(default=15.0, gt=0, le=300)
    code_memory_mb: int = Field(default=768, ge=384)  # the whole sandbox: every process and its tmpfs
    code_processes: int = Field(default=2, ge=1, le=4)

    @classmethod
    def from_pool(cls, tools: dict[str, Any], overrides: dict[str, Any] | None = None) -> GateSettings:
        """Settings from the `[tools]` table plus a contender's `max_turns` /
        `time_budget` options; a clear ValueError for a bad table."""
        data = dict(tools)
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
