// The stage printers read only the executable: an artifact saved and loaded again prints every stage
// (`--emit=partition|layout|memory|lowering|schedule|asm`) exactly as the compile that wrote it, and
// the layout record names the decisions lowering made for each device program.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "ir/parser.h"
#include "targets/nc/compiler/executable.h"

namespace tessel::nc::compiler {
namespace {

namespace fs = std::filesystem;

// Two device stages around a host node (Sin has no accelerator form); the second stage reads a
// transposed value, so its matmul needs a relayout.
constexpr const char *kModel = R"(model opset(ai.onnx=17) ir_version=8 {
func @main(%x: f32[16,32]) -> (%y: f32[32,4]) {
  const %w = dense<f32[16,4]: 0.5, -0.25, 0.125, 1, 0.5, -0.25, 0.125, 1, 0.5, -0.25, 0.125, 1, 0.5, -0.25, 0.125, 1, 0.5, -0.25, 0.125, 1, 0.5, -0.25, 0.125, 1, 0.5, -0.25, 0.125, 1, 0.5, -0.25, 0.125, 1, 0.5, -0.25, 0.125, 1, 0.5, -0.25, 0.125, 1, 0.5, -0.25, 0.125, 1, 0.5, -0.25, 0.125, 1, 0.5, -0.25, 0.125, 1, 0.5, -0.25, 0.125, 1, 0.5, -0.25, 0.125, 1, 0.5, -0.25, 0.125, 1>
  %r = Relu(%x) name="act"
  %s = Sin(%r) name="sine"
  %t = Transpose(%s) {perm = [1, 0]} name="flip"
  %u = Tanh(%t) name="squash"
  %y = MatMul(%u, %w) name="proj"
  return %y
}
})";

TEST(StagePrinters, AnArtifactPrintsEveryStageAsItsCompileDid) {
  auto model = parseModel(kModel, "<stage printers test>");
  ASSERT_TRUE(model.ok()) << model.diag().str();
  NcCompileOptions options;
  options.optLevel = 1;
  auto compiled = compileNc(std::move(*model), options);
  ASSERT_TRUE(compiled.ok()) << compiled.diag().str();
  ASSERT_EQ((*compiled)->programs().size(), 2u);

  const fs::path path = fs::temp_directory_path() / ("tessel-stage-printers-" + std::to_string(::getpid()) + ".tsl");
  ASSERT_TRUE((*compiled)->save(path.string()).ok());
  auto loaded = loadNcArtifact(path.string());
  fs::remove(path);
  ASSERT_TRUE(loaded.ok()) << loaded.diag().str();

  for (const char *stage : {"partition", "layout", "memory", "lowering", "schedule", "asm"}) {
    SCOPED_TRACE(stage);
    auto before = (*compiled)->emit(stage), after = (*loaded)->emit(stage);
    ASSERT_TRUE(before.ok()) << before.diag().str();
    ASSERT_TRUE(after.ok()) << after.diag().str();
    EXPECT_FALSE(before->empty());
    EXPECT_EQ(*before, *after);
  }

  auto layout = (*loaded)->emit("layout");
  ASSERT_TRUE(layout.ok());
  EXPECT_NE(layout->find("program 0: 0 relayouts\n  act (Relu)\n    load input x"), std::string::npos) << *layout;
  EXPECT_NE(layout->find("program 1: 1 relayout\n"), std::string::npos) << *layout;
  EXPECT_NE(layout->find("relayout u to axis 1 on partitions by a round trip through HBM"), std::string::npos) << *layout;

  auto unknown = (*loaded)->emit("tiles");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.diag().message.find("partition, layout, memory"), std::string::npos) << unknown.diag().message;
}

}  // namespace
}  // namespace tessel::nc::compiler
