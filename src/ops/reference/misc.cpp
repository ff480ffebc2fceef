// Reference kernels that fit no other family: Det, the text ops TfIdfVectorizer and
// StringNormalizer, and the optimizer steps of the ai.onnx.preview.training domain (Adagrad,
// Momentum, Adam), which update several tensors at once.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "ops/reference/helpers.h"

namespace tessel::ref {

/// Det: determinant of each trailing [M, M] matrix, by LU decomposition with partial pivoting.
Status refDet(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  if (!isFloatingPoint(x.dtype())) {
    return makeError(ErrorCode::TypeMismatch, "Det takes a floating-point tensor; got {}", dtypeName(x.dtype()));
  }
  if (x.rank() < 2 || x.size(x.rank() - 1) != x.size(x.rank() - 2)) {
    return makeError(ErrorCode::ShapeMismatch, "Det needs square matrices [*, M, M]; got {}", formatSizes(x.sizes()));
  }
  const int64_t m = x.size(x.rank() - 1);
  std::vector<int64_t> outSizes(x.sizes().begin(), x.sizes().end() - 2);
  Tensor out(x.dtype(), outSizes);
  visitDType(x.dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (kIsNumeric<T>) {
      const T *in = x.data<T>();
      T *o = out.data<T>();
      std::vector<double> a(static_cast<size_t>(m * m));
      for (int64_t b = 0; b < out.numel(); ++b) {
        for (int64_t i = 0; i < m * m; ++i) a[static_cast<size_t>(i)] = toDouble(in[b * m * m + i]);
        double det = 1.0;
        for (int64_t col = 0; col < m && det != 0.0; ++col) {
          int64_t pivot = col;
          for (int64_t r = col + 1; r < m; ++r) {
            if (std::fabs(a[static_cast<size_t>(r * m + col)]) > std::fabs(a[static_cast<size_t>(pivot * m + col)])) {
              pivot = r;
            }
          }
          if (pivot != col) {
            for (int64_t k = 0; k < m; ++k) std::swap(a[static_cast<size_t>(pivot * m + k)], a[static_cast<size_t>(col * m + k)]);
            det = -det;
          }
          const double p = a[static_cast<size_t>(col * m + col)];
          det *= p;
          if (p == 0.0) break;
          for (int64_t r = col + 1; r < m; ++r) {
            const double f = a[static_cast<size_t>(r * m + col)] / p;
            for (int64_t k = col; k < m; ++k) a[static_cast<size_t>(r * m + k)] -= f * a[static_cast<size_t>(col * m + k)];
          }
        }
        o[b] = fromDouble<T>(det);
      }
    }
  });
  ctx.setOutput(0, std::move(out));
  return Status::success();
}

namespace {

/// Counts the pooled n-grams of each row of `tokens` ([C] or [N, C]) into `counts`
/// ([rows, numPooled]). An n-gram of length n >= 2 with skip s takes every (s+1)-th token;
/// unigrams ignore skips and are counted once per position.
template <class K>
void countNGrams(const std::vector<K> &tokens, int64_t rows, int64_t cols, const std::map<std::vector<K>, int64_t> &pool,
                 int64_t minLen, int64_t maxLen, int64_t maxSkip, std::vector<int64_t> &counts, int64_t numPooled) {
  std::vector<K> gram;
  for (int64_t row = 0; row < rows; ++row) {
    const K *seq = tokens.data() + row * cols;
    for (int64_t start = 0; start < cols; ++start) {
      for (int64_t n = std::max<int64_t>(minLen, 1); n <= maxLen; ++n) {
        for (int64_t skip = 0; skip <= (n == 1 ? 0 : maxSkip); ++skip) {
          if (start + (n - 1) * (skip + 1) >= cols) break;
          gram.clear();
          for (int64_t k = 0; k < n; ++k) gram.push_back(seq[start + k * (skip + 1)]);
          auto it = pool.find(gram);
          if (it != pool.end()) ++counts[static_cast<size_t>(row * numPooled + it->second)];
        }
      }
    }
  }
}

/// Splits a flat pool into n-grams: ngramCounts[i] is where the (i+1)-grams start.
template <class K>
Expected<std::map<std::vector<K>, int64_t>> buildPool(const std::vector<K> &flat, const std::vector<int64_t> &ngramCounts) {
  std::map<std::vector<K>, int64_t> pool;
  int64_t ordinal = 0;
  const int64_t total = static_cast<int64_t>(flat.size());
  for (size_t i = 0; i < ngramCounts.size(); ++i) {
    const int64_t n = static_cast<int64_t>(i) + 1;
    const int64_t begin = ngramCounts[i];
    const int64_t end = i + 1 < ngramCounts.size() ? ngramCounts[i + 1] : total;
    if (begin < 0 || end < begin || end > total || (end - begin) % n != 0) {
      return makeError(ErrorCode::InvalidArgument, "TfIdfVectorizer ngram_counts {} do not split a pool of {} items",
                       formatSizes(ngramCounts), total);
    }
    for (int64_t p = begin; p < end; p += n) pool.emplace(std::vector<K>(flat.begin() + p, flat.begin() + p + n), ordinal++);
  }
  return pool;
}

}  // namespace

/// TfIdfVectorizer: counts of pooled n-grams, scaled by mode (TF, IDF, TFIDF) and weights.
Status refTfIdfVectorizer(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  const Node &node = ctx.node();
  if (x.rank() != 1 && x.rank() != 2) {
    return makeError(ErrorCode::ShapeMismatch, "TfIdfVectorizer takes [C] or [N, C]; got {}", formatSizes(x.sizes()));
  }
  const int64_t rows = x.rank() == 2 ? x.size(0) : 1;
  const int64_t cols = x.sizes().back();
  const int64_t minLen = node.attrInt("min_gram_length", 1), maxLen = node.attrInt("max_gram_length", 1);
  const int64_t maxSkip = node.attrInt("max_skip_count", 0);
  const std::string mode = node.attrString("mode", "TF");
  const std::vector<int64_t> ngramCounts = node.attrInts("ngram_counts");
  const std::vector<int64_t> ngramIndexes = node.attrInts("ngram_indexes");
  const std::vector<float> weights = node.attrFloats("weights");
  if (minLen < 1 || maxLen < minLen || maxSkip < 0 || (mode != "TF" && mode != "IDF" && mode != "TFIDF")) {
    return makeError(ErrorCode::InvalidArgument, "TfIdfVectorizer has bad attributes: grams {}..{}, skip {}, mode '{}'",
                     minLen, maxLen, maxSkip, mode);
  }

  std::vector<int64_t> counts;
  int64_t numPooled = 0;
  auto run = [&]<class K>(const std::vector<K> &flatPool, const std::vector<K> &tokens) -> Status {
    TESSEL_ASSIGN_OR_RETURN(auto pool, buildPool(flatPool, ngramCounts));
    numPooled = static_cast<int64_t>(pool.size());
    counts.assign(static_cast<size_t>(rows * numPooled), 0);
    countNGrams(tokens, rows, cols, pool, minLen, maxLen, maxSkip, counts, numPooled);
    return Status::success();
  };
  if (x.dtype() == DType::String) {
    const std::string *in = x.data<std::string>();
    TESSEL_RETURN_IF_ERROR(run(node.attrStrings("pool_strings"), std::vector<std::string>(in, in + x.numel())));
  } else if (x.dtype() == DType::Int32 || x.dtype() == DType::Int64) {
    TESSEL_RETURN_IF_ERROR(run(node.attrInts("pool_int64s"), x.toInt64Vector()));
  } else {
    return makeError(ErrorCode::TypeMismatch, "TfIdfVectorizer takes string, int32 or int64; got {}",
                     dtypeName(x.dtype()));
  }
  if (static_cast<int64_t>(ngramIndexes.size()) != numPooled ||
      (!weights.empty() && static_cast<int64_t>(weights.size()) != numPooled)) {
    return makeError(ErrorCode::InvalidArgument, "TfIdfVectorizer pool has {} n-grams but {} ngram_indexes, {} weights",
                     numPooled, ngramIndexes.size(), weights.size());
  }
  int64_t width = 0;
  for (int64_t index : ngramIndexes) {
    if (index < 0) return makeError(ErrorCode::InvalidArgument, "TfIdfVectorizer ngram_indexes has {}", index);
    width = std::max(width, index + 1);
  }
  Tensor out(DType::Float32, x.rank() == 2 ? std::vector<int64_t>{rows, width} : std::vector<int64_t>{width});
  float *o = out.data<float>();
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t k = 0; k < numPooled; ++k) {
      const float count = static_cast<float>(counts[static_cast<size_t>(row * numPooled + k)]);
      const float w = weights.empty() ? 1.0f : weights[static_cast<size_t>(k)];
      const float value = mode == "TF" ? count : mode == "IDF" ? std::min(count, 1.0f) * w : count * w;
      o[row * width + ngramIndexes[static_cast<size_t>(k)]] = value;
    }
  }
  ctx.setOutput(0, std::move(out));
  return Status::success();
}

/// StringNormalizer: drops stopwords from a [C] or [1, C] string tensor, then changes case.
Status refStringNormalizer(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  if (x.dtype() != DType::String) {
    return makeError(ErrorCode::TypeMismatch, "StringNormalizer takes strings; got {}", dtypeName(x.dtype()));
  }
  if (!(x.rank() == 1 || (x.rank() == 2 && x.size(0) == 1))) {
    return makeError(ErrorCode::ShapeMismatch, "StringNormalizer takes [C] or [1, C]; got {}", formatSizes(x.sizes()));
  }
  const Node &node = ctx.node();
  const std::string action = node.attrString("case_change_action", "NONE");
  if (action != "NONE" && action != "LOWER" && action != "UPPER") {
    return makeError(ErrorCode::InvalidArgument, "StringNormalizer case_change_action '{}' is not NONE, LOWER or UPPER",
                     action);
  }
  const bool caseSensitive = node.attrInt("is_case_sensitive", 0) != 0;
  auto mapCase = [](std::string s, int (*fn)(int)) {
    for (char &ch : s) ch = static_cast<char>(fn(static_cast<unsigned char>(ch)));
    return s;
  };
  auto key = [&](const std::string &s) { return caseSensitive ? s : mapCase(s, ::tolower); };
  std::vector<std::string> stopwords;
  for (const std::string &w : node.attrStrings("stopwords")) stopwords.push_back(key(w));

  std::vector<std::string> kept;
  const std::string *in = x.data<std::string>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (std::find(stopwords.begin(), stopwords.end(), key(in[i])) != stopwords.end()) continue;
    kept.push_back(action == "LOWER" ? mapCase(in[i], ::tolower) : action == "UPPER" ? mapCase(in[i], ::toupper) : in[i]);
  }
  if (kept.empty()) kept.push_back("");  // All dropped: one empty string, as the spec says.
  const int64_t c = static_cast<int64_t>(kept.size());
  ctx.setOutput(0, Tensor::fromVector<std::string>(x.rank() == 2 ? std::vector<int64_t>{1, c} : std::vector<int64_t>{c}, kept));
  return Status::success();
}

namespace {

/// One optimizer step over n tensors. Inputs are R (scalar rate), T (scalar step count), then
/// `inGroups` groups of n tensors (X..., G..., ...); outputs are `outGroups` groups of n.
/// `update(r, t, in, out)` maps one element's inputs (one per group) to its outputs.
template <class Fn>
Status optimizerStep(KernelContext &ctx, size_t inGroups, size_t outGroups, Fn update) {
  const std::string &op = ctx.node().opType();
  if (ctx.numInputs() < 2 + inGroups || (ctx.numInputs() - 2) % inGroups != 0) {
    return makeError(ErrorCode::InvalidArgument, "{} takes R, T and {} groups of tensors; got {} inputs", op, inGroups,
                     ctx.numInputs());
  }
  const size_t n = (ctx.numInputs() - 2) / inGroups;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    if (!ctx.hasInput(i)) return makeError(ErrorCode::InvalidArgument, "{} input {} is missing", op, i);
  }
  const double r = ctx.tensor(0).scalarAsDouble();
  const int64_t t = ctx.tensor(1).scalarAsInt64();
  for (size_t j = 0; j < n; ++j) {
    const Tensor &x = ctx.tensor(2 + j);
    if (!isFloatingPoint(x.dtype())) {
      return makeError(ErrorCode::TypeMismatch, "{} optimizes floating-point tensors; input {} is {}", op, 2 + j,
                       dtypeName(x.dtype()));
    }
    for (size_t g = 1; g < inGroups; ++g) {
      const Tensor &other = ctx.tensor(2 + g * n + j);
      if (other.dtype() != x.dtype() || other.sizes() != x.sizes()) {
        return makeError(ErrorCode::ShapeMismatch, "{} input {} is {}{}; expected {}{} like input {}", op, 2 + g * n + j,
                         dtypeName(other.dtype()), formatSizes(other.sizes()), dtypeName(x.dtype()),
                         formatSizes(x.sizes()), 2 + j);
      }
    }
    std::vector<Tensor> outs(outGroups, Tensor());
    for (Tensor &o : outs) o = Tensor(x.dtype(), x.sizes());
    std::vector<double> in(inGroups), res(outGroups);
    for (int64_t e = 0; e < x.numel(); ++e) {
      for (size_t g = 0; g < inGroups; ++g) in[g] = ctx.tensor(2 + g * n + j).scalarAsDouble(e);
      update(r, t, in.data(), res.data());
      for (size_t g = 0; g < outGroups; ++g) {
        visitDType(x.dtype(), [&]<class T>(TypeTag<T>) {
          if constexpr (kIsNumeric<T>) outs[g].data<T>()[e] = fromDouble<T>(res[g]);
        });
      }
    }
    for (size_t g = 0; g < outGroups; ++g) {
      if (ctx.wantsOutput(g * n + j)) ctx.setOutput(g * n + j, std::move(outs[g]));
    }
  }
  return Status::success();
}

}  // namespace

/// Adagrad: inputs R, T, X..., G..., H...; outputs X_new..., H_new....
Status refAdagrad(KernelContext &ctx) {
  const double norm = ctx.node().attrFloat("norm_coefficient", 0.0f);
  const double epsilon = ctx.node().attrFloat("epsilon", 1e-6f);
  const double decay = ctx.node().attrFloat("decay_factor", 0.0f);
  return optimizerStep(ctx, 3, 2, [&](double r, int64_t t, const double *in, double *out) {
    const double rate = r / (1.0 + static_cast<double>(t) * decay);
    const double g = norm * in[0] + in[1];
    const double h = in[2] + g * g;
    out[0] = in[0] - rate * g / (std::sqrt(h) + epsilon);
    out[1] = h;
  });
}

/// Momentum (standard or nesterov): inputs R, T, X..., G..., V...; outputs X_new..., V_new....
Status refMomentum(KernelContext &ctx) {
  const double norm = ctx.node().attrFloat("norm_coefficient", 0.0f);
  const double alpha = ctx.node().attrFloat("alpha", 0.0f);
  const double beta = ctx.node().attrFloat("beta", 0.0f);
  const std::string mode = ctx.node().attrString("mode", "standard");
  if (mode != "standard" && mode != "nesterov") {
    return makeError(ErrorCode::InvalidArgument, "Momentum mode '{}' is not standard or nesterov", mode);
  }
  const bool nesterov = mode == "nesterov";
  return optimizerStep(ctx, 3, 2, [&](double r, int64_t t, const double *in, double *out) {
    const double g = norm * in[0] + in[1];
    const double v = alpha * in[2] + (t > 0 ? beta : 1.0) * g;  // No beta scaling on the first step.
    out[0] = in[0] - r * (nesterov ? g + alpha * v : v);
    out[1] = v;
  });
}

/// Adam: inputs R, T, X..., G..., V..., H...; outputs X_new..., V_new..., H_new....
Status refAdam(KernelContext &ctx) {
  const double norm = ctx.node().attrFloat("norm_coefficient", 0.0f);
  const double normPost = ctx.node().attrFloat("norm_coefficient_post", 0.0f);
  const double alpha = ctx.node().attrFloat("alpha", 0.9f);
  const double beta = ctx.node().attrFloat("beta", 0.999f);
  const double epsilon = ctx.node().attrFloat("epsilon", 1e-6f);
  return optimizerStep(ctx, 4, 3, [&](double r, int64_t t, const double *in, double *out) {
    const double g = norm * in[0] + in[1];
    const double v = alpha * in[2] + (1.0 - alpha) * g;
    const double h = beta * in[3] + (1.0 - beta) * g * g;
    // Bias correction of both moments from the second step on.
    const double td = static_cast<double>(t);
    const double rate = t > 0 ? r * std::sqrt(1.0 - std::pow(beta, td)) / (1.0 - std::pow(alpha, td)) : r;
    out[0] = (1.0 - normPost) * (in[0] - rate * v / (std::sqrt(h) + epsilon));
    out[1] = v;
    out[2] = h;
  });
}

}  // namespace tessel::ref
