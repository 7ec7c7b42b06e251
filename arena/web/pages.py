"""The arena page: `/`, where a person uploads a photo, asks a geographic
question, watches two anonymous contenders answer and votes.

Each page's template context is a small typed dataclass, so the template and
its test agree on what the page is given.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from arena.battles import repository
from arena.config import Settings
from arena.deps import Services, ServicesDep, SessionDep
from arena.images.intake import ACCEPTED_LABEL, HEIF_FORMATS

router = APIRouter()

EXAMPLE_PROMPTS: tuple[str, ...] = (
    "Where was this taken? Explain your reasoning.",
    "Which country is this? What clues give it away?",
    "Which side of the road do they drive on here, and what does that tell you?",
    "Which city is this? Give your best guess with coordinates.",
    "What language are the signs in, and where is it spoken?",
)

# The types image intake reads (it judges by content; the browser only pre-checks).
BASE_IMAGE_TYPES: tuple[str, ...] = ("image/jpeg", "image/png", "image/webp")
HEIC_IMAGE_TYPES: tuple[str, ...] = ("image/heic", "image/heif")


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def arena_page(request: Request, services: ServicesDep) -> HTMLResponse:
    """The arena: upload, ask, watch two anonymous answers, vote."""
    page = ArenaPage.of(services.settings, services)
    return services.templates.TemplateResponse(request, "arena.html", {"page": page})


@router.get("/battle/{battle_id}", response_class=HTMLResponse, include_in_schema=False)
def battle_page(battle_id: str, request: Request, session: SessionDep, services: ServicesDep) -> HTMLResponse:
    """One battle's own address: reload resumes its stream or shows it finished, a link shares it."""
    if not repository.battle_exists(session, battle_id):
        return services.templates.TemplateResponse(
            request,
            "not_found.html",
            {"title": "No such battle", "message": "There is no battle at this address. It may have been mistyped."},
            status_code=404,
        )
    page = ArenaPage.of(services.settings, services, battle_id=battle_id)
    return services.templates.TemplateResponse(request, "arena.html", {"page": page})


@dataclass(frozen=True)
class ArenaPage:
    """Context of `arena.html`."""

    example_prompts: tuple[str, ...] = field(metadata={"help": "Geographic questions a click puts in the prompt box"})
    max_upload_bytes: int = field(metadata={"help": "Largest photo the server accepts, in bytes"})
    max_prompt_chars: int = field(metadata={"help": "Longest prompt the server accepts"})
    accepted_types: tuple[str, ...] = field(
        metadata={"help": "MIME types the file picker offers and the browser pre-checks"}
    )
    accepted_label: str = field(metadata={"help": "The accepted formats in words, e.g. `JPEG, PNG or WebP`"})
    contender_count: int = field(metadata={"help": "Contenders in the pool a battle draws from"})
    trajectory: str = field(
        default="collapsed",
        metadata={"help": "`[battles] trajectory`: how tool steps show before the vote (collapsed, after_vote, open)"},
    )
    battle_id: str = field(
        default="", metadata={"help": "On `/battle/{id}`: the battle the page resumes or shows; empty on `/`"}
    )

    @property
    def max_upload_mb(self) -> str:
        """`15` for 15 MiB; a fraction only when the limit has one."""
        return f"{round(self.max_upload_bytes / (1024 * 1024), 1):g}"

    @classmethod
    def of(cls, settings: Settings, services: Services, battle_id: str = "") -> ArenaPage:
        return cls(
            example_prompts=EXAMPLE_PROMPTS,
            max_upload_bytes=settings.max_upload_bytes,
            max_prompt_chars=settings.max_prompt_chars,
            accepted_types=accepted_image_types(),
            accepted_label=ACCEPTED_LABEL,
            contender_count=len(services.pool),
            trajectory=services.pool_config.battles.trajectory,
            battle_id=battle_id,
        )

    @classmethod
    def help(cls) -> dict[str, str]:
        return {f.name: f.metadata["help"] for f in fields(cls)}


def accepted_image_types() -> tuple[str, ...]:
    # HEIC decodes only when the optional pillow-heif extra is installed.
    if HEIF_FORMATS:
        return BASE_IMAGE_TYPES + HEIC_IMAGE_TYPES
    return BASE_IMAGE_TYPES
