// The tessel-domain pools (MaxPool, AveragePool, GlobalAveragePool with `channels_last`) on the cpu
// target against the reference interpreter: channels-last windows at odd channel counts, asymmetric
// pads, strides, dilations, ceil_mode, auto_pad and count_include_pad, batch 2, one and two
// threads; channels_last = 0 lowers to the NCHW kernels; the steps name the kernels they run.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "../cpu_test_util.h"
#include "targets/cpu/kernels/pool.h"

namespace tessel::cpu {
namespace {

using testing::CpuCheck;
using testing::expectCpuMatchesReference;

/// A model of one tessel pool. Y's type is written out: -O0 infers shapes through the ONNX schemas
/// only, which do not know the tessel ops.
std::string poolModel(const std::string &op, const std::string &xType, const std::string &yType,
                      const std::string &attributes) {
  return fmt::format(
      "model opset(ai.onnx=17, tessel=1) ir_version=8 {{\n"
      "func @main(%x: f32{}) -> (%y: f32{}) {{\n  %y = tessel.{}(%x) {{{}}}\n  return %y\n}}\n}}\n",
      xType, yType, op, attributes);
}

void checkPool(const std::string &op, const std::string &xType, const std::string &yType, const std::string &attributes,
               int threads = 2) {
  const std::string text = poolModel(op, xType, yType, attributes);
  SCOPED_TRACE(text);
  CpuCheck options;
  options.threads = threads;
  expectCpuMatchesReference(text, options);
}

TEST(CpuPoolNhwc, MaxPool) {
  checkPool("MaxPool", "[1,17,19,64]", "[1,9,10,64]",
            "channels_last = 1, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]");
  checkPool("MaxPool", "[2,9,11,3]", "[2,5,6,3]",
            "ceil_mode = 1, channels_last = 1, kernel_shape = [2, 2], strides = [2, 2]", 1);
  checkPool("MaxPool", "[1,10,13,17]", "[1,5,13,17]",
            "channels_last = 1, kernel_shape = [3, 3], pads = [0, 2, 1, 0], strides = [2, 1]");
  checkPool("MaxPool", "[1,12,11,33]", "[1,12,11,33]",
            "channels_last = 1, dilations = [2, 2], kernel_shape = [3, 3], pads = [2, 2, 2, 2]");
  checkPool("MaxPool", "[1,9,8,5]", "[1,5,4,5]",
            "auto_pad = \"SAME_UPPER\", channels_last = 1, kernel_shape = [3, 3], strides = [2, 2]");
}

TEST(CpuPoolNhwc, AveragePool) {
  checkPool("AveragePool", "[1,17,19,16]", "[1,9,10,16]",
            "channels_last = 1, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]");
  checkPool("AveragePool", "[1,17,19,17]", "[1,9,10,17]",
            "channels_last = 1, count_include_pad = 1, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]",
            1);
  checkPool("AveragePool", "[2,10,13,3]", "[2,6,6,3]",
            "ceil_mode = 1, channels_last = 1, count_include_pad = 1, kernel_shape = [3, 3], pads = [1, 0, 1, 0], "
            "strides = [2, 2]");
  checkPool("AveragePool", "[1,14,16,33]", "[1,5,6,33]",
            "channels_last = 1, kernel_shape = [5, 4], pads = [2, 1, 2, 3], strides = [3, 3]");
}

TEST(CpuPoolNhwc, GlobalAveragePool) {
  checkPool("GlobalAveragePool", "[2,7,7,144]", "[2,1,1,144]", "channels_last = 1");
  checkPool("GlobalAveragePool", "[1,5,6,17]", "[1,1,1,17]", "channels_last = 1", 1);
  checkPool("GlobalAveragePool", "[3,1,1,1280]", "[3,1,1,1280]", "channels_last = 1");
}

TEST(CpuPoolNhwc, ChannelsFirstTesselPoolsUseTheNchwKernels) {
  checkPool("MaxPool", "[1,4,17,19]", "[1,4,9,10]",
            "channels_last = 0, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]");
  checkPool("AveragePool", "[2,3,21]", "[2,3,7]",
            "count_include_pad = 1, kernel_shape = [4], pads = [1, 2], strides = [3]");
  checkPool("GlobalAveragePool", "[2,5,7,7]", "[2,5,1,1]", "");
}

/// The kernel name of the only step of a one-pool model.
std::string kernelOf(const std::string &op, const std::string &xType, const std::string &yType,
                     const std::string &attributes) {
  auto parsed = parseModel(poolModel(op, xType, yType, attributes), "test.tsl.txt");
  EXPECT_TRUE(parsed.ok()) << parsed.diag().str();
  if (!parsed.ok()) return "";
  auto executable = compileCpu(std::move(*parsed), {/*optLevel=*/0, /*threads=*/1});
  EXPECT_TRUE(executable.ok()) << executable.diag().str();
  if (!executable.ok()) return "";
  (*executable)->setProfiling(true);
  auto run = (*executable)->run(testing::randomFeeds((*executable)->model(), 1));
  EXPECT_TRUE(run.ok()) << run.diag().str();
  const auto profile = (*executable)->profile();
  EXPECT_EQ(profile.size(), 1u);
  return profile.empty() ? "" : profile[0].kernel;
}

TEST(CpuPoolNhwc, StepsNameTheChannelsLastKernels) {
  const std::string nhwc = poolNhwcKernelName();
  EXPECT_EQ(
      kernelOf("MaxPool", "[1,9,9,16]", "[1,4,4,16]", "channels_last = 1, kernel_shape = [3, 3], strides = [2, 2]"),
      "max_pool2d_nhwc " + nhwc);
  EXPECT_EQ(kernelOf("AveragePool", "[1,9,9,16]", "[1,7,7,16]", "channels_last = 1, kernel_shape = [3, 3]"),
            "average_pool2d_nhwc " + nhwc);
  EXPECT_EQ(kernelOf("GlobalAveragePool", "[1,7,7,16]", "[1,1,1,16]", "channels_last = 1"),
            "global_average_pool_nhwc " + nhwc);
  EXPECT_EQ(kernelOf("MaxPool", "[1,16,9,9]", "[1,16,7,7]", "channels_last = 0, kernel_shape = [3, 3]"),
            std::string("max_pool2d ") + poolKernelName());
}

}  // namespace
}  // namespace tessel::cpu
