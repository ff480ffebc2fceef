// LSTM, GRU and RNN on the cpu target against the reference interpreter, with random constant
// weights over the attribute combinations: forward, reverse and bidirectional; layout 0 and 1;
// with and without B, initial states, sequence_lens (zero lengths included), clip and LSTM
// peepholes; GRU with and without linear_before_reset; hidden sizes below and across the vector
// widths; one and two threads; weights fed at run time. Custom activations and input_forget must run the reference kernel.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "../cpu_test_util.h"

namespace tessel::cpu {
namespace {

using testing::CpuCheck;
using testing::expectCpuMatchesReference;

struct RecurrentCase {
  std::string op = "LSTM";
  std::string direction = "forward";
  int64_t layout = 0;
  int64_t seq = 4, batch = 3, input = 7, hidden = 5;
  bool bias = true, initial = true, lens = false, peepholes = false, linearBeforeReset = false;
  bool weightsFed = false;  // W, R, B and P as graph inputs (packed by each run) instead of constants.
  float clip = 0;
  std::string extra;  // More attributes, e.g. activations.
};

int64_t gatesOf(const std::string &op) { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }

std::string recurrentModel(const RecurrentCase &c) {
  const int64_t d = c.direction == "bidirectional" ? 2 : 1, g = gatesOf(c.op), h = c.hidden;
  const bool lstm = c.op == "LSTM";
  auto dims = [&](std::vector<int64_t> sizes) { return fmt::format("[{}]", fmt::join(sizes, ",")); };
  const std::string x = c.layout == 0 ? dims({c.seq, c.batch, c.input}) : dims({c.batch, c.seq, c.input});
  const std::string state = c.layout == 0 ? dims({d, c.batch, h}) : dims({c.batch, d, h});
  std::string inputs = fmt::format("%x: f32{}", x);
  if (c.lens) inputs += fmt::format(", %lens: i32[{}]", c.batch);
  if (c.initial) inputs += fmt::format(", %h0: f32{}", state) + (lstm ? fmt::format(", %c0: f32{}", state) : "");
  std::string body;
  auto weight = [&](const std::string &name, std::vector<int64_t> sizes, uint32_t seed) {
    if (c.weightsFed) {
      inputs += fmt::format(", %{}: f32{}", name, dims(sizes));
    } else {
      body += testing::constant(name, sizes, seed);
    }
  };
  weight("w", {d, g * h, c.input}, 11);
  weight("r", {d, g * h, h}, 12);
  if (c.bias) weight("b", {d, 2 * g * h}, 13);
  if (c.peepholes) weight("p", {d, 3 * h}, 14);
  std::vector<std::string> args = {"%x", "%w", "%r", c.bias ? "%b" : "_", c.lens ? "%lens" : "_",
                                   c.initial ? "%h0" : "_"};
  if (lstm) {
    args.push_back(c.initial ? "%c0" : "_");
    if (c.peepholes) args.push_back("%p");
  }
  while (args.back() == "_") args.pop_back();
  std::string attrs = fmt::format("direction = \"{}\", hidden_size = {}, layout = {}", c.direction, h, c.layout);
  if (c.clip > 0) attrs += fmt::format(", clip = {}", c.clip);
  if (c.linearBeforeReset) attrs += ", linear_before_reset = 1";
  if (!c.extra.empty()) attrs += ", " + c.extra;
  const std::string outputs = lstm ? "%y, %yh, %yc" : "%y, %yh";
  return fmt::format(
      "model opset(ai.onnx=14) ir_version=8 {{\nfunc @main({}) -> ({}) {{\n{}  {} = {}({}) {{{}}}\n  return {}\n}}\n}}\n",
      inputs, lstm ? "%y: ?, %yh: ?, %yc: ?" : "%y: ?, %yh: ?", body, outputs, c.op, fmt::join(args, ", "), attrs,
      outputs);
}

void check(const RecurrentCase &c, int threads = 2, bool requireNoFallback = true) {
  const std::string text = recurrentModel(c);
  SCOPED_TRACE(text);
  CpuCheck options;
  options.threads = threads;
  options.requireNoFallback = requireNoFallback;
  options.atol = 1e-5;
  options.rtol = 2e-4;  // float sums and the vector tanh/sigmoid against the reference's doubles.
  expectCpuMatchesReference(text, options);
}

TEST(CpuRecurrent, EveryDirectionAndLayout) {
  for (const char *op : {"LSTM", "GRU", "RNN"}) {
    for (const char *direction : {"forward", "reverse", "bidirectional"}) {
      for (int64_t layout : {0, 1}) {
        RecurrentCase c;
        c.op = op;
        c.direction = direction;
        c.layout = layout;
        check(c);
        c.hidden = 19;  // Across the 8- and 16-float vectors.
        check(c, 1);
      }
    }
  }
}

TEST(CpuRecurrent, OptionalInputsAndAttributes) {
  for (const char *op : {"LSTM", "GRU", "RNN"}) {
    for (const char *direction : {"forward", "bidirectional"}) {
      RecurrentCase c;
      c.op = op;
      c.direction = direction;
      c.bias = false;
      c.initial = false;
      check(c);
      c = RecurrentCase{};
      c.op = op;
      c.direction = direction;
      c.lens = true;  // Lengths 0, 1 and 2 of 4: Y stays zero past each one.
      check(c);
      c.layout = 1;
      check(c);
      c = RecurrentCase{};
      c.op = op;
      c.direction = direction;
      c.clip = 0.5f;
      check(c);
    }
  }
}

TEST(CpuRecurrent, LstmPeepholesAndGruLinearBeforeReset) {
  for (const char *direction : {"forward", "reverse", "bidirectional"}) {
    RecurrentCase c;
    c.direction = direction;
    c.peepholes = true;
    check(c);
    c = RecurrentCase{};
    c.op = "GRU";
    c.direction = direction;
    c.linearBeforeReset = true;
    check(c);
    c.hidden = 33;
    c.seq = 9;
    check(c);
  }
}

TEST(CpuRecurrent, WeightsFedAtRunTime) {
  for (const char *op : {"LSTM", "GRU", "RNN"}) {
    for (const char *direction : {"forward", "bidirectional"}) {
      RecurrentCase c;
      c.op = op;
      c.direction = direction;
      c.weightsFed = true;
      c.peepholes = c.op == "LSTM";
      check(c);
      c.bias = false;
      c.layout = 1;
      check(c);
    }
  }
}

TEST(CpuRecurrent, SileroSizes) {
  // silero VAD's decoder: one step of a 128-wide LSTM with its state fed back.
  RecurrentCase c;
  c.seq = 1;
  c.batch = 1;
  c.input = 128;
  c.hidden = 128;
  check(c);
  c.seq = 3;
  c.input = 64;
  c.hidden = 64;
  check(c);
}

/// The fallbacks compiling `c` reports.
std::string fallbacksOf(const RecurrentCase &c) {
  auto model = parseModel(recurrentModel(c), "rnn.tsl.txt");
  EXPECT_TRUE(model.ok()) << model.diag().str();
  auto plan = compileCpu(std::move(*model), {0, 2});
  EXPECT_TRUE(plan.ok()) << plan.diag().str();
  std::string all;
  for (const std::string &line : (*plan)->summary().fallbacks) all += line + "\n";
  return all;
}

TEST(CpuRecurrent, CustomActivationsAndInputForgetRunTheReference) {
  RecurrentCase c;
  c.op = "RNN";
  c.extra = "activations = [\"Relu\"]";
  check(c, 2, /*requireNoFallback=*/false);
  EXPECT_NE(fallbacksOf(c).find("(RNN): the cpu kernels do not cover"), std::string::npos) << fallbacksOf(c);
  c = RecurrentCase{};
  c.extra = "input_forget = 1";
  check(c, 2, /*requireNoFallback=*/false);
  EXPECT_NE(fallbacksOf(c).find("(LSTM): the cpu kernels do not cover"), std::string::npos) << fallbacksOf(c);
  // Spelling the defaults out is still the fast path.
  c = RecurrentCase{};
  c.op = "GRU";
  c.extra = "activations = [\"sigmoid\", \"tanh\"]";
  check(c);
}

}  // namespace
}  // namespace tessel::cpu
