// The kernel library table and the parsing of --shape / --dtype / --option texts.
#include <gtest/gtest.h>

#include <set>

#include "targets/nc/kernels/registry.h"

namespace tessel::nc::kernels {
namespace {

TEST(KernelRegistry, EveryKernelIsCompleteAndUnique) {
  std::set<std::string> names;
  for (const KernelDef &kernel : kernelLibrary()) {
    EXPECT_TRUE(names.insert(kernel.name).second) << kernel.name << " registered twice";
    EXPECT_FALSE(kernel.summary.empty()) << kernel.name;
    EXPECT_FALSE(kernel.dimNames.empty()) << kernel.name;
    EXPECT_FALSE(kernel.dtypes.empty()) << kernel.name;
    EXPECT_NE(kernel.build, nullptr) << kernel.name;
    EXPECT_NE(kernel.reference, nullptr) << kernel.name;
    EXPECT_NE(kernel.absTolerance, nullptr) << kernel.name;
    EXPECT_NE(kernel.relTolerance, nullptr) << kernel.name;
    EXPECT_EQ(findKernel(kernel.name), &kernel);
  }
  for (const char *name : {"add", "mul", "sub", "max", "gelu", "silu", "relu", "softmax", "layernorm", "rmsnorm",
                           "reduce_sum", "reduce_max", "transpose"})
    EXPECT_NE(findKernel(name), nullptr) << name;
  EXPECT_EQ(findKernel("no_such_kernel"), nullptr);
}

TEST(KernelRegistry, ParsesShapeDtypeAndOptions) {
  const KernelDef &add = *findKernel("add");
  auto params = parseKernelParams(add, "R=130, C=513", "f32", {"broadcast=row", "note=a=b"});
  ASSERT_TRUE(params.ok()) << params.diag().str();
  EXPECT_EQ(params->dim("R"), 130);
  EXPECT_EQ(params->dim("C"), 513);
  EXPECT_EQ(params->dtype, DType::F32);
  EXPECT_EQ(params->option("broadcast"), "row");
  EXPECT_EQ(params->option("note"), "a=b");
  EXPECT_EQ(params->option("absent", "fallback"), "fallback");
  EXPECT_EQ(formatDims(add, *params), "R=130,C=513");
}

TEST(KernelRegistry, DefaultsFillMissingDimsAndTheDtype) {
  const KernelDef &softmax = *findKernel("softmax");
  auto params = parseKernelParams(softmax, "C=64", "", {});
  ASSERT_TRUE(params.ok()) << params.diag().str();
  EXPECT_EQ(params->dim("R"), softmax.defaultDims.at("R"));
  EXPECT_EQ(params->dim("C"), 64);
  EXPECT_EQ(params->dtype, softmax.dtypes.front());
}

/// The message of parsing `shape`/`dtype`/`options` for `kernel`, which must fail.
std::string parseError(const KernelDef &kernel, const std::string &shape, const std::string &dtype,
                       const std::vector<std::string> &options = {}) {
  auto params = parseKernelParams(kernel, shape, dtype, options);
  EXPECT_FALSE(params.ok()) << shape << " " << dtype;
  return params.ok() ? "" : params.diag().message;
}

TEST(KernelRegistry, ParseErrorsNameTheKernelAndTheText) {
  const KernelDef &add = *findKernel("add");
  EXPECT_EQ(parseError(add, "R=4,Q=8", ""), "kernel 'add': unknown dim 'Q' in --shape; its dims are R, C");
  EXPECT_EQ(parseError(add, "R=4,R=8", ""), "kernel 'add': dim 'R' given twice in --shape");
  EXPECT_EQ(parseError(add, "R=abc", ""), "kernel 'add': dim R=abc is not a positive integer");
  EXPECT_EQ(parseError(add, "R=0", ""), "kernel 'add': dim R=0 is not a positive integer");
  EXPECT_EQ(parseError(add, "R=-3", ""), "kernel 'add': dim R=-3 is not a positive integer");
  EXPECT_EQ(parseError(add, "R=4x", ""), "kernel 'add': dim R=4x is not a positive integer");
  EXPECT_EQ(parseError(add, "R", ""), "kernel 'add': --shape entry 'R' is not NAME=SIZE");
  EXPECT_EQ(parseError(add, "R=4", "i32"), "kernel 'add': dtype 'i32' is not accepted; use one of bf16, f32");
  EXPECT_EQ(parseError(add, "R=4", "float99"), "kernel 'add': dtype 'float99' is not accepted; use one of bf16, f32");
  EXPECT_EQ(parseError(add, "R=4", "", {"broadcast"}), "kernel 'add': --option 'broadcast' is not KEY=VALUE");
}

TEST(KernelRegistry, VariantsDefaultToTheFirstAndUnknownOnesAreErrors) {
  const KernelDef &matmul = *findKernel("matmul");
  ASSERT_FALSE(matmul.variants.empty());
  auto byDefault = parseKernelParams(matmul, "", "", {});
  ASSERT_TRUE(byDefault.ok()) << byDefault.diag().str();
  EXPECT_EQ(byDefault->variant, matmul.variants.front());
  auto tiled = parseKernelParams(matmul, "", "", {}, "tiled");
  ASSERT_TRUE(tiled.ok()) << tiled.diag().str();
  EXPECT_EQ(tiled->variant, "tiled");
  auto unknown = parseKernelParams(matmul, "", "", {}, "fastest");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.diag().message.find("unknown variant 'fastest'; use one of blocked, tiled"), std::string::npos)
      << unknown.diag().message;
  auto none = parseKernelParams(*findKernel("softmax"), "", "", {}, "v1");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.diag().message.find("kernel 'softmax' has no variants"), std::string::npos) << none.diag().message;
}

TEST(KernelRegistry, MissingDimWithoutDefault) {
  KernelDef kernel = *findKernel("add");
  kernel.defaultDims.clear();
  EXPECT_EQ(parseError(kernel, "R=4", ""), "kernel 'add': missing dim 'C' in --shape (its dims are R, C)");
}

}  // namespace
}  // namespace tessel::nc::kernels
