// The int8 GEMM against an int64 loop over (A - aZero)(B - bZero), bit for bit, for every
// gemm_s8.def variant the host can run (the others are skipped, not failed): u8 and s8 on either
// side, zero points zero, scalar, per row of A (repeating over a folded batch) and per column of
// B, M, N and K below, at and above each tile edge and K block (K not a multiple of 4), row strides
// past the rows, split over a thread pool, and extreme operands at the largest K the int32 result
// allows; the output requantized to bytes against the requantization loop on C.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "support/thread_pool.h"
#include "targets/cpu/kernels/gemm_s8.h"
#include "targets/cpu/kernels/quantize.h"

namespace tessel::cpu {
namespace {

constexpr int64_t kLdaPad = 3;  // lda = K + kLdaPad, ldc = N + kLdcPad: strides past the rows.
constexpr int64_t kLdcPad = 5;
constexpr int32_t kSentinel = -777;  // Fills C's padding, which the GEMM must not touch.

/// 64-byte aligned bytes (packed B, scratch).
struct AlignedBytes {
  explicit AlignedBytes(size_t size)
      : data(static_cast<std::byte *>(std::aligned_alloc(64, std::max<size_t>((size + 63) / 64 * 64, 64)))) {}
  struct Free {
    void operator()(std::byte *p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, Free> data;
};

/// How the zero points of a problem are set.
enum class Zeros { None, Scalar, PerRowAndColumn, PerRowOnly };

struct Problem {
  GemmShape s;
  bool aSigned = false, bSigned = false;
  Zeros zeros = Zeros::Scalar;
  int64_t aZeroCount = 1;  // Per row: zero points repeat every aZeroCount rows (a folded batch).
  int64_t ldaPad = kLdaPad;
};

/// Values of one 8-bit type: [0, 255] or [-128, 127], from `rng`; `extreme` picks only the ends.
int32_t randomValue(std::mt19937 &rng, bool isSigned, bool extreme = false) {
  const int32_t lo = isSigned ? -128 : 0, hi = isSigned ? 127 : 255;
  if (extreme) return rng() % 2 ? lo : hi;
  return lo + int32_t(rng() % 256);
}

/// Runs `p` on `kernel` with random operands and zero points (only the ends of their ranges when
/// `extreme`) and compares C, padding included, with an int64 loop.
void checkProblem(const S8GemmKernel &kernel, const Problem &p, ThreadPool *pool, uint32_t seed,
                  bool extreme = false) {
  const GemmShape s = p.s;
  SCOPED_TRACE(fmt::format("{} m={} n={} k={} A {} B {} zeros {} threads {}", kernel.name, s.m, s.n, s.k,
                           p.aSigned ? "s8" : "u8", p.bSigned ? "s8" : "u8", int(p.zeros),
                           pool != nullptr ? pool->size() : 1));
  std::mt19937 rng(seed);
  const int64_t lda = s.k + p.ldaPad, ldc = s.n + kLdcPad;
  std::vector<int32_t> a(size_t(s.m * lda)), b(size_t(s.k * s.n));
  for (int32_t &v : a) v = randomValue(rng, p.aSigned, extreme);
  for (int32_t &v : b) v = randomValue(rng, p.bSigned, extreme);
  const bool perRow = p.zeros == Zeros::PerRowAndColumn || p.zeros == Zeros::PerRowOnly;
  std::vector<int32_t> aZero(size_t(perRow ? p.aZeroCount : 1), 0);
  std::vector<int32_t> bZero(size_t(s.n), 0);
  if (p.zeros != Zeros::None) {
    for (int32_t &z : aZero) z = randomValue(rng, p.aSigned, extreme);
    const int32_t scalar = randomValue(rng, p.bSigned, extreme);
    for (int32_t &z : bZero) z = p.zeros == Zeros::Scalar ? scalar : randomValue(rng, p.bSigned, extreme);
    if (p.zeros == Zeros::PerRowOnly) std::fill(bZero.begin(), bZero.end(), 0);
  }
  // The operands as the GEMM reads them: bytes of their types.
  std::vector<uint8_t> aBytes(a.size()), bBytes(b.size());
  for (size_t i = 0; i < a.size(); ++i) aBytes[i] = uint8_t(a[i]);
  for (size_t i = 0; i < b.size(); ++i) bBytes[i] = uint8_t(b[i]);

  AlignedBytes packed(packedS8BSize(kernel, s.k, s.n));
  packS8BInto(kernel, s.k, s.n, bBytes.data(), p.bSigned, bZero.data(), packed.data.get());
  AlignedBytes scratch(s8GemmScratchBytes(s));
  std::vector<int32_t> c(size_t(s.m * ldc), kSentinel);
  const S8GemmA aView{aBytes.data(), lda, p.aSigned, aZero.data(), int64_t(aZero.size())};
  s8GemmPacked(s, aView, PackedS8BView{&kernel, s.k, s.n, packed.data.get()}, c.data(), ldc, pool,
               {scratch.data.get(), s8GemmScratchBytes(s)});

  int64_t mismatches = 0;
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      int64_t expected = kSentinel;
      if (j < s.n) {
        expected = 0;
        const int64_t za = aZero[size_t(i % int64_t(aZero.size()))];
        for (int64_t q = 0; q < s.k; ++q) {
          expected += (a[size_t(i * lda + q)] - za) * (b[size_t(q * s.n + j)] - bZero[size_t(j)]);
        }
      }
      const int32_t got = c[size_t(i * ldc + j)];
      if (got != expected && mismatches++ < 5) {
        ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got << ", expected " << expected;
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

class S8GemmTest : public ::testing::TestWithParam<size_t> {
 protected:
  const S8GemmKernel &kernel() const { return s8GemmKernels()[GetParam()]; }
  void SetUp() override {
    if (!canRun(kernel())) GTEST_SKIP() << kernel().name << " needs ISA this host lacks";
  }
};

TEST_P(S8GemmTest, TypesAndZeroPoints) {
  const Problem base{{kernel().mr + 1, kernel().nr + 3, 45}};
  uint32_t seed = 1;
  for (bool aSigned : {false, true}) {
    for (bool bSigned : {false, true}) {
      for (Zeros zeros : {Zeros::None, Zeros::Scalar, Zeros::PerRowAndColumn}) {
        Problem p = base;
        p.aSigned = aSigned, p.bSigned = bSigned, p.zeros = zeros, p.aZeroCount = p.s.m;
        checkProblem(kernel(), p, nullptr, seed++);
      }
    }
  }
}

TEST_P(S8GemmTest, TileEdgesAndKBlocks) {
  const int64_t mr = kernel().mr, nr = kernel().nr;
  uint32_t seed = 100;
  for (int64_t m : {int64_t{1}, mr - 1, mr, 2 * mr + 1}) {
    for (int64_t n : {int64_t{1}, int64_t{17}, nr, nr + 1, 2 * nr + 15}) {
      // K: one partial quad, whole quads, and past one K block (several blocks at 2051).
      for (int64_t k : {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{63}, int64_t{128}, int64_t{2051}}) {
        Problem p{{m, n, k}, seed % 2 == 0, seed % 3 == 0, Zeros::PerRowAndColumn, seed % 2 == 0 ? 1 : m};
        checkProblem(kernel(), p, nullptr, seed++);
      }
    }
  }
}

TEST_P(S8GemmTest, ThreadedAndFoldedBatch) {
  ThreadPool pool(3);
  const int64_t mr = kernel().mr, nr = kernel().nr;
  // Zero points per row of a 5-row matrix, repeated over a batch of 7 folded into the rows.
  Problem p{{35, 3 * nr + 9, 301}, true, false, Zeros::PerRowAndColumn, 5};
  checkProblem(kernel(), p, &pool, 7);
  p = Problem{{4 * mr + 2, 2 * nr - 1, 770}, false, true, Zeros::Scalar};
  checkProblem(kernel(), p, &pool, 8);
  p.s.m = 1;
  checkProblem(kernel(), p, &pool, 9);
}

TEST_P(S8GemmTest, UnsignedAWithoutBZeroPoints) {
  // u8 A, s8 B without zero points: A is read where it is when its rows are whole words apart and K
  // a multiple of four (K = 128, lda = 132), packed otherwise (lda = 131; K = 130).
  ThreadPool pool(2);
  const int64_t mr = kernel().mr, nr = kernel().nr;
  uint32_t seed = 400;
  for (int64_t k : {int64_t{128}, int64_t{130}}) {
    for (int64_t ldaPad : {int64_t{3}, int64_t{4}}) {
      const Problem p{{3 * mr + 1, nr + 5, k}, false, true, Zeros::PerRowOnly, 3 * mr + 1, ldaPad};
      checkProblem(kernel(), p, &pool, seed++);
    }
  }
}

TEST_P(S8GemmTest, ExtremeOperandsAtTheLargestK) {
  // Operands and zero points at the ends of their ranges: |result| reaches K * 255^2, just below
  // 2^31 at kS8GemmMaxK, and the partial sums and corrections wrap on the way.
  for (bool aSigned : {false, true}) {
    for (bool bSigned : {false, true}) {
      const Problem p{{2, 19, kS8GemmMaxK}, aSigned, bSigned, Zeros::PerRowAndColumn, 2};
      checkProblem(kernel(), p, nullptr, 11 + uint32_t(aSigned) * 2 + uint32_t(bSigned), /*extreme=*/true);
    }
  }
}

TEST_P(S8GemmTest, EmptyK) {
  const GemmShape s{3, 5, 0};
  AlignedBytes packed(packedS8BSize(kernel(), s.k, s.n));
  const std::vector<int32_t> bZero(size_t(s.n), 3);
  packS8BInto(kernel(), s.k, s.n, nullptr, false, bZero.data(), packed.data.get());
  std::vector<int32_t> c(size_t(s.m * s.n), kSentinel);
  s8GemmPacked(s, S8GemmA{nullptr, 0}, PackedS8BView{&kernel(), s.k, s.n, packed.data.get()}, c.data(), s.n,
               nullptr, {});
  for (int32_t v : c) EXPECT_EQ(v, 0);
}

/// The GEMM's requantized bytes (S8GemmBytes) against its int32 C requantized by the quantize
/// kernels' loop, bit for bit: tile edges, one and several K blocks, u8 and s8 output, multipliers
/// of a power of two (sums land on ties, rounded half to even) and ones that saturate, B with and
/// without zero points (the bias added per tile, or folded into the column offsets), over a pool.
void checkRequantized(const S8GemmKernel &kernel, const GemmShape &s, bool ySigned, int32_t bZeroPoint,
                      ThreadPool *pool, uint32_t seed) {
  SCOPED_TRACE(fmt::format("{} m={} n={} k={} y {} b zero point {}", kernel.name, s.m, s.n, s.k,
                           ySigned ? "s8" : "u8", bZeroPoint));
  std::mt19937 rng(seed);
  std::vector<uint8_t> a(size_t(s.m * s.k)), b(size_t(s.k * s.n));
  for (uint8_t &v : a) v = uint8_t(rng());
  for (uint8_t &v : b) v = uint8_t(rng());
  const int32_t aZero = int32_t(rng() % 256);
  const std::vector<int32_t> bZero(size_t(s.n), bZeroPoint);
  std::vector<int32_t> bias(size_t(s.n));
  std::vector<float> multiplier(size_t(s.n));
  for (int64_t j = 0; j < s.n; ++j) {
    bias[size_t(j)] = int32_t(rng() % 20001) - 10000;
    multiplier[size_t(j)] = j % 3 == 0 ? 1.0f / 256.0f : j % 3 == 1 ? 1e-2f : float(rng() % 1000 + 1) * 1e-6f;
  }
  AlignedBytes packed(packedS8BSize(kernel, s.k, s.n));
  packS8BInto(kernel, s.k, s.n, b.data(), /*bSigned=*/true, bZero.data(), packed.data.get());
  const PackedS8BView view{&kernel, s.k, s.n, packed.data.get()};
  const S8GemmA aView{a.data(), s.k, false, &aZero, 1};
  AlignedBytes scratch(s8GemmScratchBytes(s));
  std::vector<int32_t> sums(size_t(s.m * s.n)), partial(size_t(s.m * s.n));
  s8GemmPacked(s, aView, view, sums.data(), s.n, pool, {scratch.data.get(), s8GemmScratchBytes(s)});

  const int64_t ldy = s.n + kLdcPad;
  std::vector<std::byte> y(size_t(s.m * ldy), std::byte{0x5a});
  const S8GemmBytes bytes{{bias.data(), multiplier.data(), 3.0f, ySigned}, y.data(), ldy, {}};
  s8GemmPacked(s, aView, view, partial.data(), s.n, pool, {scratch.data.get(), s8GemmScratchBytes(s)}, &bytes);

  const QuantizeKernels &q = quantizeKernels();
  int64_t mismatches = 0;
  std::vector<std::byte> expected(size_t(s.n));
  for (int64_t i = 0; i < s.m; ++i) {
    const int32_t *row = sums.data() + i * s.n;
    if (ySigned) {
      q.requantizeColumnsS8(row, bias.data(), multiplier.data(), 3.0f, reinterpret_cast<int8_t *>(expected.data()), s.n);
    } else {
      q.requantizeColumnsU8(row, bias.data(), multiplier.data(), 3.0f, reinterpret_cast<uint8_t *>(expected.data()),
                            s.n);
    }
    for (int64_t j = 0; j < ldy; ++j) {
      const std::byte want = j < s.n ? expected[size_t(j)] : std::byte{0x5a};  // Padding untouched.
      const std::byte got = y[size_t(i * ldy + j)];
      if (got != want && mismatches++ < 5) {
        ADD_FAILURE() << "y[" << i << "][" << j << "] = " << int(got) << ", expected " << int(want) << " (sum "
                      << (j < s.n ? row[j] : 0) << ")";
      }
    }
  }
  EXPECT_EQ(mismatches, 0);

  // Dequantized: the floats DequantizeLinear makes of those bytes, (q - 3) * scale, bit for bit.
  const float scale = 0.0173f;
  std::vector<float> yFloat(size_t(s.m * ldy), -7.0f);
  const S8GemmBytes floats{{bias.data(), multiplier.data(), 3.0f, ySigned, scale},
                           reinterpret_cast<std::byte *>(yFloat.data()), ldy, {}};
  s8GemmPacked(s, aView, view, partial.data(), s.n, pool, {scratch.data.get(), s8GemmScratchBytes(s)}, &floats);
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < ldy; ++j) {
      const std::byte q = y[size_t(i * ldy + j)];
      const float want = j < s.n ? (float(ySigned ? int32_t(int8_t(q)) : int32_t(uint8_t(q))) - 3.0f) * scale : -7.0f;
      const float got = yFloat[size_t(i * ldy + j)];
      if (got != want && mismatches++ < 5) {
        ADD_FAILURE() << "dequantized y[" << i << "][" << j << "] = " << got << ", expected " << want;
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

// Also checks the dequantized (float) output, checkRequantized's second half.
TEST_P(S8GemmTest, RequantizedToBytes) {
  const int64_t mr = kernel().mr, nr = kernel().nr;
  ThreadPool pool(2);
  uint32_t seed = 300;
  for (int64_t m : {int64_t{1}, mr + 1, 4 * mr + 3}) {
    // 17 and 40 columns: tiles of two and three vectors; 777: past one column block (704 at K =
    // 2051), so a later block starts afresh.
    for (int64_t n : {int64_t{17}, int64_t{40}, nr + 3, int64_t{777}}) {
      for (int64_t k : {int64_t{45}, int64_t{2051}}) {  // One K block, and several.
        for (bool ySigned : {false, true}) {
          for (int32_t bZeroPoint : {0, 5}) {
            checkRequantized(kernel(), {m, n, k}, ySigned, bZeroPoint, m > mr ? &pool : nullptr, seed++);
          }
        }
      }
    }
  }
}

std::string variantName(const ::testing::TestParamInfo<size_t> &info) { return s8GemmKernels()[info.param].name; }

INSTANTIATE_TEST_SUITE_P(Variants, S8GemmTest, ::testing::Range(size_t{0}, s8GemmKernels().size()), variantName);

TEST(S8GemmDispatchTest, SelectionFollowsTheHost) {
  const S8GemmKernel *selected = selectedS8GemmKernel();
  EXPECT_EQ(selected != nullptr, hasAll(hostIsa(), Isa::Avx512 | Isa::Avx512Vnni));
  if (selected != nullptr) {
    EXPECT_TRUE(canRun(*selected));
  }
}

}  // namespace
}  // namespace tessel::cpu
