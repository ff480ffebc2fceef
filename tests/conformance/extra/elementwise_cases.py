#!/usr/bin/python3
"""Extra conformance cases for the elementwise kernels: edge semantics the ONNX suite lacks (legacy
broadcast, integer wrap-around, Mod sign rules, mixed-type Pow, string casts), with numpy-computed
expectations, and invalid cases (error_*) that must fail with a diagnostic.
Usage: elementwise_cases.py OUT_DIR"""
import os, shutil, sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto as TP
root = sys.argv[1]
shutil.rmtree(root, ignore_errors=True)
NP2TP = {np.float32: TP.FLOAT, np.float64: TP.DOUBLE, np.float16: TP.FLOAT16, np.int8: TP.INT8, np.int16: TP.INT16,
         np.int32: TP.INT32, np.int64: TP.INT64, np.uint8: TP.UINT8, np.uint16: TP.UINT16, np.uint32: TP.UINT32,
         np.uint64: TP.UINT64, np.bool_: TP.BOOL, np.object_: TP.STRING}
def tp(a): return NP2TP[a.dtype.type]
def case(name, op, inputs, outputs, opset, **attrs):
    ins = [f'in{i}' if x is not None else '' for i, x in enumerate(inputs)]
    node = helper.make_node(op, ins, [f'out{i}' for i in range(len(outputs))], **attrs)
    gi = [helper.make_tensor_value_info(f'in{i}', tp(x), x.shape) for i, x in enumerate(inputs) if x is not None]
    go = [helper.make_tensor_value_info(f'out{i}', tp(y), y.shape) for i, y in enumerate(outputs)]
    g = helper.make_graph([node], name, gi, go)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', opset)])
    m.ir_version = 7 if opset >= 7 else 3
    d = os.path.join(root, name); os.makedirs(d + '/test_data_set_0')
    onnx.save(m, d + '/model.onnx')
    k = 0
    for i, x in enumerate(inputs):
        if x is None: continue
        open(f'{d}/test_data_set_0/input_{k}.pb', 'wb').write(numpy_helper.from_array(x, f'in{i}').SerializeToString()); k += 1
    for i, y in enumerate(outputs):
        open(f'{d}/test_data_set_0/output_{i}.pb', 'wb').write(numpy_helper.from_array(y, f'out{i}').SerializeToString())

f32 = np.float32
a = np.arange(24, dtype=f32).reshape(2, 3, 4)
b = np.array([10, 20, 30], dtype=f32)
case('legacy_add_axis1', 'Add', [a, b], [a + b.reshape(3, 1)], 6, broadcast=1, axis=1)
case('legacy_add_trailing', 'Add', [a, np.ones(4, f32)], [a + 1], 6, broadcast=1)
case('legacy_mul_same', 'Mul', [a, a], [a * a], 6)
case('legacy_greater_axis0', 'Greater', [a, np.array([5, 15], f32)], [a > np.array([5, 15], f32).reshape(2, 1, 1)], 1, broadcast=1, axis=0)
x = np.array([-5, -3, -1, 0, 1, 3, 5, -128, 127], np.int8)
y = np.array([2, -2, 3, -3, 2, 2, -2, -1, -1], np.int8)
case('div_int8', 'Div', [x, y], [np.array([int(p / q) for p, q in zip(x.tolist(), y.tolist())], np.int64).astype(np.int8)], 14)
case('mod_int8_py', 'Mod', [x, y], [np.mod(x, y)], 13)
case('mod_int8_c', 'Mod', [x, y], [np.fmod(x, y)], 13, fmod=1)
case('mod_bcast_i32', 'Mod', [np.arange(-6, 6, dtype=np.int32).reshape(3, 4), np.array([3, -3, 5, -7], np.int32)],
     [np.mod(np.arange(-6, 6, dtype=np.int32).reshape(3, 4), np.array([3, -3, 5, -7], np.int32))], 13)
u = np.array([200, 100, 255], np.uint8)
case('add_u8_wrap', 'Add', [u, u], [u + u], 14)
case('mul_u16_wrap', 'Mul', [np.array([65535, 300], np.uint16)] * 2, [np.array([65535, 300], np.uint16) * np.array([65535, 300], np.uint16)], 14)
i64 = np.array([2**62, -2**63, 9007199254740993], np.int64)
case('add_i64_exact', 'Add', [i64, np.array([1, 0, 2], np.int64)], [i64 + np.array([1, 0, 2], np.int64)], 14)
case('abs_i8', 'Abs', [x], [np.abs(x)], 13)
case('neg_i32', 'Neg', [np.array([1, -2, 0], np.int32)], [np.array([-1, 2, 0], np.int32)], 13)
case('sign_f', 'Sign', [np.array([-2, 0, 3, np.nan], f32)], [np.sign(np.array([-2, 0, 3, np.nan], f32))], 13)
case('sign_u8', 'Sign', [np.array([0, 3], np.uint8)], [np.array([0, 1], np.uint8)], 13)
case('round_half_even', 'Round', [np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4], f32)], [np.round(np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4], f32))], 11)
case('relu_i32', 'Relu', [np.array([-3, 0, 4], np.int32)], [np.array([0, 0, 4], np.int32)], 14)
case('clip_opset6', 'Clip', [np.array([-3, 0.5, 4], f32)], [np.array([-1, 0.5, 2], f32)], 6, min=-1.0, max=2.0)
case('clip_opset6_max_only', 'Clip', [np.array([-3, 0.5, 4], f32)], [np.array([-3, 0.5, 2], f32)], 6, max=2.0)
case('clip_i64_minmax_swap', 'Clip', [np.array([-3, 0, 4], np.int64), np.array(3, np.int64), np.array(1, np.int64)], [np.array([1, 1, 1], np.int64)], 13)
case('clip_f16', 'Clip', [np.array([-3, 0.5, 4], np.float16), np.array(-1, np.float16), np.array(2, np.float16)], [np.array([-1, 0.5, 2], np.float16)], 13)
case('pow_i64', 'Pow', [np.array([2, -3, 7], np.int64), np.array([62, 3, 0], np.int64)], [np.array([2**62, -27, 1], np.int64)], 15)
case('pow_i32_f64exp', 'Pow', [np.array([2, 9], np.int32), np.array([0.5, 0.5])], [np.array([1, 3], np.int32)], 15)
case('pow_f16_u8', 'Pow', [np.array([1.5, 2], np.float16), np.array([2, 3], np.uint8)], [np.array([2.25, 8], np.float16)], 15)
case('pow_opset1_legacy', 'Pow', [a, np.array([2], f32)], [a ** 2], 1, broadcast=1)
case('bitshift_u8_big', 'BitShift', [np.array([1, 255, 128], np.uint8), np.array([8, 1, 7], np.uint8)], [np.array([0, 254, 0], np.uint8)], 11, direction='LEFT')
case('bitshift_u64_right', 'BitShift', [np.array([2**63, 5], np.uint64), np.array([63, 64], np.uint64)], [np.array([1, 0], np.uint64)], 11, direction='RIGHT')
case('equal_string', 'Equal', [np.array(['a', 'b'], object), np.array(['a'], object)], [np.array([True, False])], 13)
case('equal_bool', 'Equal', [np.array([True, False]), np.array([True, True])], [np.array([True, False])], 13)
case('less_i64_exact', 'Less', [np.array([2**53 + 1], np.int64), np.array([2**53 + 2], np.int64)], [np.array([True])], 13)
case('where_string', 'Where', [np.array([[True], [False]]), np.array(['x', 'y'], object), np.array(['z'], object)],
     [np.array([['x', 'y'], ['z', 'z']], object)], 16)
case('where_i64', 'Where', [np.array([True, False]), np.array([1, 2], np.int64), np.array([3, 4], np.int64)], [np.array([1, 4], np.int64)], 16)
case('max_nan', 'Max', [np.array([1, np.nan, 3], f32), np.array([np.nan, 2, 1], f32)], [np.array([np.nan, np.nan, 3], f32)], 13)
case('max_3_bcast', 'Max', [np.array([1, 5], f32), np.array([[3], [0]], f32), np.array(2, f32)], [np.maximum(np.maximum(np.array([1, 5], f32), np.array([[3], [0]], f32)), f32(2))], 13)
case('min_u64', 'Min', [np.array([2**64 - 1, 3], np.uint64), np.array([2**64 - 2, 4], np.uint64)], [np.array([2**64 - 2, 3], np.uint64)], 13)
case('sum_i32', 'Sum', [np.array([1, 2], np.int32), np.array([[10], [20]], np.int32)], [np.array([[11, 12], [21, 22]], np.int32)], 13)
case('mean_f64_3', 'Mean', [np.array([1, 2], np.float64), np.array([4, 4], np.float64), np.array([1, 0], np.float64)], [np.array([2, 2], np.float64)], 13)
case('isinf_neg_only', 'IsInf', [np.array([np.inf, -np.inf, 1, np.nan], f32)], [np.array([False, True, False, False])], 10, detect_positive=0)
case('isnan_f16', 'IsNaN', [np.array([np.nan, 1], np.float16)], [np.array([True, False])], 13)
case('not', 'Not', [np.array([True, False])], [np.array([False, True])], 1)
case('xor_bcast', 'Xor', [np.array([[True], [False]]), np.array([True, False])], [np.array([[False, True], [True, False]])], 7)
# Casts
vals = np.array([0.1, 1.0, 1e-5, 1.5e16, -0.0, 123456.789, np.nan, -np.inf, 1e-4, 100.0, 3.14159265], f32)
case('cast_f32_to_string', 'Cast', [vals], [np.array([str(v) for v in vals], object)], 13, to=TP.STRING)
vals64 = np.array([0.1, 1.0, 1e-5, 1e16, 1e300, 2.0 / 3, 5e-324], np.float64)
case('cast_f64_to_string', 'Cast', [vals64], [np.array([str(v) for v in vals64], object)], 13, to=TP.STRING)
vals16 = np.array([0.1, 1.0, 65504, 6e-5, 0.333], np.float16)
case('cast_f16_to_string', 'Cast', [vals16], [np.array([str(v) for v in vals16], object)], 13, to=TP.STRING)
ints = np.array([-5, 0, 127], np.int8)
case('cast_i8_to_string', 'Cast', [ints], [np.array([str(v) for v in ints], object)], 13, to=TP.STRING)
case('cast_bool_to_string', 'Cast', [np.array([True, False])], [np.array(['True', 'False'], object)], 13, to=TP.STRING)
strs = np.array(['12', '-7', ' 3 ', '+4'], object)
case('cast_string_to_i32', 'Cast', [strs], [np.array([12, -7, 3, 4], np.int32)], 13, to=TP.INT32)
case('cast_string_to_f64', 'Cast', [np.array(['1e-5', 'nan', '-Inf', '0.1'], object)], [np.array([1e-5, np.nan, -np.inf, 0.1])], 13, to=TP.DOUBLE)
fl = np.array([-1.7, 1.7, 300.5, -0.0, 2.5], f32)
case('cast_f32_to_i32', 'Cast', [fl], [fl.astype(np.int32)], 13, to=TP.INT32)
case('cast_f32_to_u8', 'Cast', [np.array([1.7, 255.9, 3.0], f32)], [np.array([1, 255, 3], np.uint8)], 13, to=TP.UINT8)
case('cast_i64_to_i8', 'Cast', [np.array([300, -129, 5], np.int64)], [np.array([300, -129, 5], np.int64).astype(np.int8)], 13, to=TP.INT8)
case('cast_f32_to_bool', 'Cast', [np.array([0, -0.0, 0.5, np.nan], f32)], [np.array([False, False, True, True])], 13, to=TP.BOOL)
case('cast_bool_to_f16', 'Cast', [np.array([True, False])], [np.array([1, 0], np.float16)], 13, to=TP.FLOAT16)
dd = np.array([1 + 2**-11 + 2**-40, 65519.0, 65520.0, 1e-8, 0.1], np.float64)
case('cast_f64_to_f16_exact_rounding', 'Cast', [dd], [dd.astype(np.float16)], 13, to=TP.FLOAT16)
case('cast_i64_to_f32', 'Cast', [np.array([2**53 + 1, 16777217], np.int64)], [np.array([2**53 + 1, 16777217], np.int64).astype(f32)], 13, to=TP.FLOAT)
case('cast_opset1_string_to', 'Cast', [np.array([1.5, -2.5], f32)], [np.array([1, -2], np.int32)], 1, to='INT32')
case('castlike_i32_to_f64', 'CastLike', [np.array([1, 2], np.int32), np.array([0.0])], [np.array([1.0, 2.0])], 15)
case('prelu_opset6_channel', 'PRelu', [a - 10, np.array([0.1, 0.2, 0.3], f32)], [np.where(a - 10 < 0, (a - 10) * np.array([0.1, 0.2, 0.3], f32).reshape(3, 1), a - 10)], 6)
case('shrink_i32', 'Shrink', [np.array([-3, -1, 0, 1, 3], np.int32)], [np.array([-2, 0, 0, 0, 2], np.int32)], 9, lambd=1.5, bias=1.0)
case('softplus_big', 'Softplus', [np.array([-1000, 0, 1000], np.float64)], [np.array([0, np.log(2), 1000], np.float64)], 1)
case('hardswish_f64', 'HardSwish', [np.array([-4, -1, 0, 1, 4], np.float64)], [np.array([-4, -1, 0, 1, 4.0]) * np.clip(np.array([-4, -1, 0, 1, 4.0]) / 6 + 0.5, 0, 1)], 14)
case('sigmoid_bf_f16', 'Sigmoid', [np.array([-20, 0, 20], np.float16)], [(1 / (1 + np.exp(-np.array([-20, 0, 20], np.float64)))).astype(np.float16)], 13)

# Invalid cases: each must fail with a diagnostic, never crash.
i = np.array([1, 0], np.int32)
case('error_div_by_zero', 'Div', [np.array([1, 2], np.int32), i], [i], 14)
case('error_mod_by_zero', 'Mod', [np.array([1, 2], np.int32), i], [i], 13)
case('error_mod_float_fmod0', 'Mod', [np.array([1, 2], f32), np.array([1, 2], f32)], [np.array([1, 2], f32)], 13)
case('error_mod_fmod2', 'Mod', [i, i], [i], 13, fmod=2)
case('error_bitshift_bad_dir', 'BitShift', [np.array([1], np.uint8), np.array([1], np.uint8)], [np.array([1], np.uint8)], 11, direction='UP')
case('error_bitshift_no_dir', 'BitShift', [np.array([1], np.uint8), np.array([1], np.uint8)], [np.array([1], np.uint8)], 11)
case('error_clip_vector_min', 'Clip', [np.array([1, 2], f32), np.array([0, 1], f32)], [np.array([1, 2], f32)], 13)
case('error_add_no_broadcast', 'Add', [np.zeros((2, 3), f32), np.zeros((4,), f32)], [np.zeros((2, 3), f32)], 14)
case('error_cast_string_garbage', 'Cast', [np.array(['abc'], object)], [np.array([0], f32)], 13, to=TP.FLOAT)
case('error_cast_bad_to', 'Cast', [np.array([1], f32)], [np.array([0], f32)], 13, to=99)
case('error_legacy_axis_too_big', 'Add', [np.zeros((2, 3), f32), np.zeros((3,), f32)], [np.zeros((2, 3), f32)], 6, broadcast=1, axis=2)
case('error_legacy_no_broadcast', 'Add', [np.zeros((2, 3), f32), np.zeros((3,), f32)], [np.zeros((2, 3), f32)], 6)
case('error_prelu_slope_too_big', 'PRelu', [np.zeros((3,), f32), np.zeros((2, 3), f32)], [np.zeros((3,), f32)], 16)
case('error_celu_alpha0', 'Celu', [np.zeros((3,), f32)], [np.zeros((3,), f32)], 12, alpha=0.0)
