#!/usr/bin/python3
"""Extra conformance cases for LpNormalization, MaxRoiPool and the random generators, which the ONNX
suite does not cover. LpNormalization and MaxRoiPool are checked against loop-based numpy
implementations (MaxRoiPool binned as Caffe's ROIPooling: float32 products, round half away from
zero, floor/ceil bin edges). The random ops are checked where tessel promises exact values: with an
integral seed, RandomUniform/RandomNormal(+Like) draw what numpy's legacy RandomState(seed) draws,
and Multinomial inverts the cumulative softmax at RandomState(seed).random_sample() points. Their
statistical properties are tested in tests/runtime/random_test.cpp.
Usage: random_and_roi_cases.py OUT_DIR; then `tessel conformance OUT_DIR`. Cases ending in _error
are invalid on purpose."""
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


# ---- LpNormalization: each vector along the axis divided by its norm; a zero vector stays zero.
def lp_normalize(x, p, axis):
    axis %= x.ndim
    y = np.zeros(x.shape)
    for idx in itertools.product(*[range(s) for i, s in enumerate(x.shape) if i != axis]):
        sl = list(idx)
        sl.insert(axis, slice(None))
        v = x[tuple(sl)].astype(np.float64)
        norm = np.abs(v).sum() if p == 1 else math.sqrt((v * v).sum())
        y[tuple(sl)] = v / norm if norm != 0 else 0
    return y.astype(x.dtype)


x = f32(3, 4)
save('lpnorm_p1_axis0', helper.make_node('LpNormalization', ['x'], ['y'], p=1, axis=0), [('x', x)],
     [('y', lp_normalize(x, 1, 0))])
x = f32(2, 3, 5)
save('lpnorm_p2_axis_neg1', helper.make_node('LpNormalization', ['x'], ['y'], p=2, axis=-1), [('x', x)],
     [('y', lp_normalize(x, 2, -1))])
x = f32(2, 3, 5)
save('lpnorm_default_attrs', helper.make_node('LpNormalization', ['x'], ['y']), [('x', x)],
     [('y', lp_normalize(x, 2, -1))])
x = f32(2, 4, 3)
x[1, :, 2] = 0
save('lpnorm_p2_axis1_zero_vector', helper.make_node('LpNormalization', ['x'], ['y'], p=2, axis=1), [('x', x)],
     [('y', lp_normalize(x, 2, 1))])
x = rng.standard_normal((4, 3))
save('lpnorm_p1_axis1_double', helper.make_node('LpNormalization', ['x'], ['y'], p=1, axis=1), [('x', x)],
     [('y', lp_normalize(x, 1, 1))])


# ---- MaxRoiPool.
def round_away(v):
    return math.floor(v + 0.5) if v >= 0 else -math.floor(-v + 0.5)


def max_roi_pool(x, rois, pooled, scale):
    N, C, H, W = x.shape
    PH, PW = pooled
    ft = np.float32 if x.dtype != np.float64 else np.float64
    y = np.zeros((rois.shape[0], C, PH, PW), x.dtype)
    for r, roi in enumerate(rois):
        b = int(roi[0])
        sw, sh, ew, eh = [round_away(float(ft(c) * ft(scale))) for c in roi[1:]]
        rh, rw = max(eh - sh + 1, 1), max(ew - sw + 1, 1)
        bh, bw = ft(rh) / ft(PH), ft(rw) / ft(PW)
        for c, ph, pw in itertools.product(range(C), range(PH), range(PW)):
            # Products in the bin size's precision: 3 * float32(2/3) is exactly 2, in float64 above 2.
            hs = min(max(int(math.floor(ft(ph) * bh)) + sh, 0), H)
            he = min(max(int(math.ceil(ft(ph + 1) * bh)) + sh, 0), H)
            ws = min(max(int(math.floor(ft(pw) * bw)) + sw, 0), W)
            we = min(max(int(math.ceil(ft(pw + 1) * bw)) + sw, 0), W)
            y[r, c, ph, pw] = 0 if he <= hs or we <= ws else x[b, c, hs:he, ws:we].max()
    return y


x = f32(2, 3, 8, 10)
# Batch 1 and 0; a roi reaching past the map; a malformed one (end before start, pooled as 1x1);
# one wholly outside the map (every bin empty, so 0).
rois = np.array([[0, 1, 2, 6, 7], [1, 0, 0, 9, 7], [1, 5, 4, 14, 12], [0, 6, 5, 3, 2], [0, 12, 9, 15, 11]],
                np.float32)
save('maxroipool_scale1', helper.make_node('MaxRoiPool', ['x', 'rois'], ['y'], pooled_shape=[3, 2]),
     [('x', x), ('rois', rois)], [('y', max_roi_pool(x, rois, (3, 2), 1.0))])
x = f32(1, 2, 6, 7)
# Odd coordinates at scale 0.5 land on .5: rounded away from zero (2.5 -> 3), unlike numpy's round.
rois = np.array([[0, 3, 1, 11, 9], [0, 5, 5, 13, 11], [0, 0, 0, 1, 1]], np.float32)
save('maxroipool_scale_half', helper.make_node('MaxRoiPool', ['x', 'rois'], ['y'], pooled_shape=[2, 3],
                                               spatial_scale=0.5),
     [('x', x), ('rois', rois)], [('y', max_roi_pool(x, rois, (2, 3), 0.5))])
x = rng.standard_normal((1, 2, 5, 5))
rois = np.array([[0, 0.6, 1.4, 3.5, 4.49], [0, 1, 1, 2, 2]], np.float64)
save('maxroipool_double_fractional_rois', helper.make_node('MaxRoiPool', ['x', 'rois'], ['y'], pooled_shape=[4, 4]),
     [('x', x), ('rois', rois)], [('y', max_roi_pool(x, rois, (4, 4), 1.0))])


# ---- Random generators with an integral seed: numpy's legacy stream, narrowed to the dtype.
def uniform_draws(seed, low, high, shape, dtype):
    return np.random.RandomState(seed).uniform(float(low), float(high), shape).astype(dtype)


def normal_draws(seed, mean, scale, shape, dtype):
    return np.random.RandomState(seed).normal(float(mean), float(scale), shape).astype(dtype)


save('randomuniform_seed_float', helper.make_node('RandomUniform', [], ['y'], shape=[3, 4], low=-2.0, high=3.0,
                                                  seed=5.0),
     [], [('y', uniform_draws(5, -2.0, 3.0, (3, 4), np.float32))])
save('randomuniform_seed_double', helper.make_node('RandomUniform', [], ['y'], shape=[7], dtype=11, seed=1.0),
     [], [('y', uniform_draws(1, 0.0, 1.0, (7,), np.float64))])
save('randomnormal_seed_float', helper.make_node('RandomNormal', [], ['y'], shape=[2, 5], mean=1.5, scale=0.25,
                                                 seed=7.0),
     [], [('y', normal_draws(7, 1.5, 0.25, (2, 5), np.float32))])
save('randomnormal_seed_float16_odd_count', helper.make_node('RandomNormal', [], ['y'], shape=[3, 3], dtype=10,
                                                             seed=0.0),
     [], [('y', normal_draws(0, 0.0, 1.0, (3, 3), np.float16))])
like = rng.integers(0, 10, (2, 3)).astype(np.int32)
save('randomuniformlike_int_input_double', helper.make_node('RandomUniformLike', ['x'], ['y'], dtype=11, low=10.0,
                                                            high=20.0, seed=42.0),
     [('x', like)], [('y', uniform_draws(42, 10.0, 20.0, (2, 3), np.float64))])
like = f32(4, 2)
save('randomnormallike_float_input', helper.make_node('RandomNormalLike', ['x'], ['y'], mean=-3.0, scale=2.0,
                                                      seed=123.0),
     [('x', like)], [('y', normal_draws(123, -3.0, 2.0, (4, 2), np.float32))])


def multinomial_draws(seed, logits, samples, dtype):
    state = np.random.RandomState(seed)
    out = np.zeros((logits.shape[0], samples), dtype)
    for b, row in enumerate(logits.astype(np.float64)):
        weights = np.exp(row - row.max())
        cumulative = np.cumsum(weights)
        last = np.nonzero(weights)[0].max()
        for s in range(samples):
            out[b, s] = min(np.searchsorted(cumulative, state.random_sample() * cumulative[-1], side='right'), last)
    return out


logits = np.array([[0.1, 0.2, 0.7], [0.5, 0.0, 0.5]], np.float32)
with np.errstate(divide='ignore'):
    logits = np.log(logits)  # log(0) = -inf: never drawn.
save('multinomial_seed_int64', helper.make_node('Multinomial', ['x'], ['y'], sample_size=20, dtype=7, seed=3.0),
     [('x', logits)], [('y', multinomial_draws(3, logits, 20, np.int64))])
logits = f32(3, 5) * 2
save('multinomial_seed_default_int32', helper.make_node('Multinomial', ['x'], ['y'], seed=11.0),
     [('x', logits)], [('y', multinomial_draws(11, logits, 1, np.int32))])

# ---- Invalid on purpose.
save('lpnorm_p3_error', helper.make_node('LpNormalization', ['x'], ['y'], p=3), [('x', f32(2, 3))],
     [('y', f32(2, 3))])
save('maxroipool_batch_index_error', helper.make_node('MaxRoiPool', ['x', 'rois'], ['y'], pooled_shape=[2, 2]),
     [('x', f32(1, 1, 4, 4)), ('rois', np.array([[1, 0, 0, 2, 2]], np.float32))], [('y', f32(1, 1, 2, 2))])
save('randomnormal_negative_shape_error', helper.make_node('RandomNormal', [], ['y'], shape=[2, -3]), [],
     [('y', f32(2, 3))])
save('randomuniformlike_int_without_dtype_error', helper.make_node('RandomUniformLike', ['x'], ['y']),
     [('x', np.zeros((2, 2), np.int64))], [('y', f32(2, 2))])
save('multinomial_all_impossible_error', helper.make_node('Multinomial', ['x'], ['y'], dtype=7),
     [('x', np.full((1, 3), -np.inf, np.float32))], [('y', np.zeros((1, 1), np.int64))])
