"""The markdown renderer, for any text a contender may send: it never raises, its
output is bounded by its input, and nothing in it can run script in the page
(no tag or attribute outside the allow-list, no event handler, no link or
image to a `javascript:`, `data:` or other non-web URL).

The HTML is read back with the standard library's parser, which decodes
entities the way a browser does, so `&#106;avascript:` counts as `javascript:`.
The time each case takes is printed by `benchmarks/markdown.py`, not timed here."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.answers.markdown import ALLOWED_ATTRIBUTES, ALLOWED_TAGS, render_markdown

# Pieces an attacker would combine: markdown syntax, raw HTML, handlers, URL schemes and
# the entity and whitespace tricks browsers forgive.
FRAGMENTS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<a href='javascript:alert(1)'>x</a>",
    "<svg onload=alert(1)>",
    "<iframe src=//evil>",
    "<style>*{}</style>",
    '<div style="background:url(javascript:alert(1))">',
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](java\tscript:alert(1))",
    "[x](&#106;avascript:alert(1))",
    "[x](&#x6A;avascript&#x3A;alert(1))",
    "[x]( javascript:alert(1))",
    "[x](data:text/html;base64,PHNjcmlwdD4=)",
    "[x](vbscript:msgbox)",
    '[x](http://ok.example "t" onclick="alert(1)")',
    "![i](javascript:alert(1))",
    "<javascript:alert(1)>",
    "[r]: javascript:alert(1)\n[y][r]",
    "`<script>`",
    "```\n<script>\n```",
    "| a | b |\n|---|:-:|\n| <b onmouseover=x> | c |",
    "**",
    "__",
    "[",
    "](",
    "> ",
    "- ",
    "1. ",
    "# ",
    "\n",
    "\n\n",
    "&",
    "&#0;",
    "\x00",
    "\ud800",
    '"',
    "'",
    "<",
    ">",
]
markdownish = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=20), max_size=30).map("".join)
any_text = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=400)
answers = markdownish | any_text

# A URL scheme as a browser reads it: leading C0 controls and spaces dropped, tabs and
# newlines removed anywhere (https://url.spec.whatwg.org/#concept-basic-url-parser).
_IGNORED = re.compile(r"[\t\n\r]")
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*):")


def url_scheme(url: str) -> str | None:
    match = _SCHEME.match(_IGNORED.sub("", url.lstrip("\x00\x01\x02\x03\x04\x05\x06\x07\x08 \x0b\x0c\x0e\x0f")))
    return match.group(1).lower() if match else None


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    handle_startendtag = handle_starttag


def elements(html: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    parser = Elements()
    parser.feed(html)
    parser.close()
    return parser.tags


class TestRenderedMarkdownIsInert:
    @settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(answers)
    def test_no_script_handler_or_unsafe_url_survives(self, text: str) -> None:
        html = render_markdown(text)
        assert isinstance(html, str)
        for tag, attrs in elements(html):
            assert tag in ALLOWED_TAGS, (tag, html)
            allowed = ALLOWED_ATTRIBUTES.get(tag, set()) | ({"rel"} if tag == "a" else set())
            for name, value in attrs:
                assert name in allowed and not name.startswith("on"), (tag, name, html)
                if name in ("href", "src"):
                    assert url_scheme(value or "") in (None, "http", "https"), (value, html)
                if name == "style":
                    assert re.fullmatch(r"text-align:\s*(left|right|center)", value or ""), (value, html)
        assert "<script" not in html.lower()

    @settings(max_examples=200, deadline=None)
    @given(answers)
    def test_output_is_bounded_by_the_input(self, text: str) -> None:
        # escaping makes `<` into `&lt;` and a table adds its markup; nothing grows faster than that
        assert len(render_markdown(text)) <= 12 * len(text) + 64

    def test_the_known_payloads_are_defused(self) -> None:
        """The fragments one by one, so a regression names its payload."""
        for fragment in FRAGMENTS:
            html = render_markdown(fragment)
            for tag, attrs in elements(html):
                assert tag in ALLOWED_TAGS, (fragment, html)
                for name, value in attrs:
                    assert not name.startswith("on"), (fragment, html)
                    if name == "href":
                        assert url_scheme(value or "") in (None, "http", "https"), (fragment, html)

    def test_safe_markdown_keeps_its_meaning(self) -> None:
        """The sanitiser is not so strict that it empties honest answers."""
        html = render_markdown("# Kyoto\n\n**Likely** [map](https://example.org/a?b=1)\n\n- one\n- two")
        assert "<h1>Kyoto</h1>" in html and "<strong>Likely</strong>" in html
        assert 'href="https://example.org/a?b=1"' in html and html.count("<li>") == 2
