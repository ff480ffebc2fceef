#include "runtime/generation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "frontend/onnx/importer.h"
#include "passes/kv_cache_in_place.h"
#include "passes/last_position_logits.h"
#include "runtime/target_registry.h"

namespace tessel {

Expected<DecoderIo> findDecoderIo(const Graph &graph, const std::string &path) {
  DecoderIo io;
  bool ids = false;
  for (const Value *in : graph.inputs()) {
    if (in->hasInitializer()) continue;
    const std::string &name = in->name();
    if (name == "input_ids") ids = true;
    else if (name == "attention_mask") io.mask = true;
    else if (name == "position_ids") io.positions = true;
    else if (name == kCachePositionInput) io.inPlace = true;
    else if (name.starts_with("past_key_values.")) {
      const Shape &shape = in->type().shape();
      if (!shape.rankKnown() || shape.rank() != 4 || !shape[1].isStatic() || !shape[3].isStatic()) {
        return makeFileError(ErrorCode::InvalidModel, path,
                             "input '{}' is {}: a past key/value needs the shape [batch, kv_heads, past, head_dim] "
                             "with kv_heads and head_dim fixed",
                             name, in->type().str());
      }
      io.past.push_back(name);
      io.kvHeads.push_back(shape[1].size);
      io.headDim.push_back(shape[3].size);
      io.pastType = in->type().dtype();
      std::string present = "present." + name.substr(std::string("past_key_values.").size());
      const bool produced = std::any_of(graph.outputs().begin(), graph.outputs().end(),
                                        [&](const Value *out) { return out->name() == present; });
      if (!produced) return makeFileError(ErrorCode::InvalidModel, path, "input '{}' has no output '{}'", name, present);
      io.present.push_back(std::move(present));
    } else {
      return makeFileError(ErrorCode::InvalidModel, path,
                           "input '{}': a decoder for generate takes input_ids, attention_mask, position_ids and "
                           "past_key_values.N.{{key,value}}",
                           name);
    }
  }
  if (!ids) return makeFileError(ErrorCode::InvalidModel, path, "the model has no input 'input_ids'");
  const auto logits = std::find_if(graph.outputs().begin(), graph.outputs().end(),
                                   [](const Value *out) { return out->name() == "logits"; });
  if (logits == graph.outputs().end()) return makeFileError(ErrorCode::InvalidModel, path, "the model has no output 'logits'");
  const Shape &logitsShape = (*logits)->type().shape();
  if (logitsShape.rankKnown() && logitsShape.rank() == 3 && logitsShape[2].isStatic()) io.vocabulary = logitsShape[2].size;
  return io;
}

Expected<std::unique_ptr<Session>> loadDecoder(const std::string &path, const std::string &target,
                                               const SessionOptions &options, bool cacheOnDevice) {
  if (isArtifact(path)) return Session::load(path, target, options);
  TESSEL_ASSIGN_OR_RETURN(std::shared_ptr<const Target> impl, findTarget(target));
  TESSEL_ASSIGN_OR_RETURN(Model model, importOnnxFile(path));
  const bool masked = std::any_of(model.graph->inputs().begin(), model.graph->inputs().end(),
                                  [](const Value *in) { return in->name() == "attention_mask"; });
  if (impl->keepsValuesOnDevice() && masked && cacheOnDevice) {
    auto rewritten = writeKvCacheInPlace(model);
    if (!rewritten.ok()) return makeFileError(rewritten.diag().code, path, "{}", rewritten.diag().message);
  }
  // Generation reads the last position's logits only: a prefill multiplies one row by the LM head.
  auto lastOnly = keepLastPositionLogits(model);
  if (!lastOnly.ok()) return makeFileError(lastOnly.diag().code, path, "{}", lastOnly.diag().message);
  return Session::create(std::move(model), target, options);
}

namespace {

Tensor int64Tensor(int64_t rows, int64_t columns, const std::function<int64_t(int64_t, int64_t)> &at) {
  Tensor t(DType::Int64, {rows, columns});
  int64_t *data = t.data<int64_t>();
  for (int64_t b = 0; b < rows; ++b)
    for (int64_t i = 0; i < columns; ++i) data[b * columns + i] = at(b, i);
  return t;
}

/// The next token of each row from the last position's logits: the argmax, or a draw among the
/// top k at the temperature.
std::vector<int64_t> nextTokens(const Tensor &logits, const GenerationOptions &options, std::mt19937_64 &rng) {
  const int64_t batch = logits.size(0), length = logits.size(1), vocabulary = logits.size(2);
  std::vector<int64_t> next(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    const float *row = logits.data<float>() + (b * length + length - 1) * vocabulary;
    if (options.topK <= 0) {
      next[static_cast<size_t>(b)] = std::max_element(row, row + vocabulary) - row;
      continue;
    }
    std::vector<int64_t> order(static_cast<size_t>(vocabulary));
    std::iota(order.begin(), order.end(), 0);
    const int64_t k = std::min(options.topK, vocabulary);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t x, int64_t y) { return row[x] > row[y]; });
    std::vector<double> weights(static_cast<size_t>(k));
    for (int64_t i = 0; i < k; ++i)
      weights[static_cast<size_t>(i)] = std::exp((row[order[i]] - row[order[0]]) / options.temperature);
    std::discrete_distribution<int64_t> pick(weights.begin(), weights.end());
    next[static_cast<size_t>(b)] = order[static_cast<size_t>(pick(rng))];
  }
  return next;
}

/// The past keys and values: per past input a [batch, kv_heads, capacity, head_dim] buffer whose
/// first `length` positions are written.
class KvCache {
 public:
  /// An empty cache whose buffers hold `capacity` positions (zeros).
  KvCache(const DecoderIo &io, int64_t batch, int64_t capacity = 0) : io_(io), batch_(batch), capacity_(capacity) {
    for (size_t i = 0; i < io.past.size(); ++i) buffers_.push_back(zeros(i, capacity));
  }

  int64_t length() const { return length_; }
  int64_t capacity() const { return capacity_; }

  /// The past to feed: every buffer whole.
  void addFeeds(NamedValues &feeds) const {
    for (size_t i = 0; i < buffers_.size(); ++i) feeds.emplace_back(io_.past[i], RuntimeValue(buffers_[i]));
  }

  /// Bytes of all the buffers.
  uint64_t bytes() const {
    uint64_t total = 0;
    for (const Tensor &buffer : buffers_) total += buffer.numBytes();
    return total;
  }
  /// Bytes the last append() copied from an old buffer into a larger one.
  uint64_t movedBytes() const { return movedBytes_; }

  /// Records `added` positions written without their values (a timing-only run), growing the
  /// buffers (zeros) to `newCapacity`.
  void advance(int64_t added, int64_t newCapacity) {
    movedBytes_ = 0;
    if (newCapacity != capacity_) {
      for (size_t i = 0; i < buffers_.size(); ++i) {
        movedBytes_ += positionBytes(i, length_ + added);
        buffers_[i] = zeros(i, newCapacity);
      }
    }
    length_ += added;
    capacity_ = newCapacity;
  }

  /// Takes a run's presents: [batch, kv_heads, capacity + added, head_dim], the buffer's positions
  /// followed by `added` new ones, or with io.inPlace the buffers themselves, the new positions
  /// written at the cache's length. With the capacity kept only the new positions are copied (in
  /// place: the buffers are the presents); else the written ones and the new ones move into buffers
  /// of `newCapacity`.
  Status append(const NamedValues &outputs, int64_t added, int64_t newCapacity) {
    std::vector<const Tensor *> presents(buffers_.size(), nullptr);
    for (const auto &[name, value] : outputs)
      for (size_t i = 0; i < presents.size(); ++i)
        if (name == io_.present[i] && value.isTensor()) presents[i] = &value.tensor();
    const int64_t presentPositions = io_.inPlace ? capacity_ : capacity_ + added;
    for (size_t i = 0; i < presents.size(); ++i) {
      const Tensor *present = presents[i];
      if (present == nullptr || present->dtype() != io_.pastType || present->sizes() != sizes(i, presentPositions)) {
        return makeError(ErrorCode::ShapeMismatch, "output '{}' is {}; expected {} {} ({})", io_.present[i],
                         present != nullptr ? RuntimeValue(*present).describe() : "missing", dtypeName(io_.pastType),
                         formatSizes(sizes(i, presentPositions)),
                         io_.inPlace ? "the cache buffer" : fmt::format("the past and {} new positions", added));
      }
    }
    // The caller keeps the capacity only while the new positions fit behind the written ones.
    const bool grow = newCapacity != capacity_;
    movedBytes_ = 0;
    for (size_t i = 0; i < buffers_.size(); ++i) {
      if (io_.inPlace) {
        if (!grow) {
          buffers_[i] = *presents[i];
          continue;
        }
        Tensor buffer = zeros(i, newCapacity);
        copyPositions(*presents[i], 0, capacity_, length_ + added, buffer, 0);
        movedBytes_ += positionBytes(i, length_ + added);
        buffers_[i] = std::move(buffer);
      } else if (grow) {
        Tensor buffer = zeros(i, newCapacity);
        copyPositions(*presents[i], 0, capacity_ + added, length_, buffer, 0);
        copyPositions(*presents[i], capacity_, capacity_ + added, added, buffer, length_);
        buffers_[i] = std::move(buffer);
      } else {
        copyPositions(*presents[i], capacity_, capacity_ + added, added, buffers_[i], length_);
      }
    }
    length_ += added;
    capacity_ = newCapacity;
    return Status::success();
  }

 private:
  std::vector<int64_t> sizes(size_t i, int64_t positions) const {
    return {batch_, io_.kvHeads[i], positions, io_.headDim[i]};
  }
  /// Buffer i's sizes at `positions`, zero-filled.
  Tensor zeros(size_t i, int64_t positions) const {
    Tensor buffer(io_.pastType, sizes(i, positions));
    std::memset(buffer.rawData(), 0, buffer.numBytes());
    return buffer;
  }
  /// Bytes of `positions` positions of buffer i.
  uint64_t positionBytes(size_t i, int64_t positions) const {
    return static_cast<uint64_t>(batch_ * io_.kvHeads[i] * positions * io_.headDim[i]) * dtypeSize(io_.pastType);
  }

  /// Copies `count` positions starting at `from` of `source` (with `sourcePositions` per head)
  /// to `to` in `target`, for every batch row and head.
  void copyPositions(const Tensor &source, int64_t from, int64_t sourcePositions, int64_t count, Tensor &target,
                     int64_t to) const {
    if (count == 0) return;
    const int64_t heads = source.size(1), targetPositions = target.size(2);
    const size_t row = static_cast<size_t>(source.size(3)) * dtypeSize(source.dtype());
    const auto *src = static_cast<const std::byte *>(source.rawData());
    auto *dst = static_cast<std::byte *>(target.rawData());
    for (int64_t h = 0; h < batch_ * heads; ++h)
      std::memcpy(dst + (static_cast<size_t>(h * targetPositions + to)) * row,
                  src + (static_cast<size_t>(h * sourcePositions + from)) * row, static_cast<size_t>(count) * row);
  }

  const DecoderIo &io_;
  int64_t batch_;
  std::vector<Tensor> buffers_;
  int64_t length_ = 0, capacity_ = 0;
  uint64_t movedBytes_ = 0;
};

/// One run's feeds: `ids` as the new positions after the cache's written ones; the mask 1 over the
/// written past and the new positions and 0 over the buffer's unwritten rest.
NamedValues stepFeeds(const DecoderIo &io, const Tensor &ids, const KvCache &cache) {
  const int64_t batch = ids.size(0), added = ids.size(1), length = cache.length(), capacity = cache.capacity();
  NamedValues feeds;
  feeds.emplace_back("input_ids", RuntimeValue(ids));
  if (io.mask)
    feeds.emplace_back("attention_mask", RuntimeValue(int64Tensor(batch, capacity + added, [&](int64_t, int64_t i) {
                         return i < length || i >= capacity ? 1 : 0;
                       })));
  if (io.positions)
    feeds.emplace_back("position_ids", RuntimeValue(int64Tensor(batch, added, [&](int64_t, int64_t i) { return length + i; })));
  if (io.inPlace) feeds.emplace_back(kCachePositionInput, RuntimeValue(Tensor::fromVector<int64_t>({1}, {length})));
  cache.addFeeds(feeds);
  return feeds;
}

/// The cache capacity after a run that wrote `written` positions into a buffer of `capacity`: kept
/// while it has room for the next token's position too (so a buffer is not outgrown right after it
/// is made), else the next one `capacityFor` gives.
int64_t nextCapacity(int64_t written, int64_t capacity, bool exact,
                     const std::function<int64_t(int64_t)> &capacityFor) {
  return written < capacity ? capacity : capacityFor(exact ? written : written + 1);
}

Diagnostic atStep(Diagnostic diag, int64_t step) {
  diag.message = fmt::format("generate step {}: {}", step, diag.message);
  return diag;
}

}  // namespace

Expected<GenerationResult> generate(Session &session, const DecoderIo &io, const Tensor &prompt,
                                    const GenerationOptions &options) {
  if (options.maxNewTokens < 1) return makeError(ErrorCode::InvalidArgument, "generate: expected at least 1 new token");
  if (options.topK < 0 || options.temperature <= 0)
    return makeError(ErrorCode::InvalidArgument, "generate: top-k must be >= 0 and the temperature > 0");
  if (prompt.dtype() != DType::Int64 || prompt.rank() != 2 || prompt.size(0) < 1 || prompt.size(1) < 1)
    return makeError(ErrorCode::InvalidArgument, "generate: the prompt must be int64 [batch, length]; got {}",
                     RuntimeValue(prompt).describe());
  const int64_t batch = prompt.size(0);
  // Padding the cache needs the mask that says which positions are written.
  const bool exact = options.exactCache || !io.mask;
  const std::function<int64_t(int64_t)> capacityFor = [&](int64_t length) {
    if (exact) return length;
    int64_t capacity = std::max<int64_t>(1, options.minCapacity);
    while (capacity < length) capacity *= 2;
    return capacity;
  };

  if (io.inPlace && exact)
    return makeError(ErrorCode::InvalidArgument, "generate: a cache written in place needs the padded buffers and the "
                                                 "attention mask (not exact lengths)");
  // Written in place, the prefill writes the prompt into a buffer that holds the first decode step too.
  const int64_t firstCapacity = io.inPlace ? capacityFor(prompt.size(1) + 1) : 0;

  GenerationResult result;
  using Clock = std::chrono::steady_clock;
  if (options.warmUp && !exact) {
    // The shapes the loop below will run, (new positions, capacity), each once on zeros.
    std::vector<std::pair<int64_t, int64_t>> shapes;
    int64_t written = 0, capacity = firstCapacity, added = prompt.size(1);
    for (int64_t step = 0; step < options.maxNewTokens; ++step) {
      if (std::find(shapes.begin(), shapes.end(), std::pair{added, capacity}) == shapes.end())
        shapes.emplace_back(added, capacity);
      capacity = nextCapacity(written + added, capacity, exact, capacityFor);
      written += added;
      added = 1;
    }
    const Clock::time_point start = Clock::now();
    for (const auto &[positions, bufferCapacity] : shapes) {
      const KvCache zeros(io, batch, bufferCapacity);
      const NamedValues feeds = stepFeeds(io, int64Tensor(batch, positions, [](int64_t, int64_t) { return 0; }), zeros);
      const Status ran = options.timingOnly ? session.runTimingOnly(feeds) : session.run(feeds).status();
      if (!ran.ok()) return ran.diag();
    }
    result.warmUpMs = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    result.warmUpShapes = static_cast<int64_t>(shapes.size());
  }
  result.ids.resize(static_cast<size_t>(batch));
  std::mt19937_64 rng(options.seed);
  KvCache cache(io, batch, firstCapacity);
  // Written in place, the cache lives on the device: made there (cleared) before the prefill, and
  // moved there into a larger buffer when it grows.
  Residency residency;
  if (io.inPlace) {
    residency.values = io.past;
    residency.values.insert(residency.values.end(), io.present.begin(), io.present.end());
  }
  Tensor ids = prompt;
  for (int64_t step = 0; step < options.maxNewTokens; ++step) {
    const int64_t added = ids.size(1), length = cache.length(), capacity = cache.capacity();
    const NamedValues feeds = stepFeeds(io, ids, cache);
    residency.movedBytes = !io.inPlace ? 0 : step == 0 ? cache.bytes() : cache.movedBytes();
    const Clock::time_point start = Clock::now();
    // Timing only, a run has no outputs and every step feeds token 0.
    Expected<NamedValues> outputs = NamedValues{};
    if (!options.timingOnly) outputs = session.run(feeds, residency);
    else if (Status timed = session.runTimingOnly(feeds, residency); !timed.ok()) outputs = timed.diag();
    result.stepMs.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    if (!outputs.ok()) return atStep(outputs.diag(), step);
    if (step > 0 && (result.capacities.empty() || result.capacities.back() != capacity)) result.capacities.push_back(capacity);
    const RunFigures figures = session.lastCompiled()->lastRun();
    if (figures.simulated) {
      result.simulatedUs.push_back(figures.latencyUs);
      result.simulated.push_back(figures);
    }
    std::vector<int64_t> next(static_cast<size_t>(batch), 0);
    if (!options.timingOnly) {
      const Tensor *logits = nullptr;
      for (const auto &[name, value] : *outputs)
        if (name == "logits" && value.isTensor()) logits = &value.tensor();
      // Every position's logits, or the last one's (passes/last_position_logits.h).
      if (logits == nullptr || logits->dtype() != DType::Float32 || logits->rank() != 3 || logits->size(0) != batch ||
          (logits->size(1) != added && logits->size(1) != 1))
        return makeError(ErrorCode::ShapeMismatch,
                         "generate step {}: 'logits' must be float32 [batch, sequence or 1, vocabulary]", step);
      next = nextTokens(*logits, options, rng);
      for (int64_t b = 0; b < batch; ++b) result.ids[static_cast<size_t>(b)].push_back(next[static_cast<size_t>(b)]);
    }
    if (step + 1 == options.maxNewTokens) break;  // The last token's cache entry is never read.
    const int64_t newCapacity = nextCapacity(length + added, capacity, exact, capacityFor);
    if (options.timingOnly) {
      cache.advance(added, newCapacity);
    } else if (Status appended = cache.append(*outputs, added, newCapacity); !appended.ok()) {
      return atStep(appended.diag(), step);
    }
    ids = int64Tensor(batch, 1, [&](int64_t b, int64_t) { return next[static_cast<size_t>(b)]; });
    if (options.onToken) options.onToken(step + 1);
  }
  if (options.onToken) options.onToken(options.maxNewTokens);
  return result;
}

}  // namespace tessel
