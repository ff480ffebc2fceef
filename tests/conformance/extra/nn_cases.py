#!/usr/bin/python3
"""Extra conformance cases for the nn and quantization families beyond the ONNX suite (groups and
dilations in 3-D, ConvTranspose with groups, ceil_mode pools with pads, storage_order, LpPool,
opset-11 softmax coercion, per-axis and int8 quantization, einsum forms, ...), with expectations
from independent, loop-based numpy implementations. Usage: nn_cases.py OUT_DIR; then
`tessel conformance OUT_DIR`. Cases ending in _error are invalid on purpose."""
import itertools, math, os, shutil, sys
import numpy as np, onnx
import casegen
from onnx import helper, numpy_helper

OUT = sys.argv[1]
shutil.rmtree(OUT, ignore_errors=True)
rng = np.random.default_rng(0)


def save(name, node, inputs, outputs, opset=17):
    casegen.node_case(OUT, name, node, inputs, outputs, opset)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# ---- Convolutions: direct loops over output positions.
def conv_ref(x, w, b, strides, dil, pb, group):
    N, C = x.shape[:2]; M = w.shape[0]; K = w.shape[2:]; S = x.shape[2:]
    out = [(S[i] + pb[i] + pb[i + len(S)] - (K[i] - 1) * dil[i] - 1) // strides[i] + 1 for i in range(len(S))]
    y = np.zeros((N, M, *out))
    cg = C // group; mg = M // group
    for n, m in itertools.product(range(N), range(M)):
        g = m // mg
        for o in itertools.product(*[range(v) for v in out]):
            acc = b[m] if b is not None else 0.0
            for c in range(cg):
                for k in itertools.product(*[range(v) for v in K]):
                    pos = [o[i] * strides[i] + k[i] * dil[i] - pb[i] for i in range(len(S))]
                    if all(0 <= pos[i] < S[i] for i in range(len(S))):
                        acc += float(x[(n, g * cg + c, *pos)]) * float(w[(m, c, *k)])
            y[(n, m, *o)] = acc
    return y.astype(np.float32)


x = f32(2, 4, 5, 6, 5); w = f32(6, 2, 2, 3, 2); b = f32(6)
pads = [1, 0, 1, 0, 2, 1]
save('conv_3d_group_dilation', helper.make_node('Conv', ['x', 'w', 'b'], ['y'], group=2, dilations=[1, 2, 1],
                                                  strides=[2, 1, 2], pads=pads),
     [('x', x), ('w', w), ('b', b)], [('y', conv_ref(x, w, b, [2, 1, 2], [1, 2, 1], pads, 2))])

x = f32(1, 2, 7, 6); w = f32(3, 2, 4, 3)
# SAME_LOWER, stride 2: out = ceil(in / 2); the odd part of the padding goes first.
tot = [max(0, (math.ceil(s / 2) - 1) * 2 + k - s) for s, k in zip([7, 6], [4, 3])]
pads = [t - t // 2 for t in tot] + [t // 2 for t in tot]
save('conv_same_lower_stride2', helper.make_node('Conv', ['x', 'w'], ['y'], auto_pad='SAME_LOWER', strides=[2, 2]),
     [('x', x), ('w', w)], [('y', conv_ref(x, w, None, [2, 2], [1, 1], pads, 1))])


def conv_transpose_ref(x, w, b, strides, dil, pb, outpad, group):
    N, C = x.shape[:2]; K = w.shape[2:]; S = x.shape[2:]; mg = w.shape[1]; M = mg * group; cg = C // group
    full = [strides[i] * (S[i] - 1) + outpad[i] + (K[i] - 1) * dil[i] + 1 for i in range(len(S))]
    out = [full[i] - pb[i] - pb[i + len(S)] for i in range(len(S))]
    y = np.zeros((N, M, *out))
    for n, c in itertools.product(range(N), range(C)):
        g = c // cg
        for i in itertools.product(*[range(v) for v in S]):
            for k in itertools.product(*[range(v) for v in K]):
                pos = [i[d] * strides[d] + k[d] * dil[d] - pb[d] for d in range(len(S))]
                if not all(0 <= pos[d] < out[d] for d in range(len(S))):
                    continue
                for m in range(mg):
                    y[(n, g * mg + m, *pos)] += float(x[(n, c, *i)]) * float(w[(c, m, *k)])
    if b is not None:
        y += b.reshape(1, -1, *([1] * len(S)))
    return y.astype(np.float32)


x = f32(2, 4, 3, 4); w = f32(4, 3, 3, 2); b = f32(6)
save('convtranspose_group_dilation',
     helper.make_node('ConvTranspose', ['x', 'w', 'b'], ['y'], group=2, strides=[2, 3], dilations=[2, 1],
                      pads=[1, 0, 0, 1], output_padding=[1, 0]),
     [('x', x), ('w', w), ('b', b)], [('y', conv_transpose_ref(x, w, b, [2, 3], [2, 1], [1, 0, 0, 1], [1, 0], 2))])

xq = rng.integers(0, 256, (1, 2, 5, 5)).astype(np.uint8); wq = rng.integers(-128, 128, (3, 2, 3, 3)).astype(np.int8)
wzp = np.array([1, -2, 3], np.int8)
yq = conv_ref(xq.astype(np.float64) - 7, wq.astype(np.float64) - wzp.reshape(3, 1, 1, 1), None, [1, 1], [1, 1],
              [1, 1, 1, 1], 1)
save('convinteger_per_channel_zero_point', helper.make_node('ConvInteger', ['x', 'w', 'xz', 'wz'], ['y'], pads=[1, 1, 1, 1]),
     [('x', xq), ('w', wq), ('xz', np.array(7, np.uint8)), ('wz', wzp)], [('y', yq.astype(np.int32))])


# ---- Pools.
def pool_ref(x, kind, K, strides, pb, ceil=False, dil=None, count_pad=False, p=2, order=0):
    N, C = x.shape[:2]; S = x.shape[2:]; R = len(S); dil = dil or [1] * R
    out = []
    for i in range(R):
        span = S[i] + pb[i] + pb[i + R] - (K[i] - 1) * dil[i] - 1
        o = (-(-span // strides[i]) if ceil else span // strides[i]) + 1
        if ceil and (o - 1) * strides[i] >= S[i] + pb[i]:
            o -= 1
        out.append(o)
    y = np.zeros((N, C, *out)); idx = np.zeros((N, C, *out), np.int64)
    for n, c in itertools.product(range(N), range(C)):
        for o in itertools.product(*[range(v) for v in out]):
            vals, where, padded = [], [], 0
            for k in itertools.product(*[range(v) for v in K]):
                pos = [o[i] * strides[i] + k[i] * dil[i] - pb[i] for i in range(R)]
                if all(-pb[i] <= pos[i] < S[i] + pb[i + R] for i in range(R)):
                    padded += 1
                if all(0 <= pos[i] < S[i] for i in range(R)):
                    vals.append(float(x[(n, c, *pos)])); where.append(pos)
            if kind == 'max':
                j = int(np.argmax(vals)); y[(n, c, *o)] = vals[j]
                flat = 0
                for i in (range(R) if order == 0 else reversed(range(R))):
                    flat = flat * S[i] + where[j][i]
                idx[(n, c, *o)] = (n * C + c) * int(np.prod(S)) + flat
            elif kind == 'avg':
                y[(n, c, *o)] = sum(vals) / (padded if count_pad else len(vals))
            else:
                y[(n, c, *o)] = sum(abs(v) ** p for v in vals) ** (1.0 / p)
    return y.astype(x.dtype), idx


x = f32(1, 2, 6, 7)
for cp in (0, 1):
    y, _ = pool_ref(x, 'avg', [3, 3], [2, 2], [1, 1, 1, 1], ceil=True, count_pad=cp)
    save(f'averagepool_ceil_pads_count_include_pad_{cp}',
         helper.make_node('AveragePool', ['x'], ['y'], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                          ceil_mode=1, count_include_pad=cp), [('x', x)], [('y', y)])

x = f32(2, 3, 5, 4)
y, i = pool_ref(x, 'max', [2, 2], [2, 1], [0, 0, 1, 0], order=1)
save('maxpool_storage_order_batched',
     helper.make_node('MaxPool', ['x'], ['y', 'i'], kernel_shape=[2, 2], strides=[2, 1], pads=[0, 0, 1, 0],
                      storage_order=1), [('x', x)], [('y', y), ('i', i)])

x = f32(2, 2, 11)
y, i = pool_ref(x, 'max', [3], [2], [1, 0], ceil=True, dil=[2])
save('maxpool_1d_dilation_ceil', helper.make_node('MaxPool', ['x'], ['y', 'i'], kernel_shape=[3], strides=[2],
                                                  pads=[1, 0], dilations=[2], ceil_mode=1),
     [('x', x)], [('y', y), ('i', i)])

x = f32(1, 2, 5, 5)
y, _ = pool_ref(x, 'lp', [2, 3], [1, 2], [1, 0, 0, 1], p=3)
save('lppool_p3_pads', helper.make_node('LpPool', ['x'], ['y'], kernel_shape=[2, 3], strides=[1, 2], pads=[1, 0, 0, 1], p=3),
     [('x', x)], [('y', y)], opset=11)
x = f32(2, 3, 4, 5)
save('globallppool', helper.make_node('GlobalLpPool', ['x'], ['y']), [('x', x)],
     [('y', np.sqrt((x.astype(np.float64) ** 2).sum(axis=(2, 3), keepdims=True)).astype(np.float32))])

# ---- Softmax family, opset 11 (coerce to 2-D) vs 13 (one axis).
x = f32(2, 3, 4)
flat = x.reshape(2, 12).astype(np.float64)
sm = np.exp(flat - flat.max(1, keepdims=True)); sm /= sm.sum(1, keepdims=True)
save('softmax_opset11_coerced', helper.make_node('Softmax', ['x'], ['y'], axis=1), [('x', x)],
     [('y', sm.reshape(2, 3, 4).astype(np.float32))], opset=11)
save('logsoftmax_opset11_coerced', helper.make_node('LogSoftmax', ['x'], ['y'], axis=1), [('x', x)],
     [('y', np.log(sm).reshape(2, 3, 4).astype(np.float32))], opset=11)
hm = np.zeros_like(flat); hm[np.arange(2), flat.argmax(1)] = 1
save('hardmax_opset11_coerced', helper.make_node('Hardmax', ['x'], ['y'], axis=1), [('x', x)],
     [('y', hm.reshape(2, 3, 4).astype(np.float32))], opset=11)
e = np.exp(x - x.max(1, keepdims=True))
save('softmax_opset13_middle_axis', helper.make_node('Softmax', ['x'], ['y'], axis=1), [('x', x)],
     [('y', (e / e.sum(1, keepdims=True)).astype(np.float32))], opset=13)

# ---- Matrix products.
a = f32(4, 3); bm = f32(5, 4); c = f32(5)
save('gemm_trans_both_vector_c', helper.make_node('Gemm', ['a', 'b', 'c'], ['y'], transA=1, transB=1, alpha=0.5, beta=-2.0),
     [('a', a), ('b', bm), ('c', c)], [('y', (0.5 * a.T.astype(np.float64) @ bm.T - 2.0 * c).astype(np.float32))])
a = f32(3); bm = f32(2, 3, 4)
save('matmul_1d_by_3d', helper.make_node('MatMul', ['a', 'b'], ['y']), [('a', a), ('b', bm)],
     [('y', np.matmul(a, bm))])
a = f32(2, 1, 3, 4); bm = f32(4)
save('matmul_4d_by_1d', helper.make_node('MatMul', ['a', 'b'], ['y']), [('a', a), ('b', bm)], [('y', np.matmul(a, bm))])
a = rng.integers(-128, 128, (3, 4)).astype(np.int8); bm = rng.integers(0, 256, (4, 2)).astype(np.uint8)
azp = np.array([1, -1, 5], np.int8); bzp = np.array([100, 200], np.uint8)
yi = (a.astype(np.int32) - azp.reshape(3, 1)) @ (bm.astype(np.int32) - bzp)
save('matmulinteger_per_row_and_column', helper.make_node('MatMulInteger', ['a', 'b', 'az', 'bz'], ['y']),
     [('a', a), ('b', bm), ('az', azp), ('bz', bzp)], [('y', yi.astype(np.int32))])
for i, (eq, shapes) in enumerate([('...ij,...jk->...ik', [(2, 1, 3, 4), (5, 4, 2)]), ('ii->i', [(3, 3)]),
                                   ('ij,jk', [(2, 3), (3, 4)]), ('bij,bjk', [(2, 2, 3), (2, 3, 4)]),
                                   ('iij->ji', [(3, 3, 2)]), ('ab...,b->a...', [(2, 3, 4, 5), (3,)])]):
    ops = [f32(*s) for s in shapes]
    save(f'einsum_{i}', helper.make_node('Einsum', [f'x{j}' for j in range(len(ops))], ['y'], equation=eq),
         [(f'x{j}', o) for j, o in enumerate(ops)], [('y', np.einsum(eq, *ops).astype(np.float32))])

# ---- Normalizations.
x = f32(2, 3, 7); s = f32(3); bb = f32(3)
mu = x.mean(2, keepdims=True); var = x.var(2, keepdims=True)
save('instancenorm_1d', helper.make_node('InstanceNormalization', ['x', 's', 'b'], ['y'], epsilon=1e-3),
     [('x', x), ('s', s), ('b', bb)],
     [('y', (s.reshape(1, 3, 1) * (x - mu) / np.sqrt(var + 1e-3) + bb.reshape(1, 3, 1)).astype(np.float32))])
x = rng.standard_normal((2, 3, 4)); s = rng.standard_normal((3, 4))
mu = x.mean((1, 2), keepdims=True); inv = 1 / np.sqrt(x.var((1, 2), keepdims=True) + 1e-5)
save('layernorm_axis1_double_no_bias', helper.make_node('LayerNormalization', ['x', 's'], ['y', 'm', 'r'], axis=1,
                                                        stash_type=11),
     [('x', x), ('s', s)], [('y', (x - mu) * inv * s), ('m', mu), ('r', inv)])
x = f32(2, 3, 4, 2)
mu = x.mean(1, keepdims=True); sd = np.sqrt((x ** 2).mean(1, keepdims=True) - mu ** 2)
save('mvn_axis1', helper.make_node('MeanVarianceNormalization', ['x'], ['y'], axes=[1]), [('x', x)],
     [('y', ((x - mu) / (sd + 1e-9)).astype(np.float32))])
x = f32(1, 6, 2, 2); y = np.zeros_like(x)
for c in range(6):
    lo, hi = max(0, c - 1), min(5, c + 2)  # size 4: floor(3/2) = 1 before, ceil(3/2) = 2 after.
    y[:, c] = x[:, c] / (1.5 + 0.01 / 4 * (x[:, lo:hi + 1] ** 2).sum(1)) ** 0.6
save('lrn_even_size', helper.make_node('LRN', ['x'], ['y'], size=4, alpha=0.01, beta=0.6, bias=1.5), [('x', x)], [('y', y)])
x = f32(4, 3, 5); s = f32(3); bb = f32(3); m = f32(3); v = rng.uniform(0.5, 2, 3).astype(np.float32)
bm_, bv = x.mean((0, 2)), x.var((0, 2))
yb = s.reshape(1, 3, 1) * (x - bm_.reshape(1, 3, 1)) / np.sqrt(bv.reshape(1, 3, 1) + 1e-5) + bb.reshape(1, 3, 1)
save('batchnorm_training_3d', helper.make_node('BatchNormalization', ['x', 's', 'b', 'm', 'v'], ['y', 'rm', 'rv'],
                                               training_mode=1, momentum=0.8),
     [('x', x), ('s', s), ('b', bb), ('m', m), ('v', v)],
     [('y', yb.astype(np.float32)), ('rm', (m * 0.8 + bm_ * 0.2).astype(np.float32)),
      ('rv', (v * 0.8 + bv * 0.2).astype(np.float32))], opset=15)

# ---- Quantization: ties round to even, saturation, per-axis.
x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 300, -300], np.float32)
save('quantizelinear_int8_ties_saturate', helper.make_node('QuantizeLinear', ['x', 's', 'z'], ['y']),
     [('x', x), ('s', np.array(1, np.float32)), ('z', np.array(0, np.int8))],
     [('y', np.clip(np.round(x), -128, 127).astype(np.int8))])
x = f32(3, 4) * 10; sc = np.array([0.5, 2, 4], np.float32); zp = np.array([-3, 0, 7], np.int8)
save('quantizelinear_axis0_int8', helper.make_node('QuantizeLinear', ['x', 's', 'z'], ['y'], axis=0),
     [('x', x), ('s', sc), ('z', zp)],
     [('y', np.clip(np.round(x / sc.reshape(3, 1)) + zp.reshape(3, 1), -128, 127).astype(np.int8))])
xi = rng.integers(-1000, 1000, (5,)).astype(np.int32)
save('dequantizelinear_int32', helper.make_node('DequantizeLinear', ['x', 's'], ['y']),
     [('x', xi), ('s', np.array(0.25, np.float32))], [('y', (xi * np.float32(0.25)).astype(np.float32))])

# ---- Others.
x = f32(4, 5)
np.random.seed(3); mask = np.random.uniform(0, 1.0, x.shape) >= np.float32(0.3)
save('dropout_training_seed3', helper.make_node('Dropout', ['x', 'r', 't'], ['y', 'mask'], seed=3),
     [('x', x), ('r', np.array(0.3, np.float32)), ('t', np.array(True))],
     [('y', (mask * x / (1 - np.float32(0.3))).astype(np.float32)), ('mask', mask)], opset=13)
boxes = np.array([[[0.5, 0.5, 1, 1], [0.5, 0.6, 1, 1], [0.5, 0.4, 1, 1], [5, 5, 1, 1], [5, 5.1, 1, 1]]], np.float32)
scores = np.array([[[0.9, 0.75, 0.6, 0.95, 0.5], [0.1, 0.8, 0.85, 0.2, 0.7]]], np.float32)
# Class 0: 3 (0.95), 0 (0.9) kept; 1 and 2 overlap 0 by IoU > 0.5; 4 overlaps 3. Class 1 under 0.15: 2, then 1
# (IoU with 2 is 0.8/1.2 > 0.5, suppressed), 4 (kept), 3 (overlaps 4).
save('nms_center_point_two_classes', helper.make_node('NonMaxSuppression', ['b', 's', 'm', 'i', 't'], ['y'],
                                                      center_point_box=1),
     [('b', boxes), ('s', scores), ('m', np.array([5], np.int64)), ('i', np.array([0.5], np.float32)),
      ('t', np.array([0.15], np.float32))],
     [('y', np.array([[0, 0, 3], [0, 0, 0], [0, 1, 2], [0, 1, 4]], np.int64))])

# ---- Invalid on purpose.
save('conv_group_indivisible_error', helper.make_node('Conv', ['x', 'w'], ['y'], group=3),
     [('x', f32(1, 4, 5, 5)), ('w', f32(3, 1, 3, 3))], [('y', f32(1, 3, 3, 3))])
save('averagepool_pads_cover_window_error', helper.make_node('AveragePool', ['x'], ['y'], kernel_shape=[2, 2],
                                                             pads=[3, 3, 3, 3]),
     [('x', f32(1, 1, 4, 4))], [('y', f32(1, 1, 9, 9))])
save('conv_transpose_weight_channels_error', helper.make_node('ConvTranspose', ['x', 'w'], ['y']),
     [('x', f32(1, 3, 4, 4)), ('w', f32(2, 1, 3, 3))], [('y', f32(1, 1, 6, 6))])
