// SGEMM against a naive double-precision reference, for every gemm.def variant the host can run
// (the others are skipped, not failed). A bf16 variant's reference takes the products of A and B
// rounded to bf16 as the variant does (same casts, so the float32 bound below still holds and a
// variant that skipped or misplaced the rounding fails by about 2^-9 of each product): M, N and K below, at and above each tile edge, with row
// strides larger than the rows, every epilogue combination, the pre-packed A and B paths, and
// split over a thread pool. Sizes are small enough for the whole file to run in seconds under ASan.
//
// Tolerance: |c - ref| <= (K + 4) * FLT_EPSILON * (sum_k |a_ik||b_kj| + |bias| + |residual| +
// |c0_ij|), the worst-case bound for a float sum of those terms (with room to spare); a lost or
// doubled term is off by about 1/K of that sum, orders of magnitude above it. Smooth activations
// add their own float rounding (1e-5 relative).
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "support/float_types.h"
#include "support/thread_pool.h"
#include "targets/cpu/kernels/gemm.h"

namespace tessel::cpu {
namespace {

constexpr float kSentinel = -12345.0f;  // Fills padding that sgemm must not touch.
constexpr int64_t kLdaPad = 3;          // lda = K + kLdaPad, and so on: strides past the rows.
constexpr int64_t kLdbPad = 5;
constexpr int64_t kLdcPad = 7;
constexpr int64_t kLdrPad = 2;

/// The epilogue combinations every shape cycles through.
enum class EpilogueMode {
  None,
  Bias,
  BiasRelu,
  AccumulateBiasRelu,
  RowBiasResidualClip,
  ResidualTanh,
  AccumulateRowBiasGelu,
  BiasResidualLeakyRelu,
};
constexpr int kEpilogueModes = 8;

/// Which entry point runs the product.
enum class Path { Unpacked, PackedB, PackedA, Indirect };

// K segments of the indirect path: blocks then break at places no cache blocking would pick.
constexpr int64_t kIndirectSegment = 7;

/// Indirect A over a row-major matrix: row pointers straight into it.
struct RowMajorRows {
  const float *a;
  int64_t lda;

  static void rows(const void *context, int64_t row0, int64_t count, int64_t k0, const float **out) {
    const auto *self = static_cast<const RowMajorRows *>(context);
    for (int64_t i = 0; i < count; ++i) out[i] = self->a + (row0 + i) * self->lda + k0;
  }
};

std::vector<float> randomFloats(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(size_t(std::max<int64_t>(count, 0)));
  for (float &x : v) x = dist(rng);
  return v;
}

/// Inputs and the expected result of one shape and epilogue.
struct Problem {
  GemmShape s;
  int64_t lda, ldb, ldc, ldr;
  std::vector<float> a, b, bias, residual, c0;
  GemmEpilogue epilogue;
  std::vector<double> ref, bound;

  /// `operands`: the type the variant takes its products in (the reference rounds to it).
  Problem(const GemmShape &shape, EpilogueMode mode, GemmOperands operands = GemmOperands::F32) : s(shape) {
    lda = s.k + kLdaPad, ldb = s.n + kLdbPad, ldc = s.n + kLdcPad, ldr = s.n + kLdrPad;
    const uint32_t seed = uint32_t(s.m * 7919 + s.n * 104729 + s.k * 13);
    a = randomFloats(s.m * lda, seed);
    b = randomFloats(s.k * ldb, seed + 1);
    bias = randomFloats(std::max(s.m, s.n), seed + 2);
    residual = randomFloats(s.m * ldr, seed + 3);
    c0 = randomFloats(s.m * ldc, seed + 4);
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = s.n; j < ldc; ++j) c0[size_t(i * ldc + j)] = kSentinel;
    }
    switch (mode) {
      case EpilogueMode::None: break;
      case EpilogueMode::Bias: epilogue.bias = bias.data(); break;
      case EpilogueMode::BiasRelu:
        epilogue.bias = bias.data();
        epilogue.activation.kind = ActivationKind::Relu;
        break;
      case EpilogueMode::AccumulateBiasRelu:
        epilogue.accumulate = true;
        epilogue.bias = bias.data();
        epilogue.activation.kind = ActivationKind::Relu;
        break;
      case EpilogueMode::RowBiasResidualClip:
        epilogue.bias = bias.data();
        epilogue.biasPerRow = true;
        epilogue.residual = residual.data();
        epilogue.ldr = ldr;
        epilogue.activation = {ActivationKind::Clip, -0.5f, 1.5f};
        break;
      case EpilogueMode::ResidualTanh:
        epilogue.residual = residual.data();
        epilogue.ldr = ldr;
        epilogue.activation.kind = ActivationKind::Tanh;
        break;
      case EpilogueMode::AccumulateRowBiasGelu:
        epilogue.accumulate = true;
        epilogue.bias = bias.data();
        epilogue.biasPerRow = true;
        epilogue.activation.kind = ActivationKind::Gelu;
        break;
      case EpilogueMode::BiasResidualLeakyRelu:
        epilogue.bias = bias.data();
        epilogue.residual = residual.data();
        epilogue.ldr = ldr;
        epilogue.activation = {ActivationKind::LeakyRelu, 0.1f, 0.0f};
        break;
    }
    computeReference(operands);
  }

  void computeReference(GemmOperands operands) {
    auto cast = [&](float x) { return operands == GemmOperands::Bf16 ? double(float(BFloat16(x))) : double(x); };
    ref.assign(size_t(s.m * s.n), 0.0);
    bound.assign(size_t(s.m * s.n), 0.0);
    const double tolerance = double(s.k + 4) * FLT_EPSILON;
    const ActivationKind kind = epilogue.activation.kind;
    const bool smooth = kind != ActivationKind::None && kind != ActivationKind::Relu && kind != ActivationKind::Clip &&
                        kind != ActivationKind::LeakyRelu;
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = 0; j < s.n; ++j) {
        double sum = 0.0, magnitude = 0.0;
        auto add = [&](double term) {
          sum += term;
          magnitude += std::fabs(term);
        };
        for (int64_t p = 0; p < s.k; ++p) add(cast(a[size_t(i * lda + p)]) * cast(b[size_t(p * ldb + j)]));
        if (epilogue.accumulate) add(c0[size_t(i * ldc + j)]);
        if (epilogue.bias != nullptr) add(bias[size_t(epilogue.biasPerRow ? i : j)]);
        if (epilogue.residual != nullptr) add(residual[size_t(i * ldr + j)]);
        const double want = epilogue.activation.apply(sum);
        ref[size_t(i * s.n + j)] = want;
        // Every activation here has slope at most about 1.1.
        double b = 1.2 * tolerance * magnitude + FLT_MIN;
        if (smooth) b += 1e-5 * (1.0 + std::fabs(want));
        bound[size_t(i * s.n + j)] = b;
      }
    }
  }

  /// Checks c (ldc-strided) against the reference and the padding sentinels.
  void expectMatches(const std::vector<float> &c) const {
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

  /// Runs the product through `path`, optionally on `pool`, and returns C.
  std::vector<float> run(const GemmKernel &kernel, Path path, ThreadPool *pool = nullptr,
                         std::span<std::byte> scratch = {}) {
    std::vector<float> c = c0;
    GemmEpilogue e = epilogue;
    switch (path) {
      case Path::Unpacked:
        sgemm(kernel, s, a.data(), lda, b.data(), ldb, c.data(), ldc, e, pool, scratch);
        break;
      case Path::PackedB: {
        const PackedB packed = packB(kernel, s.k, s.n, b.data(), ldb);
        sgemmPacked(s, a.data(), lda, packed, c.data(), ldc, e, pool, scratch);
        break;
      }
      case Path::PackedA: {
        const PackedA packed = packA(kernel, s.m, s.k, a.data(), lda);
        sgemmPackedA(s, packed, b.data(), ldb, c.data(), ldc, e, pool, scratch);
        break;
      }
      case Path::Indirect: {
        const PackedB packed = packB(kernel, s.k, s.n, b.data(), ldb);
        const RowMajorRows rows{a.data(), lda};
        sgemmIndirect(s, IndirectA{&rows, &RowMajorRows::rows, kIndirectSegment * kernel.kPack}, packed, c.data(),
                      ldc, e, pool, scratch);
        break;
      }
    }
    return c;
  }
};

const char *pathName(Path path) {
  switch (path) {
    case Path::Unpacked: return "sgemm";
    case Path::PackedB: return "sgemmPacked";
    case Path::PackedA: return "sgemmPackedA";
    case Path::Indirect: return "sgemmIndirect";
  }
  return "?";
}

/// The entry points `kernel` takes (bf16 variants take A unpacked).
std::vector<Path> pathsOf(const GemmKernel &kernel) {
  if (kernel.kPack > 1) return {Path::Unpacked, Path::PackedB, Path::Indirect};
  return {Path::Unpacked, Path::PackedB, Path::PackedA, Path::Indirect};
}

/// Runs one shape through every entry point with `kernel` and checks each against the
/// double-precision reference.
void checkShape(const GemmKernel &kernel, const GemmShape &s, EpilogueMode mode) {
  SCOPED_TRACE(testing::Message() << kernel.name << " M=" << s.m << " N=" << s.n << " K=" << s.k
                                  << " epilogue=" << int(mode));
  Problem problem(s, mode, kernel.operands);
  for (const Path path : pathsOf(kernel)) {
    SCOPED_TRACE(pathName(path));
    problem.expectMatches(problem.run(kernel, path));
  }
}

/// Caller scratch of exactly the bytes sgemmScratchBytes asks for on `threads` threads, 64-byte
/// aligned as the entry points require.
class ExactScratch {
 public:
  ExactScratch(const GemmKernel &kernel, const GemmShape &s, int threads, Path path)
      : bytes_(sgemmScratchBytes(kernel, s, threads,
                                 {path == Path::PackedA, path == Path::PackedB || path == Path::Indirect})),
        storage_(bytes_ + 64) {}
  std::span<std::byte> span() {
    const size_t offset = (64 - reinterpret_cast<uintptr_t>(storage_.data()) % 64) % 64;
    return {storage_.data() + offset, bytes_};
  }

 private:
  size_t bytes_;
  std::vector<std::byte> storage_;
};

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

// Every K up to two vectors of floats: a bf16 variant converts A's rows to pairs a vector run at a
// time and the rest masked, so each length of that rest (odd ones end in a half-empty pair) runs.
TEST_P(GemmVariantTest, EveryShortDepth) {
  for (int64_t k = 1; k <= 33; ++k) {
    checkShape(kernel(), {kernel().mr + 1, kernel().nr + 1, k}, EpilogueMode(k % kEpilogueModes));
    if (HasFailure()) return;
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
  checkShape(kernel(), {700, 70, 600}, EpilogueMode::RowBiasResidualClip);
  // Every kind of block at once: a bf16 variant then converts all of A to pairs up front and reads
  // each K block of them from there.
  checkShape(kernel(), {200, 700, 2100}, EpilogueMode::BiasRelu);
}

// The split over a pool's threads gives the same bits as one thread (every task sums K in the
// same blocks), on every path, with and without caller scratch, for wide, tall and tiny shapes.
TEST_P(GemmVariantTest, ThreadedMatchesSingleThreaded) {
  ThreadPool pool(3);
  const GemmShape shapes[] = {{1, 300, 70}, {5, 1000, 33}, {128, 200, 300}, {333, 7, 90}, {97, 250, 600}};
  int index = 0;
  for (const GemmShape &s : shapes) {
    for (const Path path : pathsOf(kernel())) {
      const EpilogueMode mode = EpilogueMode(index++ % kEpilogueModes);
      SCOPED_TRACE(testing::Message() << pathName(path) << " M=" << s.m << " N=" << s.n << " K=" << s.k
                                      << " epilogue=" << int(mode));
      Problem problem(s, mode, kernel().operands);
      const std::vector<float> single = problem.run(kernel(), path);
      problem.expectMatches(single);
      EXPECT_EQ(problem.run(kernel(), path, &pool), single);
      ExactScratch scratch(kernel(), s, pool.size(), path);
      const std::span<std::byte> aligned = scratch.span();
      EXPECT_EQ(problem.run(kernel(), path, &pool, aligned), single);
      // Too little scratch for three tasks: fewer tasks, same bits.
      EXPECT_EQ(problem.run(kernel(), path, &pool, aligned.first(aligned.size() / 2)), single);
    }
  }
}

// At most one panel of rows (a decode step's M = 1) K is blocked only past 8192, so each B panel
// streams whole: long and odd K, one row and a full panel, on every path, split over threads with
// exactly the scratch sgemmScratchBytes asks for, and past 8192 so the one row also accumulates
// over K blocks. 2 mr + 1 rows split over two tasks leaves the second one row: its buffers were
// carved for the first task's blocking, which it must run with.
TEST_P(GemmVariantTest, OneRowPanelStreamsLongK) {
  ThreadPool pool(2);
  const int64_t mr = kernel().mr;
  const GemmShape shapes[] = {{1, 100, 3001}, {mr, 70, 3001}, {1, 40, 9001}, {2, 33, 8200}, {2 * mr + 1, 16, 3001}};
  int index = 0;
  for (const GemmShape &s : shapes) {
    for (const Path path : pathsOf(kernel())) {
      const EpilogueMode mode = EpilogueMode(index++ % kEpilogueModes);
      SCOPED_TRACE(testing::Message() << pathName(path) << " M=" << s.m << " N=" << s.n << " K=" << s.k
                                      << " epilogue=" << int(mode));
      Problem problem(s, mode, kernel().operands);
      ExactScratch scratch(kernel(), s, pool.size(), path);
      problem.expectMatches(problem.run(kernel(), path, &pool, scratch.span()));
      problem.expectMatches(problem.run(kernel(), path));
    }
  }
}

// Packing from transposed storage (Gemm's transA / transB) equals packing the transpose.
TEST_P(GemmVariantTest, PacksTransposedOperands) {
  const GemmShape s{kernel().mr * 2 + 1, kernel().nr + 3, 19};
  Problem problem(s, EpilogueMode::Bias, kernel().operands);
  // a^T is k x m (row stride m + 1), b^T is n x k (row stride k + 2).
  const int64_t ldat = s.m + 1, ldbt = s.k + 2;
  std::vector<float> at(size_t(s.k * ldat)), bt(size_t(s.n * ldbt));
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t p = 0; p < s.k; ++p) at[size_t(p * ldat + i)] = problem.a[size_t(i * problem.lda + p)];
  }
  for (int64_t p = 0; p < s.k; ++p) {
    for (int64_t j = 0; j < s.n; ++j) bt[size_t(j * ldbt + p)] = problem.b[size_t(p * problem.ldb + j)];
  }
  const PackedB pb = packB(kernel(), s.k, s.n, bt.data(), ldbt, /*transposed=*/true);
  std::vector<float> c = problem.c0;
  sgemmPacked(s, problem.a.data(), problem.lda, pb, c.data(), problem.ldc, problem.epilogue);
  problem.expectMatches(c);
  EXPECT_GE(packedBSize(kernel(), s.k, s.n), size_t(pb.size()) * sizeof(float));
  if (kernel().kPack > 1) return;  // A is never packed for a bf16 variant.
  const PackedA pa = packA(kernel(), s.m, s.k, at.data(), ldat, /*transposed=*/true);
  c = problem.c0;
  sgemmPackedA(s, pa, problem.b.data(), problem.ldb, c.data(), problem.ldc, problem.epilogue);
  problem.expectMatches(c);
  EXPECT_EQ(packedASize(kernel(), s.m, s.k) % 64, 0u);
}

// A residual that is C itself (same pointer and stride) reads as C += A*B.
TEST_P(GemmVariantTest, ResidualAliasingCIsAccumulate) {
  Problem problem({kernel().mr + 2, kernel().nr + 5, 1100}, EpilogueMode::AccumulateBiasRelu, kernel().operands);
  std::vector<float> c = problem.c0;
  GemmEpilogue e = problem.epilogue;
  e.accumulate = false;
  e.residual = c.data();
  e.ldr = problem.ldc;
  sgemm(kernel(), problem.s, problem.a.data(), problem.lda, problem.b.data(), problem.ldb, c.data(), problem.ldc, e);
  problem.expectMatches(c);
}

// K = 0: the product is empty, so C is the epilogue of zero (or of C when accumulating).
TEST_P(GemmVariantTest, EmptyK) {
  for (int mode = 0; mode < kEpilogueModes; ++mode) checkShape(kernel(), {5, 9, 0}, EpilogueMode(mode));
}

std::string variantName(const testing::TestParamInfo<size_t> &info) { return gemmKernels()[info.param].name; }

INSTANTIATE_TEST_SUITE_P(AllVariants, GemmVariantTest, testing::Range(size_t(0), gemmKernels().size()),
                         variantName);

TEST(GemmDispatchTest, SelectsFirstRunnableRowOfEachType) {
  for (const GemmOperands operands : {GemmOperands::F32, GemmOperands::Bf16}) {
    const GemmKernel *first = nullptr;
    for (const GemmKernel &kernel : gemmKernels()) {
      if (kernel.operands == operands && canRun(kernel)) {
        first = &kernel;
        break;
      }
    }
    EXPECT_EQ(selectedGemmKernel(operands), first) << operandsName(operands);
  }
  EXPECT_EQ(&selectedGemmKernel(), selectedGemmKernel(GemmOperands::F32));
  EXPECT_STREQ(gemmKernelName(), selectedGemmKernel().name);
  // The bf16 rows need a vector ISA: vdpbf16ps, or AVX2 to widen the pairs; the AVX512_BF16 row first.
  const GemmKernel *firstBf16 = nullptr;
  for (const GemmKernel &kernel : gemmKernels()) {
    if (kernel.operands != GemmOperands::Bf16) continue;
    EXPECT_TRUE(hasAll(kernel.isa, Isa::Avx512Bf16) || hasAll(kernel.isa, Isa::Avx2)) << kernel.name;
    if (firstBf16 == nullptr) firstBf16 = &kernel;
  }
  ASSERT_NE(firstBf16, nullptr);
  EXPECT_TRUE(hasAll(firstBf16->isa, Isa::Avx512Bf16)) << firstBf16->name;
}

TEST(GemmDispatchTest, LastF32RowRunsAnywhere) {
  const GemmKernel *last = nullptr;
  for (const GemmKernel &kernel : gemmKernels()) {
    if (kernel.operands == GemmOperands::F32) last = &kernel;
  }
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->isa, Isa::None);
  EXPECT_TRUE(canRun(*last));
}

// An indirect A whose segments split a pair cannot feed a bf16 variant: a clear error, not a wrong
// product.
TEST(GemmDispatchTest, Bf16RejectsOddIndirectSegments) {
  const GemmKernel *bf16 = selectedGemmKernel(GemmOperands::Bf16);
  if (bf16 == nullptr) GTEST_SKIP() << "no bf16 variant on this host";
  const GemmShape s{2, 3, 6};
  const std::vector<float> a = randomFloats(s.m * s.k, 1), b = randomFloats(s.k * s.n, 2);
  std::vector<float> c(size_t(s.m * s.n));
  const PackedB packed = packB(*bf16, s.k, s.n, b.data(), s.n);
  const RowMajorRows rows{a.data(), s.k};
  EXPECT_DEATH(sgemmIndirect(s, IndirectA{&rows, &RowMajorRows::rows, 3}, packed, c.data(), s.n),
               "whole pairs");
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
  EXPECT_FALSE(hasAll(cap, Isa::Avx512Bf16));
  ASSERT_TRUE(parseIsaCap("avx512_bf16", &cap));
  EXPECT_TRUE(hasAll(cap, Isa::Avx512 | Isa::Avx512Bf16));
  EXPECT_FALSE(hasAll(cap, Isa::Avx512Vnni));
  ASSERT_TRUE(parseIsaCap("avx512_vnni", &cap));
  EXPECT_TRUE(hasAll(cap, Isa::Avx512 | Isa::Avx512Bf16 | Isa::Avx512Vnni));
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
  const PackedA packedA = packA(s.m, s.k, a.data(), s.k);
  EXPECT_EQ(packedA.kernel, &selectedGemmKernel());
  std::vector<float> c3(size_t(s.m * s.n));
  sgemmPackedA(s, packedA, b.data(), s.n, c3.data(), s.n);
  EXPECT_EQ(c1, c3);
}

}  // namespace
}  // namespace tessel::cpu
