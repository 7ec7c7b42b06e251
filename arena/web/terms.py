"""`/terms`: what is stored, what is published, how to ask for a photo's
removal. The operator replaces the built-in text with a Markdown file of
their own (ARENA_TERMS_FILE); either way it goes through the same sanitiser
as answers, so the page never carries a script."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from arena.answers.markdown import render_markdown
from arena.config import Settings
from arena.deps import SettingsDep, TemplatesDep

router = APIRouter()

DEFAULT_TERMS = Path(__file__).resolve().parents[2] / "templates" / "terms.md"


@router.get("/terms", response_class=HTMLResponse, include_in_schema=False)
def terms_page(request: Request, settings: SettingsDep, templates: TemplatesDep) -> HTMLResponse:
    """The terms the upload form links to."""
    return templates.TemplateResponse(request, "terms.html", {"page": TermsPage.of(settings)})


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
