"""Security headers on every answer and one error format everywhere; in Chromium, the
pages run under the policy (no violation) and an injected inline script does not run."""

from __future__ import annotations

from typing import Any

import pytest

from tests.web.conftest import ArenaServer

PATHS = ["/", "/leaderboard", "/static/arena.js", "/api/leaderboard", "/nope", "/api/battles/x/events"]


class TestHeaders:
    @pytest.mark.parametrize("path", PATHS)
    async def test_every_answer_carries_them(self, client, path):
        response = await client.get(path)
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["referrer-policy"] == "same-origin"

    async def test_templates_have_no_inline_script_or_handler(self, client):
        import re

        for path in ("/", "/leaderboard"):
            html = (await client.get(path)).text
            for tag in re.findall(r"<script\b[^>]*>", html):
                assert "src=" in tag or 'type="application/json"' in tag, tag
            assert not re.search(r"\son[a-z]+\s*=", html), "inline event handler"


class TestErrorFormat:
    @pytest.mark.parametrize(
        ("method", "path", "status", "code"),
        [
            ("GET", "/no/such/page", 404, "not_found"),
            ("DELETE", "/api/battles", 405, "method_not_allowed"),
            ("PUT", "/api/leaderboard", 405, "method_not_allowed"),
            ("GET", "/api/battles/unknown/events", 404, "battle_not_found"),
            ("POST", "/api/battles/unknown/vote", 422, "invalid_request"),
            ("GET", "/images/not-a-hash", 404, None),
        ],
    )
    async def test_error_answers_are_error_and_message(self, client, method, path, status, code):
        response = await client.request(method, path)
        assert response.status_code == status
        body = response.json()
        assert set(body) == {"error", "message"}, body
        assert code is None or body["error"] == code
        assert len(body["message"]) > 10 and body["message"][0].isupper()


@pytest.mark.browser
class TestPolicyInChromium:
    def test_pages_run_without_violations_and_inline_script_is_blocked(
        self, arena_server: ArenaServer, chromium: Any
    ) -> None:
        context = chromium.new_context()
        page = context.new_page()
        violations: list[str] = []
        page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
        try:
            for path in ("/", "/leaderboard"):
                page.goto(arena_server.url + path)
                page.wait_for_load_state("networkidle")
            assert violations == []
            page.goto(arena_server.url + "/")
            page.evaluate("""() => {
                const s = document.createElement('script');
                s.textContent = 'window.__injected = true';
                document.body.appendChild(s);
                const d = document.createElement('div');
                d.innerHTML = '<img src=x onerror="window.__handler = true">';
                document.body.appendChild(d);
            }""")
            page.wait_for_timeout(300)
            assert page.evaluate("() => [window.__injected === true, window.__handler === true]") == [False, False]
            assert any("Content Security Policy" in v for v in violations)
        finally:
            context.close()
