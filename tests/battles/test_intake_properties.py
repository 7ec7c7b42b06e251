"""Intake under hypothesis: any question text and any upload form get a battle or a clear
4xx, never a 5xx, and a refused request leaves nothing behind (no battle, no image row, no
file), on SQLite and PostgreSQL. The photo bytes themselves are covered by
tests/images/test_pixels_only.py."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import HealthCheck, event, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from arena.db.tables import Battle, Image
from arena.errors import ClientError
from arena.web.battles import valid_prompt
from tests.conftest import SAMPLE_DIR

MAX_CHARS = 120
# every code point, lone surrogates included (a JSON `\ud800` escape produces one)
any_text = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=2 * MAX_CHARS)
typed_text = st.text(alphabet=st.characters(exclude_categories=("Cc", "Cs")), min_size=1, max_size=MAX_CHARS)


def _allowed(ch: str) -> bool:
    return ch in "\t\n\r" or unicodedata.category(ch) not in ("Cc", "Cs")


class TestPromptValidation:
    @hypothesis_settings(max_examples=500, deadline=None)
    @given(any_text)
    def test_accepted_or_refused_with_a_reason(self, text: str) -> None:
        try:
            prompt = valid_prompt(text, MAX_CHARS)
        except ClientError as refusal:
            assert refusal.status == 422 and refusal.message
            assert refusal.code in {"missing_prompt", "prompt_too_long", "invalid_prompt"}
            return
        assert prompt == text.strip() and 0 < len(prompt) <= MAX_CHARS
        assert all(_allowed(ch) for ch in prompt)
        prompt.encode("utf-8")  # storable in both databases: no lone surrogate
        assert "\x00" not in prompt

    @hypothesis_settings(max_examples=300, deadline=None)
    @given(typed_text.filter(lambda t: t.strip()))
    def test_what_a_person_types_is_accepted_unchanged(self, text: str) -> None:
        assert valid_prompt(text, MAX_CHARS) == text.strip()

    @given(st.none() | st.integers() | st.binary())
    def test_a_missing_or_non_text_prompt_is_refused(self, value: object) -> None:
        with pytest.raises(ClientError) as refusal:
            valid_prompt(value, MAX_CHARS)
        assert refusal.value.code == "missing_prompt"


PHOTO = (SAMPLE_DIR / "images" / "level1-1.jpg").read_bytes()
QUESTIONS = ["Where was this photo taken?", "Which country is this?", "In welcher Stadt ist das?", ""]
FIELDS = ["prompt", "share_location", "location", "place", "challenge", "solution", "image", "other"]

field_value = st.binary(max_size=300) | st.text(max_size=60).map(str.encode)
image_part = st.sampled_from([PHOTO] * 5 + [PHOTO[: len(PHOTO) // 2], b"", b"GIF89a", b"<svg onload=x>"]) | st.binary(
    max_size=200
)


@st.composite
def upload_form(draw: st.DrawFn) -> list[tuple[str, tuple[str | None, bytes, str]]]:
    """A multipart form as a client may send it: the image (or not, or twice), a question that
    is geographic, broken or binary, and any of the other fields with any bytes."""
    parts: list[tuple[str, tuple[str | None, bytes, str]]] = []
    for _ in range(draw(st.sampled_from([1, 1, 1, 1, 0, 2]))):
        parts.append(("image", ("photo.jpg", draw(image_part), draw(st.sampled_from(["image/jpeg", "text/html"])))))
    question = draw(st.sampled_from(QUESTIONS)).encode() + draw(
        st.sampled_from([b""] * 4 + [b" \x00", b"\xed\xa0\x80", b"\xff", b" ?"])
    )
    if not draw(st.integers(0, 3)):
        question = draw(field_value)
    if draw(st.integers(0, 9)):  # mostly present
        parts.append(("prompt", (None, question, "text/plain")))
    for name in draw(st.lists(st.sampled_from(FIELDS), max_size=draw(st.sampled_from([0, 0, 3])))):
        parts.append((name, (None, draw(field_value), "text/plain")))
    return parts


def rows(app) -> tuple[int, int, int]:  # type: ignore[no-untyped-def]
    with app.state.services.database.sessions() as session:
        battles = session.scalar(select(func.count()).select_from(Battle)) or 0
        images = session.scalar(select(func.count()).select_from(Image)) or 0
    return battles, images, len(list(app.state.settings.image_dir.rglob("*.jpg")))


class TestUploadForm:
    @pytest.fixture
    def settings(self, settings):  # type: ignore[no-untyped-def]
        return settings.model_copy(update={"battles_per_minute": 0})  # the form, not the limit

    @hypothesis_settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(form=upload_form())
    async def test_a_battle_or_a_clear_refusal_and_nothing_half_written(self, client, app, form) -> None:  # type: ignore[no-untyped-def]
        before = rows(app)
        response = await client.post("/api/battles", files=form)
        event(f"{response.status_code} {response.json().get('error', 'created')}")  # --hypothesis-show-statistics
        assert response.status_code < 500, response.text
        if response.status_code == 201:
            assert rows(app)[0] == before[0] + 1
            return
        body = response.json()
        assert set(body) == {"error", "message"} and body["message"], body
        assert rows(app) == before, (response.status_code, body)
