"""Regional boards: which region categories a rated vote belongs to.

A labelled battle belongs to the continent (and country) of its label, from
reverse geocoding the uploader's point. An unlabelled battle whose two
answers commit to the same country joins a separate category named for what
it is, the answers' agreement, not the truth. The snapshot fits a
Bradley-Terry board with intervals per category and marks thin ones
(`too_few_votes`), so these need no fitting of their own.
"""

from __future__ import annotations

CONTINENT_PREFIX = "continent:"
COUNTRY_PREFIX = "country:"
AGREED_PREFIX = "answers agree:"


def region_categories(
    *,
    label_country: str | None,
    label_continent: str | None,
    answer_country_a: str | None = None,
    answer_country_b: str | None = None,
) -> list[str]:
    """Category names for one vote; countries are ISO alpha-2, the continent a
    GeoNames code ("AS") or its name ("Asia")."""
    if not (label_continent or label_country or answer_country_a):
        return []
    # here: the gazetteer takes a tenth of a second to load, and a file without labels never needs it
    from arena.geo.gazetteer import country_display_name
    from arena.geo.reverse import continent_name

    if label_continent or label_country:
        names = []
        if label_continent:
            names.append(CONTINENT_PREFIX + continent_name(label_continent))
        if label_country:
            names.append(COUNTRY_PREFIX + country_display_name(label_country))
        return names
    if answer_country_a and answer_country_a == answer_country_b:
        return [AGREED_PREFIX + country_display_name(answer_country_a)]
    return []


def continent_boards(categories: list[dict]) -> list[dict]:  # type: ignore[type-arg]
    """The continent entries of a snapshot's `categories`."""
    return [c for c in categories if str(c.get("name", "")).startswith(CONTINENT_PREFIX)]
