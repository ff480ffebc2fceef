// Robustness of the importer against damaged files: truncated and bit-flipped copies of real
// models (a bundled CNN and ONNX test models with subgraphs) must each end in a clear Diagnostic
// or a successful load — never a crash, a hang or a sanitizer report. Deterministic seeds.
#include <gtest/gtest.h>

#include <random>

#include "frontend/onnx/importer.h"
#include "model_builder.h"

namespace tessel {
namespace {

struct Seed {
  std::string path;
  int variants;
};

std::vector<Seed> seedModels() {
  const std::string data = "/usr/share/libonnx-testdata/data/";
  return {
      {std::string(TESSEL_SOURCE_DIR) + "/examples/small_cnn.onnx", 120},
      {data + "pytorch-converted/test_ConvTranspose2d/model.onnx", 40},
      {data + "node/test_if_seq/model.onnx", 40},
      {data + "node/test_loop11/model.onnx", 40},
      {data + "node/test_scan9_sum/model.onnx", 40},
      {data + "node/test_resize_downsample_scales_linear/model.onnx", 40},
  };
}

enum class Damage { Truncate, FlipBits, OverwriteBytes };

std::string damage(const std::string &bytes, Damage kind, std::mt19937 &rng) {
  std::string out = bytes;
  std::uniform_int_distribution<size_t> position(0, bytes.size() - 1);
  switch (kind) {
    case Damage::Truncate:
      out.resize(position(rng));
      break;
    case Damage::FlipBits: {
      int flips = std::uniform_int_distribution<int>(1, 8)(rng);
      for (int i = 0; i < flips; ++i) out[position(rng)] ^= static_cast<char>(1 << (rng() % 8));
      break;
    }
    case Damage::OverwriteBytes: {
      size_t at = position(rng);
      size_t len = std::min<size_t>(bytes.size() - at, 1 + rng() % 16);
      for (size_t i = 0; i < len; ++i) out[at + i] = static_cast<char>(rng());
      break;
    }
  }
  return out;
}

TEST(FuzzImport, DamagedModelsLoadOrFailCleanly) {
  std::mt19937 rng(20261129);
  int variants = 0, loaded = 0, rejected = 0;
  for (const Seed &seed : seedModels()) {
    std::string bytes = testing::readBytes(seed.path);
    ASSERT_FALSE(bytes.empty()) << "missing seed model " << seed.path;
    for (int i = 0; i < seed.variants; ++i) {
      auto kind = static_cast<Damage>(i % 3);
      std::string damaged = damage(bytes, kind, rng);
      auto model = importOnnxBytes(damaged, seed.path);
      ++variants;
      if (model.ok()) {
        ++loaded;
        continue;
      }
      ++rejected;
      const Diagnostic &d = model.diag();
      EXPECT_FALSE(d.message.empty());
      EXPECT_EQ(d.loc.file, seed.path) << d.str();
      EXPECT_NE(d.code, ErrorCode::Internal) << d.str();
    }
  }
  EXPECT_GE(variants, 300);
  // Both outcomes must occur, or the damage is not exercising the importer.
  EXPECT_GT(loaded, 0);
  EXPECT_GT(rejected, variants / 4);
  std::printf("fuzz: %d variants, %d loaded, %d rejected with a diagnostic\n", variants, loaded, rejected);
}

}  // namespace
}  // namespace tessel
