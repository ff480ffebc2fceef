// Text generation with a decoder exported the way the ecosystem exports them: inputs `input_ids`,
// optionally `attention_mask` and `position_ids`, and `past_key_values.N.key` / `.value`
// [batch, kv_heads, past, head_dim]; outputs `logits` [batch, sequence, vocabulary] and
// `present.N.key` / `.value` [batch, kv_heads, past + sequence, head_dim]. The prompt is one
// prefill run (the cache empty); then one decode run per new token.
//
// The KV cache is a buffer per past input whose capacity grows through powers of two. Each decode
// run is fed the whole buffer as the past, with the attention mask 0 over the positions not yet
// written, and only the new position of each present is copied back into the buffer. So a
// session sees one set of shapes per capacity — one plan on the cpu, one compile on an
// accelerator, reused until the cache outgrows it — instead of one per token, and a short context
// never reads a long cache. This relies on what the attention mask means in these exports (a
// masked key contributes nothing); a model without an `attention_mask` input, or a run asked for
// exact lengths, is fed the cache at its exact length instead. On an accelerator the cache is written
// in place and stays on the device (loadDecoder).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "runtime/session.h"

namespace tessel {

/// The decoder's inputs and outputs, found by the names the exporters give them.
struct DecoderIo {
  bool mask = false, positions = false;
  // The presents are the pasts written in place at input `cache_position` (passes/kv_cache_in_place.h):
  // each run returns the whole buffer, and the cache stays where the model runs.
  bool inPlace = false;
  std::vector<std::string> past, present;  // past_key_values.N.{key,value} and their presents, in order.
  std::vector<int64_t> kvHeads, headDim;   // Per past input.
  DType pastType = DType::Float32;
  int64_t vocabulary = 0;                  // The logits' last dim; 0 where the graph does not fix it.
};

/// Fails, naming `path` and the input, on a graph that is not such a decoder.
Expected<DecoderIo> findDecoderIo(const Graph &graph, const std::string &path);

/// A session for generating with the decoder at `path` (an ONNX model or an artifact) on `target`.
/// With `cacheOnDevice`, where the target keeps values on the device between runs (an accelerator)
/// and the cache is padded (the model has an `attention_mask` input), the model's presents are
/// written in place into its pasts first, so the cache stays on the device: each step writes only
/// its new positions and no key or value crosses the host link. (Exact lengths need the cache on
/// the host.) On every target the LM head then reads only the last position
/// (passes/last_position_logits.h): each run returns [batch, 1, vocabulary] logits.
Expected<std::unique_ptr<Session>> loadDecoder(const std::string &path, const std::string &target,
                                               const SessionOptions &options, bool cacheOnDevice);

struct GenerationOptions {
  int64_t maxNewTokens = 64;
  int64_t topK = 0;            // 0: greedy (argmax); else a draw among the k most likely.
  double temperature = 1.0;
  uint64_t seed = 0;
  bool exactCache = false;     // Feed the cache at its exact length each step (one shape per token).
  int64_t minCapacity = 32;    // The smallest cache buffer, in positions.
  // Before the timed runs, run each shape they will use once on zeros, so that planning (cpu) or
  // compiling (nc) a shape is not in the step times (as a serving session is set up before its
  // first request). Not with exact lengths, where every step is a new shape.
  bool warmUp = true;
  // On a simulated target: time the runs without computing them (a model too large to simulate
  // whole); every step feeds token 0, so no ids are generated.
  bool timingOnly = false;
  std::function<void(int64_t tokens)> onToken;  // Called after each step with the tokens so far.
};

struct GenerationResult {
  std::vector<std::vector<int64_t>> ids;  // Per batch row, the new tokens.
  std::vector<double> stepMs;             // Host time of each run: the prefill, then each decode step.
  std::vector<double> simulatedUs;        // Per run, on a simulated target: device + transfers + host.
  std::vector<RunFigures> simulated;      // Per run, on a simulated target: each part.
  std::vector<int64_t> capacities;        // The cache capacities the decode runs used, in order of first use.
  double warmUpMs = 0;                    // Host time of the warm-up runs (GenerationOptions::warmUp).
  int64_t warmUpShapes = 0;
};

/// Prefill `prompt` (int64 [batch, length]) then decode `options.maxNewTokens` tokens on `session`.
Expected<GenerationResult> generate(Session &session, const DecoderIo &io, const Tensor &prompt,
                                    const GenerationOptions &options);

}  // namespace tessel
