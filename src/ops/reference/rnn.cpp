// Reference kernels of the rnn family: LSTM, GRU and RNN. One driver reads and validates the
// inputs (W, R, B, sequence_lens, initial states, peepholes) against hidden_size and the direction
// count, walks each direction over time and writes Y, Y_h and Y_c; each op supplies only its cell
// update. Everything is computed in double and narrowed to the input dtype at the end.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <optional>
#include <string_view>

#include "ops/reference/helpers.h"

namespace tessel::ref {

namespace {

enum class ActivationKind {
  Sigmoid, Tanh, Relu, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus
};

/// A gate activation the ONNX recurrent ops accept, with how many of activation_alpha /
/// activation_beta it consumes and the values used when those lists run out.
struct ActivationInfo {
  std::string_view name;  // Lower case; attribute values compare case-insensitively.
  ActivationKind kind;
  int numParams;          // 0: none, 1: alpha, 2: alpha and beta.
  double defaultAlpha;
  double defaultBeta;
};

constexpr ActivationInfo kActivations[] = {
    {"sigmoid", ActivationKind::Sigmoid, 0, 0.0, 0.0},
    {"tanh", ActivationKind::Tanh, 0, 0.0, 0.0},
    {"relu", ActivationKind::Relu, 0, 0.0, 0.0},
    {"affine", ActivationKind::Affine, 2, 1.0, 0.0},
    {"leakyrelu", ActivationKind::LeakyRelu, 1, 0.01, 0.0},
    {"thresholdedrelu", ActivationKind::ThresholdedRelu, 1, 1.0, 0.0},
    {"scaledtanh", ActivationKind::ScaledTanh, 2, 1.0, 1.0},
    {"hardsigmoid", ActivationKind::HardSigmoid, 2, 0.2, 0.5},
    {"elu", ActivationKind::Elu, 1, 1.0, 0.0},
    {"softsign", ActivationKind::Softsign, 0, 0.0, 0.0},
    {"softplus", ActivationKind::Softplus, 0, 0.0, 0.0},
};

/// One gate activation with its parameters; shared by the LSTM, GRU and RNN cells.
struct Activation {
  ActivationKind kind = ActivationKind::Sigmoid;
  double alpha = 0.0;
  double beta = 0.0;

  double operator()(double x) const {
    switch (kind) {
      case ActivationKind::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
      case ActivationKind::Tanh: return std::tanh(x);
      case ActivationKind::Relu: return std::max(x, 0.0);
      case ActivationKind::Affine: return alpha * x + beta;
      case ActivationKind::LeakyRelu: return x >= 0 ? x : alpha * x;
      case ActivationKind::ThresholdedRelu: return x > alpha ? x : 0.0;
      case ActivationKind::ScaledTanh: return alpha * std::tanh(beta * x);
      case ActivationKind::HardSigmoid: return std::clamp(alpha * x + beta, 0.0, 1.0);
      case ActivationKind::Elu: return x >= 0 ? x : alpha * (std::exp(x) - 1.0);
      case ActivationKind::Softsign: return x / (1.0 + std::abs(x));
      case ActivationKind::Softplus: return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    }
    return x;
  }
};

std::string lowerCase(std::string s) {
  for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// Reads `activations` (defaulting to `defaults` per direction) and hands out activation_alpha /
/// activation_beta in order to the activations that take them, as onnxruntime does. A list of
/// one direction's activations is reused for both directions of a bidirectional node.
Expected<std::vector<Activation>> parseActivations(const Node &node, const std::vector<std::string> &defaults,
                                                   int64_t numDirections) {
  std::vector<std::string> names = node.attrStrings("activations");
  if (names.empty()) names = defaults;
  if (numDirections == 2 && names.size() == defaults.size()) {
    const std::vector<std::string> oneDirection = names;
    names.insert(names.end(), oneDirection.begin(), oneDirection.end());
  }
  if (static_cast<int64_t>(names.size()) != static_cast<int64_t>(defaults.size()) * numDirections) {
    return makeError(ErrorCode::InvalidArgument, "{}: activations has {} values; expected {} ({} per direction)",
                     node.opType(), names.size(), defaults.size() * numDirections, defaults.size());
  }
  std::vector<float> alphas = node.attrFloats("activation_alpha");
  std::vector<float> betas = node.attrFloats("activation_beta");
  size_t nextAlpha = 0, nextBeta = 0;
  std::vector<Activation> out;
  for (const std::string &name : names) {
    const std::string key = lowerCase(name);
    auto info = std::find_if(std::begin(kActivations), std::end(kActivations),
                             [&](const ActivationInfo &a) { return a.name == key; });
    if (info == std::end(kActivations)) {
      return makeError(ErrorCode::InvalidArgument, "{}: unknown activation '{}'", node.opType(), name);
    }
    Activation act{info->kind, info->defaultAlpha, info->defaultBeta};
    if (info->numParams >= 1 && nextAlpha < alphas.size()) act.alpha = alphas[nextAlpha++];
    if (info->numParams >= 2 && nextBeta < betas.size()) act.beta = betas[nextBeta++];
    out.push_back(act);
  }
  return out;
}

/// [a][b][inner] -> [b][a][inner]: converts between layout 0 and layout 1.
std::vector<double> swapLeadingDims(const std::vector<double> &in, int64_t a, int64_t b, int64_t inner) {
  std::vector<double> out(in.size());
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      std::copy_n(in.begin() + (i * b + j) * inner, inner, out.begin() + (j * a + i) * inner);
  return out;
}

/// The validated inputs of one recurrent node, in layout 0 order, widened to double.
struct Recurrence {
  int64_t seqLength = 0, batch = 0, inputSize = 0, hidden = 0, numDirections = 1, numGates = 1;
  bool reverse = false;             // direction == "reverse" (only with one direction).
  std::vector<double> x;            // [seq, batch, input]
  std::vector<double> w, r, b;      // [D, G*H, input], [D, G*H, H], [D, 2*G*H] (zeros when absent)
  std::vector<double> p;            // [D, 3*H] LSTM peepholes (zeros when absent)
  std::vector<double> h0, c0;       // [D, batch, H]
  std::vector<int64_t> seqLens;     // [batch]
  std::vector<Activation> activations;  // Per direction, in the op's order (f, g, h).
  std::optional<double> clip;

  double clipped(double v) const { return clip ? std::clamp(v, -*clip, *clip) : v; }

  /// W·x + Wb and R·h + Rb for direction `dir`, each G*H values in the op's gate order.
  void project(int64_t dir, const double *xt, const double *ht, std::vector<double> &xw,
               std::vector<double> &hr) const {
    const int64_t rows = numGates * hidden;
    xw.assign(rows, 0.0);
    hr.assign(rows, 0.0);
    const double *wd = w.data() + dir * rows * inputSize;
    const double *rd = r.data() + dir * rows * hidden;
    const double *bd = b.data() + dir * 2 * rows;
    for (int64_t i = 0; i < rows; ++i) {
      double sx = bd[i], sh = bd[rows + i];
      for (int64_t k = 0; k < inputSize; ++k) sx += wd[i * inputSize + k] * xt[k];
      for (int64_t k = 0; k < hidden; ++k) sh += rd[i * hidden + k] * ht[k];
      xw[i] = sx;
      hr[i] = sh;
    }
  }
};

/// Updates the state (h, and c for LSTM) of one batch entry in one direction from input xt.
using CellFn = std::function<void(const Recurrence &rec, int64_t dir, const double *xt, double *h, double *c)>;

Status expectSizes(const KernelContext &ctx, const char *what, const Tensor &t, const std::vector<int64_t> &expected) {
  if (t.sizes() == expected) return Status::success();
  return makeError(ErrorCode::ShapeMismatch, "{}: {} has shape {}; expected {}", ctx.node().opType(), what,
                   formatSizes(t.sizes()), formatSizes(expected));
}

/// Reads an optional input of `sizes` (given in layout 0 order; state inputs are checked in the
/// node's layout) into `out`, or leaves `out` zero-filled when the input is omitted.
Status readOptional(const KernelContext &ctx, size_t index, const char *what, std::vector<int64_t> sizes,
                    bool isState, int64_t layout, std::vector<double> &out) {
  out.assign(static_cast<size_t>(numElements(sizes)), 0.0);
  if (!ctx.hasInput(index)) return Status::success();
  const Tensor &t = ctx.tensor(index);
  TESSEL_RETURN_IF_ERROR(expectSameDType(ctx, 0, index));
  if (isState && layout == 1) {
    TESSEL_RETURN_IF_ERROR(expectSizes(ctx, what, t, {sizes[1], sizes[0], sizes[2]}));
    out = swapLeadingDims(toDoubles(t), sizes[1], sizes[0], sizes[2]);
    return Status::success();
  }
  TESSEL_RETURN_IF_ERROR(expectSizes(ctx, what, t, sizes));
  out = toDoubles(t);
  return Status::success();
}

/// Reads and validates every input of an LSTM/GRU/RNN node with `numGates` gates.
Expected<Recurrence> readRecurrence(const KernelContext &ctx, int64_t numGates, int64_t layout,
                                    const std::vector<std::string> &defaultActivations) {
  const Node &node = ctx.node();
  const std::string op = node.opType();
  Recurrence rec;
  rec.numGates = numGates;
  const std::string direction = node.attrString("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return makeError(ErrorCode::InvalidArgument, "{}: direction '{}' is not forward, reverse or bidirectional", op,
                     direction);
  }
  rec.numDirections = direction == "bidirectional" ? 2 : 1;
  rec.reverse = direction == "reverse";
  if (layout != 0 && layout != 1) {
    return makeError(ErrorCode::InvalidArgument, "{}: layout {} is not 0 or 1", op, layout);
  }

  if (!ctx.hasInput(0) || !ctx.hasInput(1) || !ctx.hasInput(2)) {
    return makeError(ErrorCode::InvalidArgument, "{}: X, W and R are required", op);
  }
  const Tensor &x = ctx.tensor(0);
  if (!isFloatingPoint(x.dtype())) {
    return makeError(ErrorCode::TypeMismatch, "{}: X must be floating point; got {}", op, dtypeName(x.dtype()));
  }
  TESSEL_RETURN_IF_ERROR(expectSameDType(ctx, 0, 1));
  TESSEL_RETURN_IF_ERROR(expectSameDType(ctx, 0, 2));
  if (x.rank() != 3) return makeError(ErrorCode::ShapeMismatch, "{}: X has rank {}; expected 3", op, x.rank());
  rec.seqLength = x.size(layout == 0 ? 0 : 1);
  rec.batch = x.size(layout == 0 ? 1 : 0);
  rec.inputSize = x.size(2);
  const Tensor &r = ctx.tensor(2);
  if (r.rank() != 3) return makeError(ErrorCode::ShapeMismatch, "{}: R has rank {}; expected 3", op, r.rank());
  rec.hidden = node.attrInt("hidden_size", r.size(2));
  if (rec.hidden <= 0) {
    return makeError(ErrorCode::InvalidArgument, "{}: hidden_size {} must be positive", op, rec.hidden);
  }

  const int64_t d = rec.numDirections, g = numGates, h = rec.hidden;
  TESSEL_RETURN_IF_ERROR(expectSizes(ctx, "W", ctx.tensor(1), {d, g * h, rec.inputSize}));
  TESSEL_RETURN_IF_ERROR(expectSizes(ctx, "R", r, {d, g * h, h}));
  rec.w = toDoubles(ctx.tensor(1));
  rec.r = toDoubles(r);
  rec.x = layout == 0 ? toDoubles(x) : swapLeadingDims(toDoubles(x), rec.batch, rec.seqLength, rec.inputSize);
  TESSEL_RETURN_IF_ERROR(readOptional(ctx, 3, "B", {d, 2 * g * h}, false, layout, rec.b));
  TESSEL_RETURN_IF_ERROR(readOptional(ctx, 5, "initial_h", {d, rec.batch, h}, true, layout, rec.h0));
  if (numGates == 4) {
    TESSEL_RETURN_IF_ERROR(readOptional(ctx, 6, "initial_c", {d, rec.batch, h}, true, layout, rec.c0));
    TESSEL_RETURN_IF_ERROR(readOptional(ctx, 7, "P", {d, 3 * h}, false, layout, rec.p));
  } else {
    rec.c0.assign(rec.h0.size(), 0.0);
  }

  rec.seqLens.assign(static_cast<size_t>(rec.batch), rec.seqLength);
  if (ctx.hasInput(4)) {
    const Tensor &lens = ctx.tensor(4);
    if (lens.dtype() != DType::Int32 && lens.dtype() != DType::Int64) {
      return makeError(ErrorCode::TypeMismatch, "{}: sequence_lens must be int32; got {}", op, dtypeName(lens.dtype()));
    }
    TESSEL_RETURN_IF_ERROR(expectSizes(ctx, "sequence_lens", lens, {rec.batch}));
    rec.seqLens = lens.toInt64Vector();
    for (int64_t len : rec.seqLens) {
      if (len < 0 || len > rec.seqLength) {
        return makeError(ErrorCode::InvalidArgument, "{}: sequence_lens value {} is outside [0, {}]", op, len,
                         rec.seqLength);
      }
    }
  }
  if (node.hasAttr("clip")) rec.clip = node.attrFloat("clip", 0.0f);
  TESSEL_ASSIGN_OR_RETURN(rec.activations, parseActivations(node, defaultActivations, d));
  return rec;
}

/// Runs `cell` over every direction, batch entry and time step, then sets Y, Y_h and Y_c (the
/// last only when `hasCellState`) in the node's layout. Steps past a batch entry's sequence length
/// leave Y zero and the state unchanged.
Status runRecurrence(KernelContext &ctx, int64_t numGates, const std::vector<std::string> &defaultActivations,
                     bool hasCellState, const CellFn &cell) {
  const int64_t layout = ctx.node().attrInt("layout", 0);
  TESSEL_ASSIGN_OR_RETURN(Recurrence rec, readRecurrence(ctx, numGates, layout, defaultActivations));
  const int64_t seq = rec.seqLength, batch = rec.batch, hid = rec.hidden, dirs = rec.numDirections;
  std::vector<double> y(static_cast<size_t>(seq * dirs * batch * hid), 0.0);  // [seq, D, batch, H]
  std::vector<double> hState = rec.h0, cState = rec.c0;                       // [D, batch, H]
  for (int64_t dir = 0; dir < dirs; ++dir) {
    const bool backward = rec.reverse || dir == 1;
    for (int64_t bi = 0; bi < batch; ++bi) {
      double *h = hState.data() + (dir * batch + bi) * hid;
      double *c = cState.data() + (dir * batch + bi) * hid;
      const int64_t len = rec.seqLens[bi];
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = backward ? len - 1 - step : step;
        cell(rec, dir, rec.x.data() + (t * batch + bi) * rec.inputSize, h, c);
        std::copy_n(h, hid, y.begin() + ((t * dirs + dir) * batch + bi) * hid);
      }
    }
  }
  const DType dtype = ctx.tensor(0).dtype();
  if (layout == 0) {
    ctx.setOutput(0, fromDoubles(dtype, {seq, dirs, batch, hid}, y));
    ctx.setOutput(1, fromDoubles(dtype, {dirs, batch, hid}, hState));
    if (hasCellState) ctx.setOutput(2, fromDoubles(dtype, {dirs, batch, hid}, cState));
  } else {
    ctx.setOutput(0, fromDoubles(dtype, {batch, seq, dirs, hid}, swapLeadingDims(y, seq * dirs, batch, hid)));
    ctx.setOutput(1, fromDoubles(dtype, {batch, dirs, hid}, swapLeadingDims(hState, dirs, batch, hid)));
    if (hasCellState) {
      ctx.setOutput(2, fromDoubles(dtype, {batch, dirs, hid}, swapLeadingDims(cState, dirs, batch, hid)));
    }
  }
  return Status::success();
}

}  // namespace

Status refLSTM(KernelContext &ctx) {
  const bool inputForget = ctx.node().attrInt("input_forget", 0) != 0;
  std::vector<double> xw, hr;
  // Gate order in W, R and B is i, o, f, c; peepholes P are i, o, f.
  return runRecurrence(ctx, /*numGates=*/4, {"Sigmoid", "Tanh", "Tanh"}, /*hasCellState=*/true,
                       [&](const Recurrence &rec, int64_t dir, const double *xt, double *h, double *c) {
    const int64_t hid = rec.hidden;
    const Activation &f = rec.activations[dir * 3], &g = rec.activations[dir * 3 + 1],
                     &hAct = rec.activations[dir * 3 + 2];
    const double *pi = rec.p.data() + dir * 3 * hid, *po = pi + hid, *pf = pi + 2 * hid;
    rec.project(dir, xt, h, xw, hr);
    for (int64_t j = 0; j < hid; ++j) {
      const double in = f(rec.clipped(xw[j] + hr[j] + pi[j] * c[j]));
      const double forget = inputForget ? 1.0 - in : f(rec.clipped(xw[2 * hid + j] + hr[2 * hid + j] + pf[j] * c[j]));
      const double candidate = g(rec.clipped(xw[3 * hid + j] + hr[3 * hid + j]));
      c[j] = forget * c[j] + in * candidate;
      const double out = f(rec.clipped(xw[hid + j] + hr[hid + j] + po[j] * c[j]));
      h[j] = out * hAct(c[j]);
    }
  });
}

Status refGRU(KernelContext &ctx) {
  const bool linearBeforeReset = ctx.node().attrInt("linear_before_reset", 0) != 0;
  std::vector<double> xw, hr, z, resetH;
  // Gate order in W, R and B is z (update), r (reset), h (candidate).
  return runRecurrence(ctx, /*numGates=*/3, {"Sigmoid", "Tanh"}, /*hasCellState=*/false,
                       [&](const Recurrence &rec, int64_t dir, const double *xt, double *h, double *) {
    const int64_t hid = rec.hidden;
    const Activation &f = rec.activations[dir * 2], &g = rec.activations[dir * 2 + 1];
    rec.project(dir, xt, h, xw, hr);
    z.assign(hid, 0.0);
    resetH.assign(hid, 0.0);  // r ⊙ H(t-1), or r ⊙ (R_h·H(t-1) + Rb_h) with linear_before_reset.
    for (int64_t j = 0; j < hid; ++j) {
      z[j] = f(rec.clipped(xw[j] + hr[j]));
      const double reset = f(rec.clipped(xw[hid + j] + hr[hid + j]));
      resetH[j] = reset * (linearBeforeReset ? hr[2 * hid + j] : h[j]);
    }
    if (!linearBeforeReset) {
      // The candidate's recurrent term is R_h·(r ⊙ H(t-1)) + Rb_h, not the projection of H(t-1).
      const double *rh = rec.r.data() + (dir * 3 + 2) * hid * hid;
      const double *rbh = rec.b.data() + dir * 6 * hid + 5 * hid;
      std::vector<double> term(hid);
      for (int64_t i = 0; i < hid; ++i) {
        double s = rbh[i];
        for (int64_t k = 0; k < hid; ++k) s += rh[i * hid + k] * resetH[k];
        term[i] = s;
      }
      resetH = std::move(term);
    }
    for (int64_t j = 0; j < hid; ++j) {
      const double candidate = g(rec.clipped(xw[2 * hid + j] + resetH[j]));
      h[j] = (1.0 - z[j]) * candidate + z[j] * h[j];
    }
  });
}

Status refRNN(KernelContext &ctx) {
  std::vector<double> xw, hr;
  return runRecurrence(ctx, /*numGates=*/1, {"Tanh"}, /*hasCellState=*/false,
                       [&](const Recurrence &rec, int64_t dir, const double *xt, double *h, double *) {
    const Activation &f = rec.activations[dir];
    rec.project(dir, xt, h, xw, hr);
    for (int64_t j = 0; j < rec.hidden; ++j) h[j] = f(rec.clipped(xw[j] + hr[j]));
  });
}

}  // namespace tessel::ref
