// `tessel generate MODEL|ARTIFACT (--prompt IDS.npy | --prompt-len N [--batch B]) [--max-new-tokens T]
// [--target T] [-O N] [--threads N] [--cores C] [--greedy | --top-k K --temperature X] [--seed S]
// [--exact-cache] [--cache-on-host] [--timing-only] [--no-warm-up] [--weights f32|bf16] [-o IDS.npy]`: text generation with a decoder that takes and returns its KV cache
// (runtime/generation.h: the names it looks for, the cache buffers). Prints the new ids, the time to
// the first token, per-token latency (p50/p90), tokens/s and the cache capacities the decode runs
// used; on a simulated target the simulated figures too. The shapes the runs will use are run once
// on zeros first (planned or compiled, and reported) unless --no-warm-up.
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>

#include "commands.h"
#include "ir/npy.h"
#include "runtime/generation.h"
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
  bool exactCache = false;
  bool cacheOnHost = false;
  bool timingOnly = false;
  bool noWarmUp = false;
  std::string weights = "f32";
  std::string output;
};

void generate(const GenerateArgs &args) {
  SessionOptions options;
  options.optLevel = args.optLevel;
  options.threads = args.threads;
  options.target.cores = args.cores;
  // bf16 weights: the products take bf16 operands (the weights rounded once, as they are packed);
  // on the cpu, where the host's bf16 dot product is slower than its FMA, only the few-row products
  // of the decode steps, bound by their weight bytes.
  options.target.autoCast = args.weights == "bf16" ? "matmul" : "none";
  options.target.autoCastType = "bf16";
  if (args.timingOnly && !args.output.empty()) return reportError("--timing-only generates no ids to write (-o)");
  auto session = loadDecoder(args.model, args.target, options, !args.exactCache && !args.cacheOnHost);
  if (!session.ok()) return reportError(session.diag().str());
  auto io = findDecoderIo(*(*session)->model().graph, args.model);
  if (!io.ok()) return reportError(io.diag().str());

  Tensor prompt;
  if (!args.prompt.empty()) {
    auto read = readNpy(args.prompt);
    if (!read.ok()) return reportError(read.diag().str());
    prompt = std::move(*read);
  } else {
    if (args.promptLength < 1 || args.batch < 1) return reportError("give --prompt IDS.npy or --prompt-len N (>= 1)");
    // Ids the embedding holds: below the vocabulary (where the logits state it) and below 1000.
    const uint64_t ids = static_cast<uint64_t>(io->vocabulary > 0 ? std::min<int64_t>(io->vocabulary, 1000) : 1000);
    std::mt19937_64 rng(args.seed);
    prompt = Tensor(DType::Int64, {args.batch, args.promptLength});
    for (int64_t &id : prompt.span<int64_t>()) id = static_cast<int64_t>(rng() % ids);
  }
  GenerationOptions generation;
  generation.maxNewTokens = args.maxNewTokens;
  generation.topK = args.topK;
  generation.temperature = args.temperature;
  generation.seed = args.seed;
  generation.exactCache = args.exactCache;
  generation.warmUp = !args.noWarmUp;
  generation.timingOnly = args.timingOnly;
  generation.onToken = [&](int64_t tokens) {
    if (args.maxNewTokens > 64 && tokens % 32 == 0)
      std::fprintf(stderr, "generate: %lld of %lld tokens\n", static_cast<long long>(tokens),
                   static_cast<long long>(args.maxNewTokens));
  };
  auto result = tessel::generate(**session, *io, prompt, generation);
  if (!result.ok()) return reportError(fmt::format("{}: {}", args.model, result.diag().str()));

  const int64_t batch = prompt.size(0);
  if (args.timingOnly) std::printf("generated: nothing (timing only: each step feeds token 0)\n");
  for (int64_t b = 0; b < batch && !args.timingOnly; ++b) {
    std::printf("generated%s:", batch > 1 ? fmt::format(" (row {})", b).c_str() : "");
    for (int64_t id : result->ids[static_cast<size_t>(b)]) std::printf(" %lld", static_cast<long long>(id));
    std::printf("\n");
  }
  const std::vector<double> &stepMs = result->stepMs;
  Latency decode{std::vector<double>(stepMs.begin() + 1, stepMs.end())};
  decode.sort();
  const double decodeMs = std::accumulate(decode.ms.begin(), decode.ms.end(), 0.0);
  std::printf("target %s; batch %lld, prompt %lld tokens, %lld new\n", (*session)->target().c_str(),
              static_cast<long long>(batch), static_cast<long long>(prompt.size(1)),
              static_cast<long long>(args.maxNewTokens));
  const char *firstRuns = (*session)->servesEveryShape() ? "; the first run at each new shape also plans it"
                                                         : "; each new shape compiles";
  if (result->warmUpShapes > 0) {
    std::printf("warm-up: %lld shapes %s in %.3f ms, before the timed runs\n",
                static_cast<long long>(result->warmUpShapes),
                (*session)->servesEveryShape() ? "planned" : "compiled", result->warmUpMs);
    firstRuns = "";
  }
  // Timing only, the host's times are those of simulating; only the simulated figures mean anything.
  if (!args.timingOnly) std::printf("time to first token: %.3f ms (prefill, on this host%s)\n", stepMs.front(), firstRuns);
  if (!decode.ms.empty()) {
    if (!args.timingOnly)
      std::printf("decode: p50 %.3f ms/token, p90 %.3f ms/token, %.1f tokens/s (on this host)\n", decode.percentile(50),
                  decode.percentile(90), 1000.0 * static_cast<double>(decode.ms.size()) * batch / decodeMs);
    const std::vector<int64_t> &used = result->capacities;
    std::string capacities = used.size() > 6 ? fmt::format("{}..{}", used.front(), used.back()) : "";
    for (size_t i = 0; used.size() <= 6 && i < used.size(); ++i) capacities += fmt::format("{}{}", i ? ", " : "", used[i]);
    std::printf("kv cache: %s%s; decode runs at %zu shape%s (capacity %s)\n",
                args.exactCache || !io->mask ? "exact length each step" : "buffers padded to powers of two",
                io->inPlace ? ", written in place on the device" : "",
                result->capacities.size(), result->capacities.size() == 1 ? "" : "s", capacities.c_str());
  }
  const std::vector<double> &simulatedUs = result->simulatedUs;
  if (!simulatedUs.empty())
    std::printf("simulated: first token %.3f us (prefill MFU %.1f%%)", simulatedUs.front(),
                result->simulated.front().mfuPercent);
  if (simulatedUs.size() == 1) std::printf("\n");
  if (simulatedUs.size() > 1) {
    Latency simulated{std::vector<double>(simulatedUs.begin() + 1, simulatedUs.end())};
    simulated.sort();
    std::printf("; decode p50 %.3f us/token, p90 %.3f us/token\n", simulated.percentile(50), simulated.percentile(90));
    // The decode step's parts, each its own median: the device program (simulated), the host <->
    // device transfers (the profile's link) and the host stages (measured here).
    auto decodeMedian = [&](double RunFigures::*part) {
      Latency values;
      for (size_t i = 1; i < result->simulated.size(); ++i) values.ms.push_back(result->simulated[i].*part);
      values.sort();
      return values.percentile(50);
    };
    const std::string host =
        args.timingOnly ? "not run (timing only)" : fmt::format("{:.3f} us", decodeMedian(&RunFigures::hostUs));
    std::printf("simulated decode step, medians: device %.3f us, transfers %.3f us, host stages %s (bound: %s)\n",
                decodeMedian(&RunFigures::deviceUs), decodeMedian(&RunFigures::transferUs), host.c_str(),
                result->simulated.back().boundingEngine.c_str());
  }
  if (!simulatedUs.empty()) {
    // The prefill's parts, and what of it left the device (a long prompt's activations may not fit).
    const RunFigures &prefill = result->simulated.front();
    const std::string host = args.timingOnly ? "not run (timing only)" : fmt::format("{:.3f} us", prefill.hostUs);
    std::printf("simulated prefill: device %.3f us, transfers %.3f us, host stages %s (bound: %s); %d of %d nodes on "
                "the host\n",
                prefill.deviceUs, prefill.transferUs, host.c_str(), prefill.boundingEngine.c_str(), prefill.hostNodes,
                prefill.hostNodes + prefill.deviceNodes);
    for (const std::string &fallback : prefill.fallbacks) std::printf("  on the host: %s\n", fallback.c_str());
  }
  if (!args.output.empty()) {
    Tensor out(DType::Int64, {batch, args.maxNewTokens});
    for (int64_t b = 0; b < batch; ++b)
      std::copy(result->ids[static_cast<size_t>(b)].begin(), result->ids[static_cast<size_t>(b)].end(),
                out.data<int64_t>() + b * args.maxNewTokens);
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
  cmd->add_flag("--timing-only", args->timingOnly,
                "nc: simulate the timing of each step without computing it (a model too large to simulate whole); no "
                "ids are generated");
  cmd->add_flag("--cache-on-host", args->cacheOnHost,
                "nc: keep the KV cache on the host, sent to the device and back each step, instead of written in place "
                "on the device (to compare the two)");
  cmd->add_flag("--exact-cache", args->exactCache,
                 "Feed the KV cache at its exact length each step (one shape per token) instead of in buffers "
                 "padded to powers of two");
  cmd->add_flag("--no-warm-up", args->noWarmUp,
                "Do not run the shapes the generation will use once beforehand: their planning or compiling is then "
                "in the timed runs");
  cmd->add_option("--weights", args->weights, "f32, or bf16: matmul operands in bf16 (half the weight bytes a step reads)")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", args->output, "Write the generated ids, int64 [batch, new tokens] (.npy)");
  cmd->callback([args] { generate(*args); });
}

}  // namespace tessel::cli
