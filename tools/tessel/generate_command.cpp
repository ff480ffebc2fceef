// `tessel generate MODEL|ARTIFACT (--prompt IDS.npy | --prompt-len N [--batch B]) [--max-new-tokens T]
// [--target T] [-O N] [--threads N] [--cores C] [--greedy | --top-k K --temperature X] [--seed S] [-o IDS.npy]`:
// text generation with a decoder exported the way the ecosystem exports them: inputs `input_ids`,
// optionally `attention_mask` and `position_ids`, and `past_key_values.N.key` / `.value`
// [batch, kv_heads, past, head_dim]; outputs `logits` [batch, sequence, vocabulary] and
// `present.N.key` / `.value`. The prompt is one prefill run (the cache empty); then one decode run
// per new token, each feeding the previous run's presents back as the past. Greedy by default
// (argmax), else top-k sampling at a temperature, seeded. Prints the new ids, the time to the
// first token, per-token latency (p50/p90) and tokens/s; on a simulated target the simulated
// figures too.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "commands.h"
#include "ir/npy.h"
#include "runtime/session.h"

namespace tessel::cli {

namespace {

struct GenerateArgs {
  std::string model;
  std::string prompt;
  int64_t promptLength = 0;
  int64_t batch = 1;
  int64_t maxNewTokens = 64;
  std::string target = "cpu";
  int optLevel = 3;
  int threads = 0;
  int cores = 1;
  int64_t topK = 0;
  double temperature = 1.0;
  uint64_t seed = 0;
  std::string output;
};

/// The decoder's inputs and outputs, found by the names the exporters give them.
struct DecoderIo {
  bool mask = false, positions = false;
  std::vector<std::string> past, present;  // past_key_values.N.{key,value} and their presents, in order.
  std::vector<int64_t> kvHeads, headDim;   // Per past input.
  DType pastType = DType::Float32;
};

Expected<DecoderIo> findDecoderIo(const Graph &graph, const std::string &path) {
  DecoderIo io;
  bool ids = false;
  for (const Value *in : graph.inputs()) {
    if (in->hasInitializer()) continue;
    const std::string &name = in->name();
    if (name == "input_ids") ids = true;
    else if (name == "attention_mask") io.mask = true;
    else if (name == "position_ids") io.positions = true;
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
  return io;
}

Tensor int64Tensor(std::vector<int64_t> sizes, const std::function<int64_t(int64_t, int64_t)> &at) {
  Tensor t(DType::Int64, sizes);
  int64_t *data = t.data<int64_t>();
  for (int64_t b = 0; b < sizes[0]; ++b)
    for (int64_t i = 0; i < sizes[1]; ++i) data[b * sizes[1] + i] = at(b, i);
  return t;
}

/// The next token of each row from the last position's logits: the argmax, or a draw among the
/// top k at the temperature.
std::vector<int64_t> nextTokens(const Tensor &logits, const GenerateArgs &args, std::mt19937_64 &rng) {
  const int64_t batch = logits.size(0), length = logits.size(1), vocabulary = logits.size(2);
  std::vector<int64_t> next(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    const float *row = logits.data<float>() + (b * length + length - 1) * vocabulary;
    if (args.topK <= 0) {
      next[static_cast<size_t>(b)] = std::max_element(row, row + vocabulary) - row;
      continue;
    }
    std::vector<int64_t> order(static_cast<size_t>(vocabulary));
    std::iota(order.begin(), order.end(), 0);
    const int64_t k = std::min(args.topK, vocabulary);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t x, int64_t y) { return row[x] > row[y]; });
    std::vector<double> weights(static_cast<size_t>(k));
    for (int64_t i = 0; i < k; ++i) weights[static_cast<size_t>(i)] = std::exp((row[order[i]] - row[order[0]]) / args.temperature);
    std::discrete_distribution<int64_t> pick(weights.begin(), weights.end());
    next[static_cast<size_t>(b)] = order[static_cast<size_t>(pick(rng))];
  }
  return next;
}

void generate(const GenerateArgs &args) {
  if (args.maxNewTokens < 1) return reportError("--max-new-tokens: expected at least 1");
  if (args.topK < 0 || args.temperature <= 0) return reportError("--top-k must be >= 0 and --temperature > 0");
  SessionOptions options;
  options.optLevel = args.optLevel;
  options.threads = args.threads;
  options.target.cores = args.cores;
  options.target.autoCast = "none";
  auto session = Session::load(args.model, args.target, options);
  if (!session.ok()) return reportError(session.diag().str());
  auto io = findDecoderIo(*(*session)->model().graph, args.model);
  if (!io.ok()) return reportError(io.diag().str());

  Tensor prompt;
  if (!args.prompt.empty()) {
    auto read = readNpy(args.prompt);
    if (!read.ok()) return reportError(read.diag().str());
    prompt = std::move(*read);
    if (prompt.dtype() != DType::Int64 || prompt.rank() != 2 || prompt.size(1) < 1)
      return reportError(fmt::format("{}: the prompt must be int64 [batch, length]; got {}", args.prompt,
                                     RuntimeValue(prompt).describe()));
  } else {
    if (args.promptLength < 1 || args.batch < 1) return reportError("give --prompt IDS.npy or --prompt-len N (>= 1)");
    std::mt19937_64 rng(args.seed);
    prompt = int64Tensor({args.batch, args.promptLength}, [&](int64_t, int64_t) { return static_cast<int64_t>(rng() % 1000); });
  }
  const int64_t batch = prompt.size(0);
  std::mt19937_64 rng(args.seed);
  NamedValues past;
  for (size_t i = 0; i < io->past.size(); ++i)
    past.emplace_back(io->past[i], RuntimeValue(Tensor(io->pastType, {batch, io->kvHeads[i], 0, io->headDim[i]})));

  std::vector<std::vector<int64_t>> generated(static_cast<size_t>(batch));
  std::vector<double> stepMs, simulatedUs;
  Tensor ids = prompt;
  int64_t cached = 0;  // Positions in the cache.
  using Clock = std::chrono::steady_clock;
  for (int64_t step = 0; step < args.maxNewTokens; ++step) {
    const int64_t length = ids.size(1);
    NamedValues feeds;
    feeds.emplace_back("input_ids", RuntimeValue(ids));
    if (io->mask) feeds.emplace_back("attention_mask", RuntimeValue(int64Tensor({batch, cached + length}, [](int64_t, int64_t) { return 1; })));
    if (io->positions)
      feeds.emplace_back("position_ids", RuntimeValue(int64Tensor({batch, length}, [&](int64_t, int64_t i) { return cached + i; })));
    for (auto &entry : past) feeds.push_back(std::move(entry));
    const Clock::time_point start = Clock::now();
    auto outputs = (*session)->run(feeds);
    stepMs.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    if (!outputs.ok()) return reportError(fmt::format("step {}: {}", step, outputs.diag().str()));
    const RunFigures figures = (*session)->lastCompiled()->lastRun();
    if (figures.simulated) simulatedUs.push_back(figures.latencyUs);
    past.clear();
    const Tensor *logits = nullptr;
    for (auto &[name, value] : *outputs) {
      if (name == "logits") logits = &value.tensor();
      for (size_t i = 0; i < io->present.size(); ++i)
        if (name == io->present[i]) past.emplace_back(io->past[i], value);
    }
    if (!logits || logits->dtype() != DType::Float32 || logits->rank() != 3 || logits->size(0) != batch)
      return reportError(fmt::format("step {}: 'logits' must be float32 [batch, sequence, vocabulary]", step));
    const std::vector<int64_t> next = nextTokens(*logits, args, rng);
    for (int64_t b = 0; b < batch; ++b) generated[static_cast<size_t>(b)].push_back(next[static_cast<size_t>(b)]);
    cached += length;
    ids = int64Tensor({batch, 1}, [&](int64_t b, int64_t) { return next[static_cast<size_t>(b)]; });
    if (args.maxNewTokens > 64 && (step + 1) % 32 == 0)
      std::fprintf(stderr, "generate: %lld of %lld tokens\n", static_cast<long long>(step + 1),
                   static_cast<long long>(args.maxNewTokens));
  }

  for (int64_t b = 0; b < batch; ++b) {
    std::printf("generated%s:", batch > 1 ? fmt::format(" (row {})", b).c_str() : "");
    for (int64_t id : generated[static_cast<size_t>(b)]) std::printf(" %lld", static_cast<long long>(id));
    std::printf("\n");
  }
  Latency decode{std::vector<double>(stepMs.begin() + 1, stepMs.end())};
  decode.sort();
  const double decodeMs = std::accumulate(decode.ms.begin(), decode.ms.end(), 0.0);
  std::printf("target %s; batch %lld, prompt %lld tokens, %lld new\n", (*session)->target().c_str(),
              static_cast<long long>(batch), static_cast<long long>(prompt.size(1)),
              static_cast<long long>(args.maxNewTokens));
  std::printf("time to first token: %.3f ms (prefill, on this host%s)\n", stepMs.front(),
              (*session)->servesEveryShape() ? "; the first run at each new length also plans it" : "; each new length compiles");
  if (!decode.ms.empty())
    std::printf("decode: p50 %.3f ms/token, p90 %.3f ms/token, %.1f tokens/s (on this host)\n", decode.percentile(50),
                decode.percentile(90), 1000.0 * static_cast<double>(decode.ms.size()) * batch / decodeMs);
  if (simulatedUs.size() > 1) {
    Latency simulated{std::vector<double>(simulatedUs.begin() + 1, simulatedUs.end())};
    simulated.sort();
    std::printf("simulated: first token %.3f us; decode p50 %.3f us/token, p90 %.3f us/token\n", simulatedUs.front(),
                simulated.percentile(50), simulated.percentile(90));
  }
  if (!args.output.empty()) {
    Tensor out = int64Tensor({batch, args.maxNewTokens}, [&](int64_t b, int64_t i) {
      return generated[static_cast<size_t>(b)][static_cast<size_t>(i)];
    });
    Status written = writeNpy(args.output, out);
    if (!written.ok()) return reportError(written.str());
    std::printf("wrote %s\n", args.output.c_str());
  }
}

}  // namespace

void addGenerateCommand(CLI::App &app) {
  auto args = std::make_shared<GenerateArgs>();
  CLI::App *cmd = app.add_subcommand("generate", "Generate tokens with a decoder that takes and returns its KV cache");
  cmd->add_option("model", args->model, "Decoder (.onnx: input_ids, past_key_values.N.key/value -> logits, present.N.*) or artifact")
      ->required();
  cmd->add_option("--prompt", args->prompt, "Prompt ids, int64 [batch, length] (.npy)");
  cmd->add_option("--prompt-len", args->promptLength, "A seeded random prompt of this length instead");
  cmd->add_option("--batch", args->batch, "Rows of the random prompt")->capture_default_str();
  cmd->add_option("--max-new-tokens", args->maxNewTokens, "Tokens to generate")->capture_default_str();
  cmd->add_option("--target", args->target, "cpu, ref, nc-v2, nc-v3 or a profile (.json)")->capture_default_str();
  cmd->add_option("-O", args->optLevel, "Optimization level 0-3")->capture_default_str();
  cmd->add_option("--threads", args->threads, "cpu threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--cores", args->cores, "nc: cores to shard over")->capture_default_str();
  cmd->add_flag_callback("--greedy", [args] { args->topK = 0; }, "Take the most likely token (the default)");
  cmd->add_option("--top-k", args->topK, "Sample among the k most likely tokens (0: greedy)")->capture_default_str();
  cmd->add_option("--temperature", args->temperature, "Sampling temperature")->capture_default_str();
  cmd->add_option("--seed", args->seed, "Seed of the sampling and of a random prompt")->capture_default_str();
  cmd->add_option("-o,--output", args->output, "Write the generated ids, int64 [batch, new tokens] (.npy)");
  cmd->callback([args] { generate(*args); });
}

}  // namespace tessel::cli
