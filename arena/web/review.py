"""Expert re-votes: `/review` (a reviewer's page, reached by their link),
`POST /review` (one re-vote), `GET /api/admin/reviews/stats` (agreement).

The page shows a voted battle drawn at random, without names, its answers
re-shuffled; which side is which travels in a ticket signed with the
server's secret, so a re-vote is stored in the battle's own sides and a
reviewer cannot vote on a battle they were not shown.
"""

from __future__ import annotations

import hashlib
import hmac
import random
from dataclasses import dataclass, field
from urllib.parse import quote

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from arena.answers.markdown import render_markdown
from arena.deps import AdminDep, SessionDep, SettingsDep, TemplatesDep
from arena.review import repository
from arena.review.stats import review_stats

router = APIRouter()

BUTTONS = (
    ("first", "Answer 1 is better"),
    ("second", "Answer 2 is better"),
    ("tie", "Tie"),
    ("both_bad", "Both are bad"),
)


@dataclass(frozen=True)
class ReviewPage:
    """Context of `review.html`."""

    token: str = field(metadata={"help": "The reviewer's token, sent back with the re-vote"})
    reviewer: str = field(default="", metadata={"help": "The reviewer's name"})
    message: str = field(default="", metadata={"help": "Shown instead of a battle (bad link, nothing left)"})
    prompt: str = field(default="", metadata={"help": "The battle's question"})
    image_url: str = field(default="", metadata={"help": "The battle's photo"})
    answers: tuple[str, str] = field(default=("", ""), metadata={"help": "Sanitised HTML of answer 1 and 2"})
    ticket: str = field(default="", metadata={"help": "Signed battle id and shuffle"})
    remaining: int = field(default=0, metadata={"help": "Battles left for this reviewer, this one included"})
    buttons: tuple[tuple[str, str], ...] = field(default=BUTTONS, metadata={"help": "The four choices"})


@router.get("/review", response_class=HTMLResponse, include_in_schema=False)
def review_page(
    request: Request, session: SessionDep, settings: SettingsDep, templates: TemplatesDep, token: str = Query("")
) -> HTMLResponse:
    """A battle to re-vote, anonymised and re-shuffled."""
    reviewer = repository.reviewer_for(session, token)
    if reviewer is None:
        return _render(
            templates,
            request,
            ReviewPage(
                token="",
                message=(
                    "This review link is not valid: it may have been revoked. Ask the arena's operator for a new one."
                ),
            ),
            status=403,
        )
    battle = repository.next_battle(session, reviewer.id)
    if battle is None:
        return _render(
            templates,
            request,
            ReviewPage(
                token=token,
                reviewer=reviewer.name,
                message=("Nothing left to review: you have re-voted every voted battle. Thank you!"),
            ),
        )
    texts = {r.side: r.text for r in battle.responses}
    swapped = random.SystemRandom().random() < 0.5
    first, second = (texts["b"], texts["a"]) if swapped else (texts["a"], texts["b"])
    secret = settings.secret_key
    return _render(
        templates,
        request,
        ReviewPage(
            token=token,
            reviewer=reviewer.name,
            prompt=battle.prompt,
            image_url=f"/images/{battle.image_sha256}",
            answers=(render_markdown(first), render_markdown(second)),
            ticket=sign_ticket(secret, battle.id, swapped, reviewer.id),
            remaining=repository.remaining(session, reviewer.id),
        ),
    )


@router.post("/review", include_in_schema=False)
def submit_review(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    templates: TemplatesDep,
    token: str = Form(""),
    ticket: str = Form(""),
    choice: str = Form(""),
) -> Response:
    """Store one re-vote, then show the next battle."""
    reviewer = repository.reviewer_for(session, token)
    if reviewer is None:
        return _error(templates, request, 403, "This review link is not valid: it may have been revoked.")
    opened = open_ticket(settings.secret_key, ticket, reviewer.id)
    if opened is None:
        return _error(
            templates, request, 422, "This re-vote did not come from a page we served you; reload the review page."
        )
    battle_id, swapped = opened
    sides = {"first": "b" if swapped else "a", "second": "a" if swapped else "b", "tie": "tie", "both_bad": "both_bad"}
    if choice not in sides:
        return _error(templates, request, 422, "Choose one of the four buttons.")
    if not repository.is_reviewable(session, battle_id):
        return _error(templates, request, 404, "That battle can no longer be reviewed.")
    try:
        repository.save_review(session, battle_id, reviewer.id, sides[choice], swapped)
    except repository.ReviewError as exc:
        return _error(templates, request, 409, f"{exc}. Here is the next one.", token=token)
    return RedirectResponse(f"/review?token={quote(token)}", status_code=303)


@router.get("/api/admin/reviews/stats", summary="Expert-crowd and expert-expert agreement", dependencies=[AdminDep])
def review_stats_api(session: SessionDep) -> JSONResponse:
    """Needs `Authorization: Bearer $ARENA_ADMIN_TOKEN`."""
    return JSONResponse(review_stats(session))


def sign_ticket(secret: str, battle_id: str, swapped: bool, reviewer_id: int) -> str:
    body = f"{battle_id}.{int(swapped)}"
    return f"{body}.{_mac(secret, body, reviewer_id)}"


def open_ticket(secret: str, ticket: str, reviewer_id: int) -> tuple[str, bool] | None:
    """(battle id, swapped) from a ticket we signed for this reviewer, else None."""
    parts = ticket.split(".")
    if len(parts) != 3 or parts[1] not in ("0", "1"):
        return None
    body = f"{parts[0]}.{parts[1]}"
    if not hmac.compare_digest(parts[2], _mac(secret, body, reviewer_id)):
        return None
    return parts[0], parts[1] == "1"


def _mac(secret: str, body: str, reviewer_id: int) -> str:
    return hmac.new(secret.encode(), f"review:{reviewer_id}:{body}".encode(), hashlib.sha256).hexdigest()[:32]


def _render(templates: Jinja2Templates, request: Request, page: ReviewPage, status: int = 200) -> HTMLResponse:
    response = templates.TemplateResponse(request, "review.html", {"page": page}, status_code=status)
    # the page carries the reviewer's token: keep it out of caches and referrers
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


def _error(templates: Jinja2Templates, request: Request, status: int, message: str, token: str = "") -> HTMLResponse:
    return _render(templates, request, ReviewPage(token=token, message=message), status=status)
