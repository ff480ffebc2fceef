#!/usr/bin/python3
"""Extra conformance cases for LSTM/GRU/RNN/DFT/STFT beyond the ONNX suite, with expectations from an
independent numpy implementation. Usage: rnn_signal_cases.py OUT_DIR; then `tessel conformance OUT_DIR`."""
import os, shutil, sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
OUT = sys.argv[1]
shutil.rmtree(OUT, ignore_errors=True)
rng = np.random.default_rng(0)

def save(name, node, inputs, outputs, opset=17):
    d = os.path.join(OUT, name); os.makedirs(d + '/test_data_set_0')
    ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype) if hasattr(helper,'np_dtype_to_tensor_dtype') else onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[v.dtype], v.shape) for n, v in inputs]
    outs = [helper.make_tensor_value_info(n, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[v.dtype], v.shape) for n, v in outputs]
    g = helper.make_graph([node], name, ins, outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', opset)])
    onnx.save(m, d + '/model.onnx')
    for i, (n, v) in enumerate(inputs):
        open(f'{d}/test_data_set_0/input_{i}.pb', 'wb').write(numpy_helper.from_array(v, n).SerializeToString())
    for i, (n, v) in enumerate(outputs):
        open(f'{d}/test_data_set_0/output_{i}.pb', 'wb').write(numpy_helper.from_array(v, n).SerializeToString())

ACTS = {
  'Sigmoid': lambda x, a, b: 1 / (1 + np.exp(-x)), 'Tanh': lambda x, a, b: np.tanh(x),
  'Relu': lambda x, a, b: np.maximum(x, 0), 'Affine': lambda x, a, b: a * x + b,
  'LeakyRelu': lambda x, a, b: np.where(x >= 0, x, a * x), 'ThresholdedRelu': lambda x, a, b: np.where(x > a, x, 0),
  'ScaledTanh': lambda x, a, b: a * np.tanh(b * x), 'HardSigmoid': lambda x, a, b: np.clip(a * x + b, 0, 1),
  'Elu': lambda x, a, b: np.where(x >= 0, x, a * (np.exp(x) - 1)), 'Softsign': lambda x, a, b: x / (1 + np.abs(x)),
  'Softplus': lambda x, a, b: np.log(1 + np.exp(x))}

def recurrent(kind, X, W, R, B, seq_lens, h0, c0, P, direction, acts, clip, layout, input_forget=0, lbr=0):
    """acts: list of (name, alpha, beta) for all directions. Returns Y, Y_h, Y_c in layout."""
    if layout == 1:
        X = X.transpose(1, 0, 2)
        h0 = h0.transpose(1, 0, 2); c0 = c0.transpose(1, 0, 2)
    S, Bt, I = X.shape; D = W.shape[0]; H = R.shape[2]
    Y = np.zeros((S, D, Bt, H)); Yh = np.zeros((D, Bt, H)); Yc = np.zeros((D, Bt, H))
    nact = {'LSTM': 3, 'GRU': 2, 'RNN': 1}[kind]
    cl = (lambda v: np.clip(v, -clip, clip)) if clip is not None else (lambda v: v)
    for d in range(D):
        A = [(lambda v, n=n, a=a, b=b: ACTS[n](v, a, b)) for n, a, b in acts[d * nact:(d + 1) * nact]]
        back = direction == 'reverse' or d == 1
        Wd, Rd = W[d].astype(np.float64), R[d].astype(np.float64)
        Wb, Rb = np.split(B[d].astype(np.float64), 2)
        for b in range(Bt):
            h = h0[d, b].astype(np.float64); c = c0[d, b].astype(np.float64)
            L = seq_lens[b]
            ts = range(L - 1, -1, -1) if back else range(L)
            for t in ts:
                x = X[t, b].astype(np.float64)
                if kind == 'LSTM':
                    g = Wd @ x + Wb + Rd @ h + Rb
                    gi, go, gf, gc = np.split(g, 4); pi, po, pf = np.split(P[d].astype(np.float64), 3)
                    i = A[0](cl(gi + pi * c))
                    f = 1 - i if input_forget else A[0](cl(gf + pf * c))
                    cc = A[1](cl(gc))
                    c = f * c + i * cc
                    o = A[0](cl(go + po * c))
                    h = o * A[2](c)
                elif kind == 'GRU':
                    Wz, Wr, Wh = np.split(Wd, 3); Rz, Rr, Rh = np.split(Rd, 3)
                    wbz, wbr, wbh = np.split(Wb, 3); rbz, rbr, rbh = np.split(Rb, 3)
                    z = A[0](cl(Wz @ x + Rz @ h + wbz + rbz))
                    r = A[0](cl(Wr @ x + Rr @ h + wbr + rbr))
                    if lbr: hh = A[1](cl(Wh @ x + r * (Rh @ h + rbh) + wbh))
                    else: hh = A[1](cl(Wh @ x + Rh @ (r * h) + rbh + wbh))
                    h = (1 - z) * hh + z * h
                else:
                    h = A[0](cl(Wd @ x + Rd @ h + Wb + Rb))
                Y[t, d, b] = h
            Yh[d, b] = h; Yc[d, b] = c
    if layout == 1:
        Y = Y.transpose(2, 0, 1, 3); Yh = Yh.transpose(1, 0, 2); Yc = Yc.transpose(1, 0, 2)
    return Y, Yh, Yc

def rnn_case(name, kind, S=4, Bt=3, I=2, H=3, direction='forward', layout=0, use_lens=False, use_init=False,
             use_p=False, acts=None, alphas=None, betas=None, clip=None, input_forget=0, lbr=0, dtype=np.float32):
    G = {'LSTM': 4, 'GRU': 3, 'RNN': 1}[kind]; D = 2 if direction == 'bidirectional' else 1
    X = rng.uniform(-1, 1, (S, Bt, I) if layout == 0 else (Bt, S, I)).astype(dtype)
    W = rng.uniform(-1, 1, (D, G * H, I)).astype(dtype); R = rng.uniform(-1, 1, (D, G * H, H)).astype(dtype)
    B = rng.uniform(-1, 1, (D, 2 * G * H)).astype(dtype)
    lens = rng.integers(1, S + 1, Bt).astype(np.int32) if use_lens else np.full(Bt, S, np.int32)
    sshape = (D, Bt, H) if layout == 0 else (Bt, D, H)
    h0 = rng.uniform(-1, 1, sshape).astype(dtype) if use_init else np.zeros(sshape, dtype)
    c0 = rng.uniform(-1, 1, sshape).astype(dtype) if use_init else np.zeros(sshape, dtype)
    P = rng.uniform(-1, 1, (D, 3 * H)).astype(dtype) if use_p else np.zeros((D, 3 * H), dtype)
    defaults = {'LSTM': ['Sigmoid', 'Tanh', 'Tanh'], 'GRU': ['Sigmoid', 'Tanh'], 'RNN': ['Tanh']}[kind]
    names = acts or defaults * D
    if D == 2 and len(names) == len(defaults): names = names * 2
    # Hand out alpha/beta in order to activations that take them.
    nparams = {'Affine': 2, 'LeakyRelu': 1, 'ThresholdedRelu': 1, 'ScaledTanh': 2, 'HardSigmoid': 2, 'Elu': 1}
    dflt = {'Affine': (1, 0), 'LeakyRelu': (0.01, 0), 'ThresholdedRelu': (1, 0), 'ScaledTanh': (1, 1), 'HardSigmoid': (0.2, 0.5), 'Elu': (1, 0)}
    al = list(alphas or []); be = list(betas or []); full = []
    for n in names:
        a, b = dflt.get(n, (0, 0)); k = nparams.get(n, 0)
        if k >= 1 and al: a = al.pop(0)
        if k >= 2 and be: b = be.pop(0)
        full.append((n, a, b))
    Y, Yh, Yc = recurrent(kind, X, W, R, B, lens, h0, c0, P, direction, full, clip, layout, input_forget, lbr)
    inputs = [('X', X), ('W', W), ('R', R), ('B', B)]
    names_in = ['X', 'W', 'R', 'B']
    if use_lens or use_init or use_p: inputs.append(('sequence_lens', lens)); names_in.append('sequence_lens')
    if use_init or use_p:
        inputs.append(('initial_h', h0)); names_in.append('initial_h')
        if kind == 'LSTM': inputs.append(('initial_c', c0)); names_in.append('initial_c')
    if use_p: inputs.append(('P', P)); names_in.append('P')
    attrs = dict(hidden_size=H, direction=direction, layout=layout)
    if acts: attrs['activations'] = acts
    if alphas: attrs['activation_alpha'] = alphas
    if betas: attrs['activation_beta'] = betas
    if clip is not None: attrs['clip'] = clip
    if kind == 'LSTM' and input_forget: attrs['input_forget'] = 1
    if kind == 'GRU' and lbr: attrs['linear_before_reset'] = 1
    outs = [('Y', Y.astype(dtype)), ('Y_h', Yh.astype(dtype))]
    if kind == 'LSTM': outs.append(('Y_c', Yc.astype(dtype)))
    node = helper.make_node(kind, names_in, [n for n, _ in outs], **attrs)
    save(name, node, inputs, outs)

for kind in ['LSTM', 'GRU', 'RNN']:
    k = kind.lower()
    rnn_case(f'x_{k}_fwd', kind)
    rnn_case(f'x_{k}_reverse_lens', kind, direction='reverse', use_lens=True, use_init=True)
    rnn_case(f'x_{k}_bidir_lens', kind, direction='bidirectional', use_lens=True, use_init=True)
    rnn_case(f'x_{k}_bidir_layout1', kind, direction='bidirectional', layout=1, use_lens=True, use_init=True)
    rnn_case(f'x_{k}_clip', kind, clip=0.3, use_init=True)
    rnn_case(f'x_{k}_f64', kind, direction='bidirectional', dtype=np.float64)
rnn_case('x_lstm_peep_bidir', 'LSTM', direction='bidirectional', use_p=True, use_lens=True)
rnn_case('x_lstm_input_forget', 'LSTM', use_p=True, input_forget=1)
rnn_case('x_lstm_acts', 'LSTM', direction='bidirectional', acts=['HardSigmoid', 'ScaledTanh', 'Affine', 'Sigmoid', 'LeakyRelu', 'Elu'],
         alphas=[0.3, 0.8, 1.5, 0.2, 0.7], betas=[0.4, 1.2, 0.1])
rnn_case('x_gru_lbr', 'GRU', direction='bidirectional', lbr=1, use_init=True, use_lens=True)
rnn_case('x_gru_acts', 'GRU', acts=['Softsign', 'Softplus'])
rnn_case('x_rnn_relu', 'RNN', acts=['Relu'])
rnn_case('x_rnn_thr', 'RNN', direction='bidirectional', acts=['ThresholdedRelu', 'Elu'], alphas=[0.1, 0.5])
rnn_case('x_rnn_onelist_bidir', 'RNN', direction='bidirectional', acts=['Softsign'])

# DFT / STFT extras
def dft_case(name, x, axis, inverse=0, onesided=0, length=None):
    axis_np = axis if axis >= 0 else axis + x.ndim
    xc = x[..., 0] + (1j * x[..., 1] if x.shape[-1] == 2 else 0)
    n = length or x.shape[axis_np]
    y = np.fft.ifft(xc, n=n, axis=axis_np) if inverse else np.fft.fft(xc, n=n, axis=axis_np)
    if onesided: y = np.take(y, range(n // 2 + 1), axis=axis_np)
    y = np.stack([y.real, y.imag], -1).astype(x.dtype)
    inputs = [('x', x)] + ([('len', np.array(length, np.int64))] if length else [])
    node = helper.make_node('DFT', [n for n, _ in inputs], ['y'], axis=axis, inverse=inverse, onesided=onesided)
    save(name, node, inputs, [('y', y)])
dft_case('x_dft_onesided', rng.uniform(-1, 1, (2, 9, 3, 1)).astype(np.float32), 1, onesided=1)
dft_case('x_dft_pad', rng.uniform(-1, 1, (2, 5, 2)).astype(np.float32), 1, length=8)
dft_case('x_dft_trunc_inv', rng.uniform(-1, 1, (2, 3, 7, 2)).astype(np.float64), 2, inverse=1, length=4)
dft_case('x_dft_negaxis', rng.uniform(-1, 1, (2, 3, 6, 1)).astype(np.float32), -2)

sig = rng.uniform(-1, 1, (2, 40, 2)).astype(np.float32)
win = rng.uniform(0, 1, 10).astype(np.float32)
frames = (40 - 10) // 3 + 1
out = np.zeros((2, frames, 10, 2), np.float32)
for b in range(2):
    for f in range(frames):
        s = sig[b, f * 3:f * 3 + 10]; y = np.fft.fft((s[:, 0] + 1j * s[:, 1]) * win)
        out[b, f] = np.stack([y.real, y.imag], -1)
save('x_stft_complex', helper.make_node('STFT', ['s', 'step', 'w'], ['y'], onesided=0),
     [('s', sig), ('step', np.array(3, np.int64)), ('w', win)], [('y', out)])
