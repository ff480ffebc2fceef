// SGEMM against a naive double-precision reference, for every gemm.def variant the host can run
// (the others are skipped, not failed): M, N and K below, at and above each tile edge, with row
// strides larger than the rows, every epilogue, and the pre-packed-B path. Sizes are small enough
// for the whole file to run in seconds under ASan.
//
// Tolerance: |c - ref| <= (K + 2) * FLT_EPSILON * (sum_k |a_ik||b_kj| + |bias_j| + |c0_ij|), the
// worst-case bound for a K-term float sum (with a factor of two to spare); a lost or doubled term
// is off by about 1/K of that sum, orders of magnitude above it.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "targets/cpu/kernels/gemm.h"

namespace tessel::cpu {
namespace {

constexpr float kSentinel = -12345.0f;  // Fills padding that sgemm must not touch.
constexpr int64_t kLdaPad = 3;          // lda = K + kLdaPad, and so on: strides past the rows.
constexpr int64_t kLdbPad = 5;
constexpr int64_t kLdcPad = 7;

enum class EpilogueMode { None, Bias, BiasRelu, AccumulateBiasRelu };
constexpr int kEpilogueModes = 4;

std::vector<float> randomFloats(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(size_t(std::max<int64_t>(count, 0)));
  for (float &x : v) x = dist(rng);
  return v;
}

/// Runs one shape through sgemm and sgemmPacked with `kernel` and checks both against the
/// double-precision reference; returns the number of mismatches (reported through gtest).
void checkShape(const GemmKernel &kernel, const GemmShape &s, EpilogueMode mode) {
  SCOPED_TRACE(testing::Message() << kernel.name << " M=" << s.m << " N=" << s.n << " K=" << s.k
                                  << " epilogue=" << int(mode));
  const int64_t lda = s.k + kLdaPad, ldb = s.n + kLdbPad, ldc = s.n + kLdcPad;
  const uint32_t seed = uint32_t(s.m * 7919 + s.n * 104729 + s.k * 13);
  const std::vector<float> a = randomFloats(s.m * lda, seed);
  const std::vector<float> b = randomFloats(s.k * ldb, seed + 1);
  const std::vector<float> bias = randomFloats(s.n, seed + 2);
  std::vector<float> c0 = randomFloats(s.m * ldc, seed + 3);
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = s.n; j < ldc; ++j) c0[size_t(i * ldc + j)] = kSentinel;
  }

  GemmEpilogue epilogue;
  epilogue.bias = mode == EpilogueMode::None ? nullptr : bias.data();
  epilogue.relu = mode == EpilogueMode::BiasRelu || mode == EpilogueMode::AccumulateBiasRelu;
  epilogue.accumulate = mode == EpilogueMode::AccumulateBiasRelu;

  std::vector<double> ref(size_t(s.m * s.n));
  std::vector<double> bound(size_t(s.m * s.n));
  const double tolerance = double(s.k + 2) * FLT_EPSILON;
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      double sum = 0.0, magnitude = 0.0;
      for (int64_t p = 0; p < s.k; ++p) {
        const double term = double(a[size_t(i * lda + p)]) * double(b[size_t(p * ldb + j)]);
        sum += term;
        magnitude += std::fabs(term);
      }
      if (epilogue.accumulate) {
        sum += c0[size_t(i * ldc + j)];
        magnitude += std::fabs(c0[size_t(i * ldc + j)]);
      }
      if (epilogue.bias != nullptr) {
        sum += bias[size_t(j)];
        magnitude += std::fabs(bias[size_t(j)]);
      }
      if (epilogue.relu) sum = std::max(sum, 0.0);
      ref[size_t(i * s.n + j)] = sum;
      bound[size_t(i * s.n + j)] = tolerance * magnitude + FLT_MIN;
    }
  }

  const PackedB packed = packB(kernel, s.k, s.n, b.data(), ldb);
  for (const bool usePacked : {false, true}) {
    SCOPED_TRACE(usePacked ? "sgemmPacked" : "sgemm");
    std::vector<float> c = c0;
    if (usePacked) {
      sgemmPacked(s, a.data(), lda, packed, c.data(), ldc, epilogue);
    } else {
      sgemm(kernel, s, a.data(), lda, b.data(), ldb, c.data(), ldc, epilogue);
    }
    int failures = 0;
    for (int64_t i = 0; i < s.m && failures < 5; ++i) {
      for (int64_t j = 0; j < ldc && failures < 5; ++j) {
        const float got = c[size_t(i * ldc + j)];
        if (j >= s.n) {
          if (got != kSentinel) ++failures;
          EXPECT_EQ(got, kSentinel) << "padding written at row " << i << " col " << j;
          continue;
        }
        const double want = ref[size_t(i * s.n + j)];
        const double err = std::fabs(double(got) - want);
        if (!(err <= bound[size_t(i * s.n + j)])) {
          ++failures;
          ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got << ", want " << want << " (bound "
                        << bound[size_t(i * s.n + j)] << ")";
        }
      }
    }
  }
}

class GemmVariantTest : public testing::TestWithParam<size_t> {
 protected:
  const GemmKernel &kernel() const { return gemmKernels()[GetParam()]; }
  void SetUp() override {
    if (!canRun(kernel())) GTEST_SKIP() << kernel().name << " needs ISA this host lacks";
  }
};

// M, N and K each run through {1, mr-1, mr, mr+1, 2*nr+3, 100, 257} (the tile edges of this
// variant), all combinations, cycling through the epilogues.
TEST_P(GemmVariantTest, RaggedShapesAroundTileEdges) {
  const int64_t mr = kernel().mr, nr = kernel().nr;
  const std::vector<int64_t> sizes = {1, mr - 1, mr, mr + 1, 2 * nr + 3, 100, 257};
  int index = 0;
  for (int64_t m : sizes) {
    for (int64_t n : sizes) {
      for (int64_t k : sizes) {
        checkShape(kernel(), {m, n, k}, EpilogueMode(index++ % kEpilogueModes));
        if (HasFailure()) return;
      }
    }
  }
}

// Shapes that cross the cache blocks: several K blocks (so later blocks accumulate and only the
// last applies the epilogue), several MC blocks of A, several NC blocks of B.
TEST_P(GemmVariantTest, CrossesCacheBlocks) {
  for (int mode = 0; mode < kEpilogueModes; ++mode) {
    checkShape(kernel(), {kernel().mr + 1, kernel().nr + 1, 1100}, EpilogueMode(mode));
  }
  checkShape(kernel(), {600, 40, 1100}, EpilogueMode::BiasRelu);
  checkShape(kernel(), {3, 4200, 300}, EpilogueMode::AccumulateBiasRelu);
}

// K = 0: the product is empty, so C is the epilogue of zero (or of C when accumulating).
TEST_P(GemmVariantTest, EmptyK) {
  for (int mode = 0; mode < kEpilogueModes; ++mode) checkShape(kernel(), {5, 9, 0}, EpilogueMode(mode));
}

std::string variantName(const testing::TestParamInfo<size_t> &info) { return gemmKernels()[info.param].name; }

INSTANTIATE_TEST_SUITE_P(AllVariants, GemmVariantTest, testing::Range(size_t(0), gemmKernels().size()),
                         variantName);

TEST(GemmDispatchTest, SelectsFirstRunnableRow) {
  const GemmKernel *first = nullptr;
  for (const GemmKernel &kernel : gemmKernels()) {
    if (canRun(kernel)) {
      first = &kernel;
      break;
    }
  }
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(&selectedGemmKernel(), first);
  EXPECT_STREQ(gemmKernelName(), first->name);
}

TEST(GemmDispatchTest, LastRowRunsAnywhere) {
  EXPECT_EQ(gemmKernels().back().isa, Isa::None);
  EXPECT_TRUE(canRun(gemmKernels().back()));
}

TEST(GemmDispatchTest, TilesMatchTheirVectorWidth) {
  for (const GemmKernel &kernel : gemmKernels()) {
    EXPECT_GT(kernel.mr, 1) << kernel.name;
    EXPECT_GT(kernel.nr, 0) << kernel.name;
  }
}

TEST(CpuFeaturesTest, IsaCapParsesAndCaps) {
  Isa cap = Isa::None;
  ASSERT_TRUE(parseIsaCap("avx2", &cap));
  EXPECT_EQ(cap, Isa::Avx2 | Isa::Fma);
  ASSERT_TRUE(parseIsaCap("generic", &cap));
  EXPECT_EQ(cap, Isa::None);
  ASSERT_TRUE(parseIsaCap("avx512", &cap));
  EXPECT_TRUE(hasAll(cap, Isa::Avx512 | Isa::Avx2 | Isa::Fma));
  EXPECT_FALSE(parseIsaCap("sse9", &cap));
  // The effective ISA never exceeds what the hardware has.
  EXPECT_TRUE(hasAll(detectHostIsa(), hostIsa()));
  EXPECT_EQ(isaName(Isa::None), "generic");
  EXPECT_EQ(isaName(Isa::Avx2 | Isa::Fma), "avx2+fma");
}

TEST(GemmApiTest, DefaultEntryPointsUseSelectedVariant) {
  const GemmShape s{3, 5, 4};
  std::vector<float> a = randomFloats(s.m * s.k, 1), b = randomFloats(s.k * s.n, 2);
  std::vector<float> c1(size_t(s.m * s.n)), c2(size_t(s.m * s.n));
  sgemm(s, a.data(), s.k, b.data(), s.n, c1.data(), s.n);
  const PackedB packed = packB(s.k, s.n, b.data(), s.n);
  EXPECT_EQ(packed.kernel, &selectedGemmKernel());
  sgemmPacked(s, a.data(), s.k, packed, c2.data(), s.n);
  EXPECT_EQ(c1, c2);
}

}  // namespace
}  // namespace tessel::cpu
