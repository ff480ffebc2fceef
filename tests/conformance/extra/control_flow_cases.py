#!/usr/bin/python3
"""Extra conformance-style cases for control flow / sequence / optional kernels.

Each case is written as <root>/<name>/model.onnx + test_data_set_0/{input,output}_N.pb with
numpy-computed expectations, so `tessel conformance <root>` runs them.
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper as h, numpy_helper as nh

ROOT = sys.argv[1]
shutil.rmtree(ROOT, ignore_errors=True)

F = TensorProto.FLOAT
I64 = TensorProto.INT64
B = TensorProto.BOOL
S = TensorProto.STRING


def tinfo(name, dtype, shape):
    return h.make_tensor_value_info(name, dtype, shape)


def seqinfo(name, dtype, shape=None):
    return h.make_value_info(name, h.make_sequence_type_proto(h.make_tensor_type_proto(dtype, shape)))


def optinfo(name, inner):
    return h.make_value_info(name, h.make_optional_type_proto(inner))


def save(name, graph, opset, inputs, outputs):
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 8
    d = os.path.join(ROOT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(model, os.path.join(d, "model.onnx"))

    def write(kind, i, v):
        if isinstance(v, list):
            proto = nh.from_list(v)
        elif isinstance(v, tuple) and v[0] == "opt":
            proto = nh.from_optional(v[1], dtype=v[2])
        else:
            proto = nh.from_array(np.asarray(v))
        with open(os.path.join(d, "test_data_set_0", f"{kind}_{i}.pb"), "wb") as f:
            f.write(proto.SerializeToString())

    for i, v in enumerate(inputs):
        write("input", i, v)
    for i, v in enumerate(outputs):
        write("output", i, v)


rng = np.random.default_rng(0)

# --- Scan (opset 16): two scan inputs on different axes/directions, outputs on other axes/prepend.
body = h.make_graph(
    [], "scan_body",
    [tinfo("s", F, [2]), tinfo("a", F, [2]), tinfo("b", F, [2])],
    [tinfo("b", F, [2]), tinfo("a", F, [2]), tinfo("b", F, [2])])
# Graph outputs may repeat a value; ONNX checker is lenient about it in subgraphs.
node = h.make_node("Scan", ["init", "x", "y"], ["final", "out1", "out2"], body=body, num_scan_inputs=2,
                   scan_input_axes=[0, -1], scan_input_directions=[0, 1], scan_output_axes=[1, 0],
                   scan_output_directions=[0, 1])
g = h.make_graph([node], "scan16_axes", [tinfo("init", F, [2]), tinfo("x", F, [3, 2]), tinfo("y", F, [2, 3])],
                 [tinfo("final", F, [2]), tinfo("out1", F, [2, 3]), tinfo("out2", F, [3, 2])])
init = rng.random(2, dtype=np.float32)
x = rng.random((3, 2), dtype=np.float32)
y = rng.random((2, 3), dtype=np.float32)
b_elems = [y[:, 2 - t] for t in range(3)]  # reverse scan along axis 1
out1 = np.stack([x[t] for t in range(3)], axis=1)
out2 = np.stack(b_elems[::-1], axis=0)  # prepended
save("scan16_axes", g, 16, [init, x, y], [b_elems[-1], out1, out2])

# --- Scan (opset 8): batched, sequence_lens, reverse direction, padded outputs.
body = h.make_graph([], "scan8_body", [tinfo("s", F, [2]), tinfo("a", F, [2])],
                    [tinfo("a", F, [2]), tinfo("a", F, [2])])
node = h.make_node("Scan", ["lens", "init", "x"], ["final", "out"], body=body, num_scan_inputs=1, directions=[1])
g = h.make_graph([node], "scan8_lens", [tinfo("lens", TensorProto.INT32, [2]), tinfo("init", F, [2, 2]),
                                       tinfo("x", F, [2, 3, 2])],
                 [tinfo("final", F, [2, 2]), tinfo("out", F, [2, 3, 2])])
lens = np.array([3, 2], dtype=np.int32)
init = rng.random((2, 2), dtype=np.float32)
x = rng.random((2, 3, 2), dtype=np.float32)
final = np.stack([x[0, 0], x[1, 0]])
out = np.zeros((2, 3, 2), np.float32)
out[0] = x[0, ::-1]
out[1, :2] = x[1, 1::-1]
save("scan8_lens", g, 8, [lens, init, x], [final, out])

# --- Loop: M = 3, iteration numbers as a scan output, carried value passes through.
body = h.make_graph([], "loop_body", [tinfo("i", I64, []), tinfo("c", B, []), tinfo("v", F, [2])],
                    [tinfo("c", B, []), tinfo("v", F, [2]), tinfo("i", I64, [])])
node = h.make_node("Loop", ["M", "", "v0"], ["v_final", "iters"], body=body)
g = h.make_graph([node], "loop_iters", [tinfo("M", I64, []), tinfo("v0", F, [2])],
                 [tinfo("v_final", F, [2]), tinfo("iters", I64, [None])])
v0 = rng.random(2, dtype=np.float32)
save("loop_iters", g, 13, [np.array(3, np.int64), v0], [v0, np.arange(3, dtype=np.int64)])

# --- Loop: zero iterations; the scan output is empty with the body's element shape.
body = h.make_graph([], "loop_body", [tinfo("i", I64, []), tinfo("c", B, []), tinfo("v", F, [2])],
                    [tinfo("c", B, []), tinfo("v", F, [2]), tinfo("v", F, [2])])
node = h.make_node("Loop", ["M", "cond", "v0"], ["v_final", "vs"], body=body)
g = h.make_graph([node], "loop_zero", [tinfo("M", I64, []), tinfo("cond", B, []), tinfo("v0", F, [2])],
                 [tinfo("v_final", F, [2]), tinfo("vs", F, [None, 2])])
save("loop_zero", g, 13, [np.array(5, np.int64), np.array(False), v0], [v0, np.zeros((0, 2), np.float32)])

# --- Loop: M = INT64_MAX (PyTorch's `while` idiom); the body's condition ends it after one trip.
empty_opt = h.make_node("Optional", [], ["none"], type=h.make_tensor_type_proto(F, [2]))
has = h.make_node("OptionalHasElement", ["none"], ["c_out"])
body = h.make_graph([empty_opt, has], "loop_body", [tinfo("i", I64, []), tinfo("c", B, []), tinfo("v", F, [2])],
                    [tinfo("c_out", B, []), tinfo("v", F, [2]), tinfo("i", I64, [])])
node = h.make_node("Loop", ["M", "cond", "v0"], ["v_final", "iters"], body=body)
g = h.make_graph([node], "loop_while", [tinfo("M", I64, []), tinfo("cond", B, []), tinfo("v0", F, [2])],
                 [tinfo("v_final", F, [2]), tinfo("iters", I64, [None])])
save("loop_while", g, 16, [np.array(2**63 - 1, np.int64), np.array(True), v0], [v0, np.array([0], np.int64)])

# --- Loop: an absurd M and no condition input must fail with a Diagnostic, not run for hours.
body = h.make_graph([], "loop_body", [tinfo("i", I64, []), tinfo("c", B, []), tinfo("v", F, [2])],
                    [tinfo("c", B, []), tinfo("v", F, [2])])
node = h.make_node("Loop", ["M", "", "v0"], ["v_final"], body=body)
g = h.make_graph([node], "loop_absurd", [tinfo("M", I64, []), tinfo("v0", F, [2])], [tinfo("v_final", F, [2])])
save("loop_absurd_error", g, 13, [np.array(2**40, np.int64), v0], [v0])

# --- Loop over a sequence-typed carried value (SequenceInsert of the iteration number).
ins = h.make_node("SequenceInsert", ["seq", "i"], ["seq_out"])
body = h.make_graph([ins], "loop_body", [tinfo("i", I64, []), tinfo("c", B, []), seqinfo("seq", I64, [])],
                    [tinfo("c", B, []), seqinfo("seq_out", I64, [])])
empty = h.make_node("SequenceEmpty", [], ["seq0"], dtype=I64)
node = h.make_node("Loop", ["M", "", "seq0"], ["seq_final"], body=body)
g = h.make_graph([empty, node], "loop_seq", [tinfo("M", I64, [])], [seqinfo("seq_final", I64, [])])
save("loop_seq", g, 13, [np.array(4, np.int64)], [[np.array(i, np.int64) for i in range(4)]])

# --- SplitToSequence variants.
x = rng.random((3, 5), dtype=np.float32)
for name, inputs, attrs, expected in [
    ("split_to_seq_default_nokeep", [], dict(axis=1, keepdims=0), [x[:, i] for i in range(5)]),
    ("split_to_seq_default_keep", [], dict(axis=-1), [x[:, i:i + 1] for i in range(5)]),
    ("split_to_seq_scalar", [np.array(2, np.int64)], dict(axis=1), [x[:, 0:2], x[:, 2:4], x[:, 4:5]]),
    ("split_to_seq_list", [np.array([1, 3, 1], np.int32)], dict(axis=1), [x[:, 0:1], x[:, 1:4], x[:, 4:5]]),
    ("split_to_seq_axis0", [np.array([2, 1], np.int64)], dict(axis=0), [x[0:2], x[2:3]]),
]:
    in_names = ["x"] + (["split"] if inputs else [])
    infos = [tinfo("x", F, [3, 5])] + ([tinfo("split", nh.from_array(inputs[0]).data_type,
                                              list(inputs[0].shape))] if inputs else [])
    node = h.make_node("SplitToSequence", in_names, ["seq"], **attrs)
    g = h.make_graph([node], name, infos, [seqinfo("seq", F)])
    save(name, g, 11, [x] + inputs, [expected])

# --- ConcatFromSequence: concatenate and stack.
parts = [rng.random((2, 3), dtype=np.float32) for _ in range(3)]
for name, attrs, expected in [
    ("concat_from_seq_axis1", dict(axis=1), np.concatenate(parts, axis=1)),
    ("concat_from_seq_new_axis_last", dict(axis=-1, new_axis=1), np.stack(parts, axis=-1)),
    ("concat_from_seq_new_axis_0", dict(axis=0, new_axis=1), np.stack(parts, axis=0)),
]:
    node = h.make_node("ConcatFromSequence", ["seq"], ["y"], **attrs)
    g = h.make_graph([node], name, [seqinfo("seq", F, [2, 3])], [tinfo("y", F, None)])
    save(name, g, 11, [parts], [expected])

# --- Sequence editing: erase/at with negative positions, insert in the middle, length.
a, b, c = (rng.random((2,), dtype=np.float32) for _ in range(3))
nodes = [
    h.make_node("SequenceConstruct", ["a", "b", "c"], ["s0"]),
    h.make_node("SequenceErase", ["s0", "neg1"], ["s1"]),          # [a, b]
    h.make_node("SequenceInsert", ["s1", "c", "one"], ["s2"]),     # [a, c, b]
    h.make_node("SequenceAt", ["s2", "neg2"], ["at"]),             # c
    h.make_node("SequenceLength", ["s2"], ["len"]),
    h.make_node("SequenceErase", ["s2"], ["s3"]),                  # [a, c]
]
g = h.make_graph(nodes, "sequence_edit", [tinfo(n, F, [2]) for n in "abc"],
                 [seqinfo("s3", F, [2]), tinfo("at", F, [2]), tinfo("len", I64, [])],
                 initializer=[nh.from_array(np.array(-1, np.int64), "neg1"),
                              nh.from_array(np.array(1, np.int64), "one"),
                              nh.from_array(np.array(-2, np.int32), "neg2")])
save("sequence_edit", g, 12, [a, b, c], [[a, c], c, np.array(3, np.int64)])

# --- Strings survive split/concat.
words = np.array([["a", "bb"], ["ccc", "d"]], dtype=object)
nodes = [h.make_node("SplitToSequence", ["x"], ["seq"], axis=1),
         h.make_node("ConcatFromSequence", ["seq"], ["y"], axis=0)]
g = h.make_graph(nodes, "strings", [tinfo("x", S, [2, 2])], [tinfo("y", S, [4, 1])])
save("sequence_strings", g, 11, [words], [np.concatenate([words[:, 0:1], words[:, 1:2]], axis=0)])

# --- Optional: wrap, unwrap, and test an empty optional fed as input.
x = rng.random((3,), dtype=np.float32)
nodes = [h.make_node("Optional", ["x"], ["ox"]),
         h.make_node("OptionalGetElement", ["ox"], ["y"]),
         h.make_node("OptionalHasElement", ["ox"], ["has_x"]),
         h.make_node("OptionalHasElement", ["maybe"], ["has_maybe"])]
g = h.make_graph(nodes, "optional_roundtrip",
                 [tinfo("x", F, [3]), optinfo("maybe", h.make_tensor_type_proto(F, [3]))],
                 [tinfo("y", F, [3]), tinfo("has_x", B, []), tinfo("has_maybe", B, [])])
save("optional_roundtrip", g, 15, [x, ("opt", None, onnx.OptionalProto.TENSOR)],
     [x, np.array(True), np.array(False)])

# --- If with a sequence output built from an outer-scope value.
then_g = h.make_graph([h.make_node("SequenceConstruct", ["x", "x"], ["s"])], "then", [], [seqinfo("s", F, [3])])
else_g = h.make_graph([h.make_node("SequenceConstruct", ["x"], ["s2"])], "else", [], [seqinfo("s2", F, [3])])
node = h.make_node("If", ["cond"], ["out"], then_branch=then_g, else_branch=else_g)
g = h.make_graph([node], "if_outer", [tinfo("cond", B, []), tinfo("x", F, [3])], [seqinfo("out", F, [3])])
save("if_outer_seq", g, 13, [np.array(False), x], [[x]])


# --- Error paths: each must fail with a Diagnostic naming the node, never crash.
nodes = [h.make_node("SequenceConstruct", ["x"], ["s"]), h.make_node("SequenceAt", ["s", "pos"], ["y"])]
g = h.make_graph(nodes, "at_oob", [tinfo("x", F, [3]), tinfo("pos", I64, [])], [tinfo("y", F, [3])])
save("sequence_at_out_of_range_error", g, 11, [x, np.array(-2, np.int64)], [x])
g = h.make_graph([h.make_node("OptionalGetElement", ["maybe"], ["y"])], "get_empty",
                 [optinfo("maybe", h.make_tensor_type_proto(F, [3]))], [tinfo("y", F, [3])])
save("optional_get_empty_error", g, 15, [("opt", None, onnx.OptionalProto.TENSOR)], [x])
body = h.make_graph([], "scan_body", [tinfo("a", F, [2]), tinfo("b", F, [2])], [tinfo("a", F, [2])])
node = h.make_node("Scan", ["x", "y"], ["out"], body=body, num_scan_inputs=2)
g = h.make_graph([node], "scan_mismatch", [tinfo("x", F, [3, 2]), tinfo("y", F, [4, 2])], [tinfo("out", F, [3, 2])])
save("scan_length_mismatch_error", g, 16, [np.zeros((3, 2), np.float32), np.zeros((4, 2), np.float32)],
     [np.zeros((3, 2), np.float32)])
nodes = [h.make_node("SplitToSequence", ["x", "split"], ["s"], axis=0)]
g = h.make_graph(nodes, "split_bad", [tinfo("x", F, [3]), tinfo("split", I64, [2])], [seqinfo("s", F)])
save("split_to_seq_bad_sum_error", g, 11, [x, np.array([1, 1], np.int64)], [[x]])

print("wrote cases under", ROOT)
