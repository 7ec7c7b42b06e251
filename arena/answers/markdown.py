"""Markdown from contenders, rendered to HTML that is safe to put in a page.

Model output is untrusted: markdown-it renders it with raw HTML disabled, and
nh3 (the Ammonia sanitiser) then keeps only an allow-list of tags and
attributes, so neither a `<script>` nor a `javascript:` link survives.
"""

from __future__ import annotations

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token

from arena.db.text import storable

# One parser for rendering and for counting an answer's style (arena.answers.style).
PARSER = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
    ["table", "strikethrough"]
)

ALLOWED_TAGS = {
    "p",
    "br",
    "hr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "strong",
    "em",
    "del",
    "s",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "a",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"style"}, "td": {"style"}}


def parse_markdown(text: str) -> list[Token]:
    """The token stream of `text`, for `render_markdown` and the style counts to share: a
    finished answer is parsed once, not once for each."""
    # a lone surrogate (a JSON `\ud800` escape) would make the sanitiser's UTF-8 encoding raise
    return PARSER.parse(storable(text))


def render_markdown(text: str, tokens: list[Token] | None = None) -> str:
    """Render untrusted markdown (or its `parse_markdown` tokens) to sanitised HTML."""
    html = PARSER.renderer.render(parse_markdown(text) if tokens is None else tokens, PARSER.options, {})
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https"},
        link_rel="noopener noreferrer nofollow",
        filter_style_properties={"text-align"},
    )
