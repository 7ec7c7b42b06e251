"""`/terms`: what is stored, what is published, how to ask for a photo's
removal. The operator replaces the built-in text with a Markdown file of
their own (ARENA_TERMS_FILE); either way it goes through the same sanitiser
as answers, so the page never carries a script."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from arena.answers.markdown import render_markdown
from arena.config import Settings
from arena.deps import SettingsDep, TemplatesDep

log = logging.getLogger(__name__)
router = APIRouter()

DEFAULT_TERMS = Path(__file__).resolve().parents[2] / "templates" / "terms.md"


UNAVAILABLE = (
    "<h1>Terms and your data</h1>\n<p>The terms cannot be shown right now. Please try again in a few minutes; "
    "until then, do not upload a photo you would not want stored and published.</p>"
)
RETRY_AFTER_SECONDS = 300  # long enough for an operator to put the file back


@router.get("/terms", response_class=HTMLResponse, include_in_schema=False)
def terms_page(request: Request, settings: SettingsDep, templates: TemplatesDep) -> HTMLResponse:
    """The terms the upload form links to; 503 while the operator's file cannot be read."""
    try:
        page = TermsPage.of(settings)
    except (OSError, UnicodeDecodeError) as exc:
        # checked at start-up, so gone since: the operator must hear of it, the reader gets a page
        log.error("ARENA_TERMS_FILE=%s cannot be read any more (%s)", settings.terms_file, exc.__class__.__name__)
        page = TermsPage(html=UNAVAILABLE)
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
        return templates.TemplateResponse(request, "terms.html", {"page": page}, status_code=503, headers=headers)
    return templates.TemplateResponse(request, "terms.html", {"page": page})


@dataclass(frozen=True)
class TermsPage:
    """Context of `terms.html`."""

    html: str = field(metadata={"help": "The terms as sanitised HTML"})

    @classmethod
    def of(cls, settings: Settings) -> TermsPage:
        # Read on every request: an operator's edit shows without a restart.
        return cls(html=render_markdown(terms_source(settings).read_text(encoding="utf-8")))


def terms_source(settings: Settings) -> Path:
    return settings.terms_file or DEFAULT_TERMS


def check_terms_file(settings: Settings) -> None:
    """At start-up: a configured terms file that cannot be read is a mistake, said before serving."""
    path = settings.terms_file
    if path is None:
        return
    try:
        path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"ARENA_TERMS_FILE={path} cannot be read as UTF-8 text ({exc.__class__.__name__})") from None
