"""Style counts of an answer (length, lists, headers, emphasis, GPS)."""

from __future__ import annotations

import pytest

from arena.answers.style import count_gps, feature_vector, style_features

ANSWER = """# Paris, France

The photo shows the **Eiffel Tower** from the *Champ de Mars*.

## Evidence
1. The iron lattice tower
2. __Haussmann__ facades
- Street signs in _French_
* A Vélib' bike station
+ Parisian benches

Coordinates: 48.8584° N, 2.2945° E, or in decimal (48.8584, 2.2945).

```python
# not a header
- not a list item
**not bold** at 1.5, 2.5
```
"""


class TestStyleFeatures:
    def test_counts_markdown_outside_fenced_code(self):
        counts = style_features(ANSWER)
        assert counts["header_count"] == {"h1": 1, "h2": 1, "h3": 0, "h4": 0, "h5": 0, "h6": 0}
        assert counts["list_count"] == {"ordered": 2, "unordered": 3}
        assert counts["bold_count"] == {"**": 1, "__": 1}
        assert counts["italic_count"] == {"*": 1, "_": 1}
        assert counts["gps_count"] == 2

    def test_unclosed_fence_hides_the_rest(self):
        counts = style_features("# Title\n~~~\n# hidden\n- hidden\n")
        assert sum(counts["header_count"].values()) == 1
        assert counts["list_count"] == {"ordered": 0, "unordered": 0}

    def test_inline_code_is_not_emphasis(self):
        assert style_features("use `**kwargs` and `_private`")["bold_count"] == {"**": 0, "__": 0}
        assert style_features("use `**kwargs` and `_private`")["italic_count"] == {"*": 0, "_": 0}

    def test_snake_case_and_arithmetic_are_not_emphasis(self):
        counts = style_features("the variable my_long_name and 2 * 3 * 4")
        assert counts["italic_count"] == {"*": 0, "_": 0}

    @pytest.mark.parametrize("marker", ["**", "__"])
    def test_unclosed_bold_markers_are_no_emphasis(self, marker):
        # "**a **a **a ..." with no closing marker once made a regex rescan each line
        # from every opener (quadratic); the cost per size is in benchmarks/style.py
        counts = style_features(f"{marker}a " * 5_000)
        assert counts["bold_count"] == {"**": 0, "__": 0}

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("48.8584° N, 2.2945° E", 1),
            ("48°51′30″N 2°17′40″E", 1),
            ("33.8568° S 151.2153° E and 40.6892° N, 74.0445° W", 2),
            ("(48.86, 2.29)", 1),
            ("-33.8568, 151.2153", 1),
            ("[35.6586, 139.7454]", 1),
            ("version 1.5, 2.5 of the tool", 0),  # one decimal, no brackets
            ("(95.1, 20.2)", 0),  # latitude out of range
            ("12 apples, 3 pears", 0),
        ],
    )
    def test_gps_mentions(self, text, expected):
        assert count_gps(text) == expected

    def test_tokens_count_words_cjk_characters_and_punctuation(self):
        assert style_features("Hello, world!")["tokens"] == 4
        assert style_features("东京塔")["tokens"] == 3
        assert style_features("東京 Tower")["tokens"] == 3

    def test_feature_vector_sums_each_family(self):
        counts = style_features(ANSWER)
        length, lists, headers, emphasis, gps, tools = feature_vector(counts)
        assert (lists, headers, emphasis, gps, tools) == (5.0, 2.0, 4.0, 2.0, 0.0)
        assert length == counts["tokens"]

    def test_the_tool_calls_behind_an_answer_are_the_last_feature(self):
        assert feature_vector({**style_features("Japan."), "tool_calls": 7})[-1] == 7.0
