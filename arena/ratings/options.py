"""The rating conventions and how a snapshot is computed, without the maths:
the CLI reads these to build its flags before numpy is imported."""

from __future__ import annotations

from dataclasses import dataclass

# base 10, scale 400, init 1000: Chatbot Arena's (and GeoArena's) convention
SCALE = 400.0
BASE = 10.0
INIT_RATING = 1000.0

CI_METHODS = ("bootstrap", "sandwich")
MIN_CATEGORY_VOTES = 50
# Below this many votes a contender's rating is shown apart as provisional.
PROVISIONAL_VOTES = 100
TIE_MODELS = ("half", "davidson", "ignore")  # how ties count: arena.ratings.ties
DEFAULT_OUTLIER_ALPHA = 0.01  # the voter anomaly test's level: arena.ratings.anomaly


@dataclass(frozen=True)
class RankOptions:
    """How a snapshot is computed (`[ratings]` in arena.toml, `arena rank` flags)."""

    rounds: int = 100
    ci: str = "bootstrap"
    seed: int = 0
    style: bool = True
    level: float = 0.95
    anchor: str | None = None
    anchor_rating: float = INIT_RATING
    min_category_votes: int = MIN_CATEGORY_VOTES
    exact_style_bootstrap: bool | None = None  # None: exact when small enough
    ties: str = "half"  # tie model of the plain and category fits: TIE_MODELS
    provisional_votes: int = PROVISIONAL_VOTES
    outlier_alpha: float | None = DEFAULT_OUTLIER_ALPHA  # None: no voter anomaly test
    robustness_top: int = 10  # adjacent pairs checked for `robustness`
    inverse_propensity: bool = False  # weight the plain fit by 1 / the pair's sampling probability

    def __post_init__(self) -> None:
        if self.ci not in CI_METHODS:
            raise ValueError(f"unknown CI method {self.ci!r}; use one of {', '.join(CI_METHODS)}")
        if self.ci == "bootstrap" and self.rounds < 2:
            raise ValueError("a bootstrap needs at least 2 rounds")
        if self.ties not in TIE_MODELS:
            raise ValueError(f"unknown tie model {self.ties!r}; use one of {', '.join(TIE_MODELS)}")
        if not 0 < self.level < 1:
            raise ValueError("the confidence level must be between 0 and 1, e.g. 0.95")
        if self.outlier_alpha is not None and not 0 < self.outlier_alpha < 1:
            raise ValueError("outlier_alpha must be between 0 and 1, e.g. 0.01 (or unset to skip the test)")
