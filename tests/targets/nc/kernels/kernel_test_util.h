// Helpers of the kernel tests: the bundled profiles, and running one library kernel at one shape,
// dtype and set of options with the expectations every kernel test shares (it builds, compiles and
// simulates, has no data race, and matches its reference within tolerance).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "targets/nc/kernels/registry.h"
#include "targets/nc/kernels/runner.h"
#include "targets/nc/machine/profile.h"

namespace tessel::nc::kernels::testing {

/// A bundled profile, loaded once.
inline const MachineProfile &profileNamed(const std::string &name) {
  static std::map<std::string, MachineProfile> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    auto profile = loadProfile(name);
    EXPECT_TRUE(profile.ok()) << profile.diag().str();
    it = cache.emplace(name, profile.ok() ? *profile : MachineProfile{}).first;
  }
  return it->second;
}

/// The profiles every kernel runs on.
inline const std::vector<std::string> kProfiles = {"nc-v2", "nc-v3"};

/// Rows x columns the streaming kernels are checked at: one row, one column, aligned tiles, one past
/// a tile, several ragged tiles.
struct Shape {
  int64_t rows, cols;
};
inline const std::vector<Shape> kShapes = {{1, 1},     {1, 513},   {128, 64}, {128, 512}, {130, 513},
                                           {300, 2000}, {300, 1},  {130, 64}};

/// "add R=130,C=513 bf16 on nc-v2 broadcast=row": what a failure message names.
inline std::string describe(const std::string &kernel, const KernelParams &params, const std::string &profile) {
  std::string text = kernel;
  for (const auto &[name, size] : params.dims) text += " " + name + "=" + std::to_string(size);
  text += " " + std::string(dtypeName(params.dtype)) + " on " + profile;
  for (const auto &[key, value] : params.options) text += " " + key + "=" + value;
  if (!params.variant.empty()) text += " variant " + params.variant;
  return text;
}

/// Runs library kernel `name` and expects it to pass its check without races; returns the result
/// (or nothing when it could not run).
inline std::optional<KernelRunResult> expectKernelPasses(const std::string &name, std::map<std::string, int64_t> dims,
                                                         DType dtype, const std::string &profile,
                                                         std::map<std::string, std::string> options = {},
                                                         const std::string &variant = "") {
  const KernelDef *kernel = findKernel(name);
  EXPECT_NE(kernel, nullptr) << name;
  if (!kernel) return std::nullopt;
  KernelParams params{std::move(dims), dtype, std::move(options), variant};
  std::string what = describe(name, params, profile);
  auto result = runKernel(*kernel, params, profileNamed(profile));
  EXPECT_TRUE(result.ok()) << what << ": " << result.diag().str();
  if (!result.ok()) return std::nullopt;
  EXPECT_TRUE(result->simulation.races.empty())
      << what << ": " << result->simulation.races.size() << " race(s); first: " << result->simulation.races[0].message;
  EXPECT_TRUE(result->checked) << what;
  EXPECT_TRUE(result->passed) << what << ": max error / tolerance " << result->maxErrorRatio << " at "
                              << result->worstElement;
  return std::move(result).value();
}

/// Runs `name` at every shape of kShapes on both profiles, bf16 and f32 alternating by shape.
inline void expectKernelPassesAtShapes(const std::string &name, const std::map<std::string, std::string> &options = {}) {
  for (const std::string &profile : kProfiles) {
    for (size_t i = 0; i < kShapes.size(); ++i) {
      DType dtype = (i + (profile == "nc-v3" ? 1 : 0)) % 2 ? DType::F32 : DType::BF16;
      expectKernelPasses(name, {{"R", kShapes[i].rows}, {"C", kShapes[i].cols}}, dtype, profile, options);
    }
  }
}

}  // namespace tessel::nc::kernels::testing
