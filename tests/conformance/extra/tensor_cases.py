#!/usr/bin/python3
"""Extra conformance cases for the tensor (data movement) kernels: edge semantics the ONNX suite
lacks (string and bool data, GatherND batch_dims, scatter reductions, TopK ties, every Resize
coordinate mode with every interpolation, opset-7/9/10 Upsample and Resize, extreme Slice bounds),
with numpy-computed expectations (ONNX's own numpy references where it has them), and invalid
cases (error_*) that must fail with a diagnostic.
Usage: tensor_cases.py OUT_DIR"""
import os, shutil, sys, numpy as np, onnx
import casegen
from onnx import helper, numpy_helper, TensorProto as TP
root = sys.argv[1]
shutil.rmtree(root, ignore_errors=True)
def case(name, op, inputs, outputs, opset, **attrs):
    casegen.op_case(root, name, op, inputs, outputs, opset, **attrs)


sys.path.insert(0, '/usr/lib/python3/dist-packages')
from onnx.backend.test.case.node.gathernd import gather_nd_impl
from onnx.backend.test.case.node.scatterelements import scatter_elements
from onnx.backend.test.case.node.scatternd import scatter_nd_impl
from onnx.backend.test.case.node.resize import interpolate_nd, linear_coeffs, nearest_coeffs, cubic_coeffs

f32, i64 = np.float32, np.int64
rng = np.random.default_rng(0)
s = np.array([['a', 'bb', 'ccc'], ['d', 'ee', 'f']], dtype=object)
x = np.arange(6, dtype=f32).reshape(2, 3)

# Strings and bools move like any other element.
case('string_gather_neg', 'Gather', [s, np.array([-1, 0], i64)], [s[:, [-1, 0]]], 13, axis=1)
case('string_pad_edge', 'Pad', [s, np.array([0, 1, 1, 2], i64)], [np.pad(s, ((0, 1), (1, 2)), mode='edge')], 13, mode='edge')
case('string_pad_constant', 'Pad', [s, np.array([1, 0, 0, 1], i64), np.array('X', dtype=object)],
     [np.pad(s, ((1, 0), (0, 1)), mode='constant', constant_values='X')], 13)
case('string_pad_default', 'Pad', [s, np.array([0, 0, 0, 1], i64)], [np.pad(s, ((0, 0), (0, 1)), constant_values='')], 13)
case('string_transpose', 'Transpose', [s], [s.T], 13)
case('string_concat', 'Concat', [s, s[:1]], [np.concatenate([s, s[:1]])], 13, axis=0)
case('string_split', 'Split', [s, np.array([1, 2], i64)], [s[:, :1], s[:, 1:]], 13, axis=1)
case('string_slice_neg_step', 'Slice', [s, np.array([-1], i64), np.array([-100], i64), np.array([1], i64), np.array([-2], i64)],
     [s[:, -1:-100:-2]], 13)
case('string_tile', 'Tile', [s, np.array([2, 1], i64)], [np.tile(s, (2, 1))], 13)
case('string_expand', 'Expand', [s, np.array([2, 1, 1], i64)], [np.broadcast_to(s, (2, 2, 3)).copy()], 13)
su, si, sinv, sc = np.unique(s.reshape(-1).astype(str), True, True, True)
case('string_unique', 'Unique', [np.array(['b', 'a', 'b', 'c', 'a'], dtype=object)],
     [np.array(['a', 'b', 'c'], dtype=object), np.array([1, 0, 3], i64), np.array([1, 0, 1, 2, 0], i64), np.array([2, 2, 1], i64)], 11)
case('string_nonzero', 'NonZero', [np.array(['', 'a', '', 'b'], dtype=object)], [np.array([[1, 3]], i64)], 13)
se = s.copy(); se[0, 2] = 'U'; se[0, 0] = 'V'
case('string_scatter_elements', 'ScatterElements', [s, np.array([[2, 0]], i64), np.array([['U', 'V']], dtype=object)], [se], 13, axis=1)
tr = s.copy(); tr[1, 0] = ''
case('string_trilu', 'Trilu', [s], [tr], 14)
case('string_gathernd', 'GatherND', [s, np.array([[1, 1], [0, -1]], i64)], [np.array(['ee', 'ccc'], dtype=object)], 13)
case('string_constant_of_shape', 'ConstantOfShape', [np.array([1, 2], i64)], [np.full((1, 2), 'z', dtype=object)], 11,
     value=numpy_helper.from_array(np.array(['z'], dtype=object)))
b = np.array([[True, False, True], [False, False, True]])
case('bool_transpose', 'Transpose', [b], [b.T], 13)
case('bool_compress', 'Compress', [b, np.array([False, True, True])], [b[:, 1:]], 11, axis=1)
case('bool_reverse_sequence', 'ReverseSequence', [b, np.array([2, 1, 0], i64)], [np.array([[False, False, True], [True, False, True]])],
     10, batch_axis=1, time_axis=0)

# Index ops beyond the suite.
data = rng.integers(0, 100, (2, 3, 4, 5)).astype(f32)
idx = np.stack([rng.integers(-4, 4, (2, 3, 6)), rng.integers(-5, 5, (2, 3, 6))], -1).astype(i64)
case('gathernd_batch_dims2_negative', 'GatherND', [data, idx], [gather_nd_impl(data, np.where(idx < 0, idx + np.array([4, 5]), idx), 2)],
     13, batch_dims=2)
d2 = rng.integers(-5, 5, (4, 5)).astype(i64)
si = rng.integers(0, 4, (3, 5)).astype(i64); su = rng.integers(-3, 3, (3, 5)).astype(i64)
ndi = np.array([[1], [3], [1]], i64); ndu = rng.integers(-3, 3, (3, 5)).astype(i64)
for red in ['add', 'mul']:
    case(f'scatter_elements_{red}_dup', 'ScatterElements', [d2, si, su], [scatter_elements(d2, si, su, 0, red)], 16, axis=0, reduction=red)
    case(f'scatternd_{red}_dup_i64', 'ScatterND', [d2, ndi, ndu], [scatter_nd_impl(d2, ndi, ndu, red)], 16, reduction=red)
case('scatter_elements_i64_wrap', 'ScatterElements', [np.array([2**63 - 1], i64), np.array([0], i64), np.array([1], i64)],
     [np.array([-2**63], i64)], 16, reduction='add')
case('onehot_out_of_range_is_off', 'OneHot', [np.array([-1, 3, -4, 7], i64), np.array(3, f32), np.array([0, 5], f32)],
     [np.array([[0, 0, 5], [0, 0, 0], [0, 0, 0], [0, 0, 0]], f32)], 11)
t = np.array([[3, 1, 3, 2, 1, 3], [5, 5, 5, 0, 0, 0]], i64)
o = np.argsort(-t, axis=1, kind='stable')[:, :4]
case('topk_ties_lower_index_first', 'TopK', [t, np.array([4], i64)], [np.take_along_axis(t, o, 1), o.astype(i64)], 11, axis=1)
o = np.argsort(t, axis=1, kind='stable')[:, :3]
case('topk_smallest_ties', 'TopK', [t, np.array([3], i64)], [np.take_along_axis(t, o, 1), o.astype(i64)], 11, axis=1, largest=0)
case('topk_opset1_attr_k', 'TopK', [x], [x[:, ::-1][:, :2], np.array([[2, 1], [2, 1]], i64)], 1, k=2)
big = np.array([2**62 + 1, 2**62, 2**62 + 2], i64)
case('topk_i64_exact', 'TopK', [big, np.array([1], i64)], [np.array([2**62 + 2], i64), np.array([2], i64)], 11)
case('cumsum_i64_wrap', 'CumSum', [np.array([2**63 - 1, 1], i64), np.array(0, i64)], [np.array([2**63 - 1, -2**63], i64)], 14)

# Layout ops beyond the suite.
mn, mx = np.iinfo(i64).min, np.iinfo(i64).max
case('slice_extreme_bounds', 'Slice', [x, np.array([mx], i64), np.array([mn], i64), np.array([1], i64), np.array([mn], i64)], [x[:, 2:3]], 13)
case('slice_opset1_attrs', 'Slice', [x], [x[:, 1:]], 1, starts=[1], ends=[1000], axes=[1])
case('pad_reflect_wide', 'Pad', [x, np.array([0, 7, 0, 9], i64)], [np.pad(x, ((0, 0), (7, 9)), 'reflect')], 13, mode='reflect')
case('pad_negative_crop', 'Pad', [x, np.array([-1, 1, 0, -1], i64)], [np.pad(x, ((0, 0), (1, 0)))[1:, :-1]], 13)
case('pad_opset2_value', 'Pad', [x], [np.pad(x, ((1, 0), (0, 0)), constant_values=7)], 2, pads=[1, 0, 0, 0], value=7.0)
case('split_opset2_attr', 'Split', [x], [x[:, :1], x[:, 1:]], 2, axis=1, split=[1, 2])
case('tile_zero_repeat', 'Tile', [x, np.array([0, 2], i64)], [np.zeros((0, 6), f32)], 13)
case('reshape_allowzero_empty', 'Reshape', [np.zeros((0, 3), f32), np.array([3, 0], i64)], [np.zeros((3, 0), f32)], 14, allowzero=1)
case('depth_to_space_crd_i8', 'DepthToSpace', [np.arange(16, dtype=np.int8).reshape(1, 4, 2, 2)],
     [np.arange(16, dtype=np.int8).reshape(1, 1, 2, 2, 2, 2).transpose(0, 1, 4, 2, 5, 3).reshape(1, 1, 4, 4)], 13, blocksize=2, mode='CRD')
case('eyelike_k_beyond', 'EyeLike', [x], [np.zeros((2, 3), f32)], 9, k=5)
case('range_i64_extremes', 'Range', [np.array(mn, i64), np.array(mx, i64), np.array(mx, i64)], [np.array([mn, -1], i64)], 11)

# Resize: every coordinate mode with every interpolation, and the old forms.
img = rng.random((1, 2, 5, 7)).astype(f32)
for mode, coeffs in [('linear', linear_coeffs), ('nearest', nearest_coeffs), ('cubic', cubic_coeffs)]:
    for ctm in ['half_pixel', 'align_corners', 'asymmetric', 'pytorch_half_pixel']:
        sizes = np.array([1, 2, 3, 11], i64)
        out = interpolate_nd(img, coeffs, output_size=sizes, coordinate_transformation_mode=ctm).astype(f32)
        case(f'resize_{mode}_{ctm}', 'Resize', [img, None, None, sizes], [out], 13, mode=mode, coordinate_transformation_mode=ctm)
roi = np.array([0, 0, 0.2, 0.1, 1, 1, 0.9, 1.3], f32)
sizes = np.array([1, 2, 4, 6], i64)
out = interpolate_nd(img, cubic_coeffs, output_size=sizes, roi=roi, coordinate_transformation_mode='tf_crop_and_resize',
                     extrapolation_value=-3.0).astype(f32)
case('resize_crop_cubic_extrapolate', 'Resize', [img, roi, None, sizes], [out], 13, mode='cubic',
     coordinate_transformation_mode='tf_crop_and_resize', extrapolation_value=-3.0)
u8 = rng.integers(0, 255, (1, 1, 3, 4)).astype(np.uint8)
sc = np.array([1, 1, 2.5, 1.5], f32)
case('resize_u8_nearest', 'Resize', [u8, None, sc], [interpolate_nd(u8, nearest_coeffs, scale_factors=sc).astype(np.uint8)], 13, mode='nearest')
sc = np.array([1, 1, 2, 1.5], f32)
out = interpolate_nd(img, linear_coeffs, scale_factors=sc, coordinate_transformation_mode='asymmetric').astype(f32)
case('upsample9_linear', 'Upsample', [img, sc], [out], 9, mode='linear')
case('resize10_linear', 'Resize', [img, sc], [out], 10, mode='linear')
out = interpolate_nd(img, lambda r: nearest_coeffs(r, 'floor'), scale_factors=np.array([1, 1, 2, 3], f32),
                     coordinate_transformation_mode='asymmetric').astype(f32)
case('upsample7_nearest_attr', 'Upsample', [img], [out], 7, mode='nearest', scales=[1.0, 1.0, 2.0, 3.0])

# Invalid on purpose: each must fail with a diagnostic (see expected_failures.txt).
case('error_gather_out_of_range', 'Gather', [x, np.array([0, 3], i64)], [x], 13, axis=1)
case('error_gather_elements_negative', 'GatherElements', [x, np.array([[0, -4, 0]], i64)], [x], 13, axis=1)
case('error_gathernd_out_of_range', 'GatherND', [x, np.array([[1, 3]], i64)], [x], 13)
case('error_scatter_elements_out_of_range', 'ScatterElements', [x, np.array([[0, -9]], i64), np.ones((1, 2), f32)], [x], 13, axis=1)
case('error_scatternd_out_of_range', 'ScatterND', [x, np.array([[2]], i64), np.ones((1, 3), f32)], [x], 13)
case('error_reshape_huge', 'Reshape', [x, np.array([1 << 40, 1 << 40], i64)], [x], 13)
case('error_reshape_two_inferred', 'Reshape', [x, np.array([-1, -1], i64)], [x], 13)
case('error_expand_huge', 'Expand', [x, np.array([0, 1 << 62, 2, 3], i64)], [x], 13)
case('error_tile_huge', 'Tile', [x, np.array([mx, 1], i64)], [x], 13)
case('error_tile_negative', 'Tile', [x, np.array([-1, 1], i64)], [x], 13)
case('error_range_huge', 'Range', [np.array(0, i64), np.array(1 << 60, i64), np.array(1, i64)], [np.zeros(1, i64)], 11)
case('error_range_zero_delta', 'Range', [np.array(0, f32), np.array(1, f32), np.array(0, f32)], [np.zeros(1, f32)], 11)
case('error_constant_of_shape_negative', 'ConstantOfShape', [np.array([-1], i64)], [np.zeros(1, f32)], 11)
case('error_constant_of_shape_huge', 'ConstantOfShape', [np.array([1 << 40, 1 << 40], i64)], [np.zeros(1, f32)], 11)
case('error_pad_huge', 'Pad', [x, np.array([mx, 0, mx, 0], i64)], [x], 13)
case('error_slice_zero_step', 'Slice', [x, np.array([0], i64), np.array([2], i64), np.array([1], i64), np.array([0], i64)], [x], 13)
case('error_split_bad_sum', 'Split', [x, np.array([mx, 2], i64)], [x, x], 13, axis=1)
case('error_topk_k_too_big', 'TopK', [x, np.array([4], i64)], [x, np.zeros((2, 3), i64)], 11)
case('error_resize_sizes_huge', 'Resize', [x, None, None, np.array([0, 1 << 62], i64)], [x], 13)
case('error_resize_scale_negative', 'Resize', [x, None, np.array([-1, 1], f32)], [x], 13)
case('error_squeeze_not_one', 'Squeeze', [x, np.array([1], i64)], [x], 13)
case('error_transpose_bad_perm', 'Transpose', [x], [x], 13, perm=[0, 0])
