// Checks a model (written in text IR) on the cpu target against the reference interpreter: random
// feeds from a fixed seed, every output compared elementwise. What every cpu op test uses.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/parser.h"
#include "targets/cpu/executable.h"
#include "targets/ref/interpreter.h"

namespace tessel::cpu::testing {

struct CpuCheck {
  int optLevel = 0;               // 0 tests the lowering of the ops as written; 3 adds fusion.
  int threads = 2;
  double rtol = 1e-4;
  double atol = 1e-5;
  bool requireNoFallback = true;  // Fails when any node ran its reference kernel.
  // Integer outputs match bit for bit unless this is set: then each element within it, and at
  // most 1% of them off at all (a requantization rounding near a half step differently).
  double integerTolerance = 0.0;
  uint32_t seed = 1;
};

/// Seeded feeds for every graph input without an initializer: floats uniform in [-1, 1], integers
/// in [0, 3), u8 and i8 over their whole range, booleans alternating.
inline NamedValues randomFeeds(const Model &model, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  NamedValues feeds;
  for (const Value *input : model.graph->inputs()) {
    if (input->hasInitializer()) continue;
    auto sizes = input->type().shape().sizes();
    EXPECT_TRUE(sizes.has_value()) << "input " << input->name() << " needs a static shape";
    if (!sizes) continue;
    Tensor t(input->type().dtype(), *sizes);
    for (int64_t i = 0; i < t.numel(); ++i) {
      switch (t.dtype()) {
        case DType::Float32: t.data<float>()[i] = uniform(rng); break;
        case DType::Int64: t.data<int64_t>()[i] = static_cast<int64_t>(rng() % 3); break;
        case DType::Int32: t.data<int32_t>()[i] = static_cast<int32_t>(rng() % 3); break;
        case DType::UInt8: t.data<uint8_t>()[i] = static_cast<uint8_t>(rng() % 256); break;
        case DType::Int8: t.data<int8_t>()[i] = static_cast<int8_t>(int(rng() % 256) - 128); break;
        case DType::Bool: t.data<bool>()[i] = (i % 2) == 0; break;
        default: ADD_FAILURE() << "randomFeeds: unsupported dtype for input " << input->name(); break;
      }
    }
    feeds.emplace_back(input->name(), RuntimeValue(std::move(t)));
  }
  return feeds;
}

/// The steps of `irText` compiled at `optLevel` and run once on seeded feeds, as "OpType kernel".
inline std::vector<std::string> kernelsRun(std::string_view irText, int optLevel, int threads = 2) {
  auto parsed = parseModel(irText, "test.tsl.txt");
  EXPECT_TRUE(parsed.ok()) << parsed.diag().str();
  if (!parsed.ok()) return {};
  auto executable = compileCpu(std::move(*parsed), {optLevel, threads});
  EXPECT_TRUE(executable.ok()) << executable.diag().str();
  if (!executable.ok()) return {};
  (*executable)->setProfiling(true);
  auto run = (*executable)->run(randomFeeds((*executable)->model(), 1));
  EXPECT_TRUE(run.ok()) << run.diag().str();
  std::vector<std::string> kernels;
  for (const StepProfile &step : (*executable)->profile()) kernels.push_back(step.opType + " " + step.kernel);
  return kernels;
}

/// A text-IR constant of `sizes` with values in [-1, 1) from a fixed sequence, written exactly (so
/// weights can be constants, as lowering packs only constant operands).
inline std::string constant(const std::string &name, const std::vector<int64_t> &sizes, uint32_t seed) {
  int64_t count = 1;
  for (int64_t s : sizes) count *= s;
  uint32_t state = seed * 2654435761u + 1;
  std::vector<std::string> values;
  for (int64_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    values.push_back(fmt::format("{}", double(int32_t(state >> 8) % 2048) / 2048.0));
  }
  return fmt::format("  const %{} = dense<f32[{}]: {}>\n", name, fmt::join(sizes, ","), fmt::join(values, ", "));
}

inline void expectCpuMatchesReference(std::string_view irText, const CpuCheck &check = {}) {
  auto parsed = parseModel(irText, "test.tsl.txt");
  ASSERT_TRUE(parsed.ok()) << parsed.diag().str();
  Model &model = *parsed;
  NamedValues feeds = randomFeeds(model, check.seed);
  auto expected = ReferenceInterpreter(model).run(feeds);
  ASSERT_TRUE(expected.ok()) << expected.diag().str();

  auto reparsed = parseModel(irText, "test.tsl.txt");
  ASSERT_TRUE(reparsed.ok());
  auto executable = compileCpu(std::move(*reparsed), {check.optLevel, check.threads});
  ASSERT_TRUE(executable.ok()) << executable.diag().str();
  if (check.requireNoFallback) {
    for (const std::string &fallback : (*executable)->summary().fallbacks) ADD_FAILURE() << "fallback: " << fallback;
  }
  auto actual = (*executable)->run(feeds);
  ASSERT_TRUE(actual.ok()) << actual.diag().str();
  ASSERT_EQ(actual->size(), expected->size());
  for (size_t o = 0; o < expected->size(); ++o) {
    const Tensor &want = (*expected)[o].second.tensor();
    const Tensor &got = (*actual)[o].second.tensor();
    ASSERT_EQ(got.sizes(), want.sizes()) << "output " << o;
    ASSERT_EQ(got.dtype(), want.dtype()) << "output " << o;
    if (want.dtype() != DType::Float32 && check.integerTolerance == 0.0) {
      ASSERT_EQ(0, std::memcmp(got.rawData(), want.rawData(), want.numBytes())) << "output " << o;
      continue;
    }
    if (want.dtype() != DType::Float32) {
      int64_t off = 0;
      for (int64_t i = 0; i < want.numel(); ++i) {
        const double w = want.scalarAsDouble(i), g = got.scalarAsDouble(i);
        off += g != w;
        EXPECT_LE(std::fabs(g - w), check.integerTolerance) << "output " << o << " element " << i;
      }
      EXPECT_LE(off * 100, want.numel()) << "output " << o << ": " << off << " of " << want.numel() << " differ";
      continue;
    }
    int reported = 0;
    for (int64_t i = 0; i < want.numel(); ++i) {
      double w = want.data<float>()[i], g = got.data<float>()[i];
      bool close = std::fabs(g - w) <= check.atol + check.rtol * std::fabs(w) || (std::isnan(w) && std::isnan(g));
      if (!close && reported++ < 5) ADD_FAILURE() << "output " << o << " element " << i << ": cpu " << g << ", ref " << w;
    }
    if (reported > 0) return;
  }
}

}  // namespace tessel::cpu::testing
