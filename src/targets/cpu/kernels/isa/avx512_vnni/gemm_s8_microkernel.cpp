// AVX512_VNNI int8 GEMM microkernels (compiled with -mavx512vnni on top of the AVX-512 flags). An
// mr x nr tile of C lives in mr * nr/16 zmm int32 accumulators; each step takes one quad of K:
// nr/16 vectors of packed B (four s8 per column), one broadcast quad of each A row (four u8), and
// vpdpbusd adds the four products to every lane, wrapping (not vpdpbusds, which saturates). The
// last K block subtracts the zero-point terms, then stores C or requantizes it to bytes.
// u8s8_pack_row packs A's rows for them. Internal linkage except the row functions, as in the other ISA files.
#include <immintrin.h>

#include <array>
#include <utility>

#include "targets/cpu/kernels/gemm_s8_microkernel.h"

// GCC 12 warns inside the AVX-512 intrinsics themselves (their _mm512_undefined_* sources) once
// the narrow tiles inline them; nothing of ours is read uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tessel::cpu {
namespace {

constexpr int kLanes = 16;  // int32 per zmm.
constexpr int kUnroll = 4;  // Quads per loop iteration.

/// One quad step: acc[i][j] += quad of row i . quads of columns j * 16 .. j * 16 + 15.
template <int kMr, int kVecs>
inline __attribute__((always_inline)) void quadStep(__m512i (&acc)[kMr][kVecs], const uint32_t *const *rows,
                                                    int64_t q, const int8_t *b) {
  __m512i bv[kVecs];
#pragma GCC unroll 8
  for (int j = 0; j < kVecs; ++j) bv[j] = _mm512_load_si512(b + j * kLanes * 4);
#pragma GCC unroll 32
  for (int i = 0; i < kMr; ++i) {
    const __m512i av = _mm512_set1_epi32(int(rows[i][q]));
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], av, bv[j]);
  }
}

/// The valid lanes of vector j of a tile `cols` wide.
inline __mmask16 columnMask(int cols, int j) {
  const int valid = cols - j * kLanes;
  return valid >= kLanes ? __mmask16(0xFFFF) : valid <= 0 ? __mmask16(0) : __mmask16((1u << valid) - 1);
}

/// One row's kVecs requantized vectors (int32, zero point added) to its first `cols` bytes, saturated to
/// u8 or s8. Two or more vectors narrow through the saturating packs (one instruction per vector
/// instead of a saturating store each, whose two steps cost more), which interleave the 128-bit
/// groups of the vectors; one permutation puts them back in order.
template <int kVecs>
inline __attribute__((always_inline)) void storeRowBytes(std::byte *row, const __m512i (&q)[kVecs],
                                                         const __mmask16 (&masks)[kVecs], int cols, bool ySigned) {
  if constexpr (kVecs == 1) {
    if (ySigned) {
      _mm512_mask_cvtsepi32_storeu_epi8(row, masks[0], q[0]);  // Saturates to [-128, 127].
    } else {
      _mm512_mask_cvtusepi32_storeu_epi8(row, masks[0], _mm512_max_epi32(q[0], _mm512_setzero_si512()));
    }
  } else {
    const __m512i zero = _mm512_setzero_si512();
    // Values lie within +-(1024 + 255): the int16 step saturates nothing.
    const __m512i low = _mm512_packs_epi32(q[0], q[1]);
    const __m512i high = kVecs > 2 ? _mm512_packs_epi32(q[2], kVecs > 3 ? q[3] : zero) : zero;
    const __m512i bytes = ySigned ? _mm512_packs_epi16(low, high) : _mm512_packus_epi16(low, high);
    // Dword 4g + v of `bytes` holds group g of vector v; the row wants it at 4v + g.
    const __m512i order = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
    const __mmask64 valid = cols >= 64 ? ~__mmask64{0} : (__mmask64{1} << cols) - 1;
    _mm512_mask_storeu_epi8(row, valid, _mm512_permutexvar_epi32(order, bytes));
  }
}

/// The tile requantized to bytes (S8Requantization): the int32 sum plus bias wraps as the
/// accumulators do; its float times the multiplier is clamped to +-1024 (past where any zero point
/// saturates, and within int32) and converted rounding half to even, then the zero point is added
/// and the conversion to bytes saturates. Each value is quantize_impl.h's requantized(): the float
/// steps are the same, and on integers the rest is exact.
template <int kMr, int kVecs, bool kBias>
inline __attribute__((always_inline)) void requantizeTile(__m512i (&acc)[kMr][kVecs], const __mmask16 (&masks)[kVecs],
                                                          const S8MicrokernelArgs &args) {
  const S8Requantization &r = args.requantize;
  __m512i bias[kVecs];
  __m512 multiplier[kVecs];
#pragma GCC unroll 8
  for (int j = 0; j < kVecs; ++j) {
    if constexpr (kBias) bias[j] = _mm512_maskz_loadu_epi32(masks[j], r.bias + j * kLanes);
    multiplier[j] = _mm512_maskz_loadu_ps(masks[j], r.multiplier + j * kLanes);
  }
  const __m512 limit = _mm512_set1_ps(1024.0f);
  const __m512i zeroPoint = _mm512_set1_epi32(int(r.zeroPoint));
  const __m512i lo = _mm512_set1_epi32(r.ySigned ? -128 : 0), hi = _mm512_set1_epi32(r.ySigned ? 127 : 255);
  const __m512 scale = _mm512_set1_ps(r.dequantizeScale);
#pragma GCC unroll 32
  for (int i = 0; i < kMr; ++i) {
    std::byte *row = args.y + i * args.ldy;
    __m512i q[kVecs];
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) {
      const __m512i sum = kBias ? _mm512_add_epi32(acc[i][j], bias[j]) : acc[i][j];
      // Range imm 2: the operand of smaller magnitude with the first operand's sign, i.e. the
      // product clamped to [-1024, 1024] in one step.
      const __m512 v = _mm512_range_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(sum), multiplier[j]), limit, 2);
      q[j] = _mm512_add_epi32(_mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zeroPoint);
    }
    if (r.dequantizeScale != 0.0f) {  // The byte's DequantizeLinear: (q - zero point) * scale.
#pragma GCC unroll 8
      for (int j = 0; j < kVecs; ++j) {
        const __m512i saturated = _mm512_min_epi32(_mm512_max_epi32(q[j], lo), hi);
        const __m512 y = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(saturated, zeroPoint)), scale);
        _mm512_mask_storeu_ps(reinterpret_cast<float *>(row) + j * kLanes, masks[j], y);
      }
    } else {
      storeRowBytes<kVecs>(row, q, masks, args.cols, r.ySigned);
    }
  }
}

template <int kMr, int kVecs>
void storeTile(__m512i (&acc)[kMr][kVecs], const S8MicrokernelArgs &args) {
  __mmask16 masks[kVecs];
#pragma GCC unroll 8
  for (int j = 0; j < kVecs; ++j) masks[j] = columnMask(args.cols, j);
  if (args.rowTerm != nullptr) {
    // C -= rowTerm[i] * b'[j] + a'[i] * colSum[j]; both per-column vectors are padded to nr.
    __m512i bZero[kVecs], colSum[kVecs];
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) {
      bZero[j] = _mm512_loadu_si512(args.bZero + j * kLanes);
      colSum[j] = _mm512_loadu_si512(args.colSum + j * kLanes);
    }
#pragma GCC unroll 32
    for (int i = 0; i < kMr; ++i) {
      const __m512i rowTerm = _mm512_set1_epi32(args.rowTerm[i]), aZero = _mm512_set1_epi32(args.aZero[i]);
#pragma GCC unroll 8
      for (int j = 0; j < kVecs; ++j) {
        const __m512i correction =
            _mm512_add_epi32(_mm512_mullo_epi32(rowTerm, bZero[j]), _mm512_mullo_epi32(aZero, colSum[j]));
        acc[i][j] = _mm512_sub_epi32(acc[i][j], correction);
      }
    }
  } else if (args.colOffset != nullptr) {
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) {
      const __m512i offset = _mm512_loadu_si512(args.colOffset + j * kLanes);
#pragma GCC unroll 32
      for (int i = 0; i < kMr; ++i) acc[i][j] = _mm512_add_epi32(acc[i][j], offset);
    }
  }
  if (args.accumulate) {
#pragma GCC unroll 32
    for (int i = 0; i < kMr; ++i) {
      const int32_t *row = args.c + i * args.ldc;
#pragma GCC unroll 8
      for (int j = 0; j < kVecs; ++j) {
        acc[i][j] = _mm512_add_epi32(acc[i][j], _mm512_maskz_loadu_epi32(masks[j], row + j * kLanes));
      }
    }
  }
  if (args.y != nullptr) {
    if (args.requantize.bias != nullptr) {
      requantizeTile<kMr, kVecs, true>(acc, masks, args);
    } else {  // None, or folded into colOffset.
      requantizeTile<kMr, kVecs, false>(acc, masks, args);
    }
    return;
  }
#pragma GCC unroll 32
  for (int i = 0; i < kMr; ++i) {
    int32_t *row = args.c + i * args.ldc;
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) _mm512_mask_storeu_epi32(row + j * kLanes, masks[j], acc[i][j]);
  }
}

/// kMr rows of the first kVecs vectors of columns of a panel kNr wide.
template <int kMr, int kVecs, int kNr>
void microkernel(const S8MicrokernelArgs &args) {
  static_assert(kNr % kLanes == 0 && kVecs <= kNr / kLanes, "nr must be a multiple of the vector width");
  __m512i acc[kMr][kVecs];
#pragma GCC unroll 32
  for (int i = 0; i < kMr; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) acc[i][j] = _mm512_setzero_si512();
  }
  const uint32_t *rows[kMr];
#pragma GCC unroll 32
  for (int i = 0; i < kMr; ++i) rows[i] = args.a + i * args.aStride;
  const int8_t *b = args.b;
  int64_t q = 0;
  for (; q + kUnroll <= args.quads; q += kUnroll) {
#pragma GCC unroll 4
    for (int u = 0; u < kUnroll; ++u) {
      quadStep<kMr, kVecs>(acc, rows, q + u, b);
      b += kNr * 4;
    }
  }
  for (; q < args.quads; ++q) {
    quadStep<kMr, kVecs>(acc, rows, q, b);
    b += kNr * 4;
  }
  storeTile<kMr, kVecs>(acc, args);
}

/// Kernels for 1 .. mr rows and 1 .. nr/16 vectors of columns, so a ragged bottom edge (and
/// M < mr) costs only its rows, and a narrow right edge (and N < nr: the 16 and 24 output
/// channels of a small 1x1 convolution) only its vectors, products and requantization alike.
template <int kNr, int kVecs, int... kRows>
constexpr std::array<S8GemmMicrokernel, sizeof...(kRows)> rowKernels(std::integer_sequence<int, kRows...>) {
  return {&microkernel<kRows + 1, kVecs, kNr>...};
}

template <int kMr, int kNr, int... kVecs>
constexpr std::array<std::array<S8GemmMicrokernel, kMr>, sizeof...(kVecs)> tileKernels(
    std::integer_sequence<int, kVecs...>) {
  return {rowKernels<kNr, kVecs + 1>(std::make_integer_sequence<int, kMr>{})...};
}

template <int kMr, int kNr>
void tile(const S8MicrokernelArgs &args) {
  static constexpr auto kKernels = tileKernels<kMr, kNr>(std::make_integer_sequence<int, kNr / kLanes>{});
  kKernels[size_t((args.cols + kLanes - 1) / kLanes - 1)][size_t(args.rows - 1)](args);
}

}  // namespace

int32_t u8s8_pack_row__avx512_vnni(const uint8_t *src, int64_t k, bool isSigned, uint8_t *dst) {
  // s8 v + 128 as u8 is v's bit pattern with the sign bit flipped; vpsadbw against zero sums each
  // eight bytes into a 64-bit lane.
  const __m512i flip = _mm512_set1_epi8(isSigned ? char(0x80) : char(0));
  const __m512i zero = _mm512_setzero_si512();
  __m512i sums = zero;
  int64_t p = 0;
  for (; p + 64 <= k; p += 64) {
    const __m512i v = _mm512_xor_si512(_mm512_loadu_si512(src + p), flip);
    _mm512_storeu_si512(dst + p, v);
    sums = _mm512_add_epi64(sums, _mm512_sad_epu8(v, zero));
  }
  if (p < k) {
    const __mmask64 valid = _cvtu64_mask64(~uint64_t{0} >> (64 - (k - p)));
    const __m512i v = _mm512_maskz_mov_epi8(valid, _mm512_xor_si512(_mm512_maskz_loadu_epi8(valid, src + p), flip));
    _mm512_storeu_si512(dst + p, v);  // Zeros past k, to the end of the cache line.
    sums = _mm512_add_epi64(sums, _mm512_sad_epu8(v, zero));
  }
  alignas(64) int64_t lanes[8];
  _mm512_store_si512(lanes, sums);
  int64_t total = 0;
  for (int64_t lane : lanes) total += lane;
  return int32_t(total);
}

#define S8GEMM_avx512_vnni(name, mr, nr) \
  void name(const S8MicrokernelArgs &args) { tile<mr, nr>(args); }
#define S8GEMM(name, family, isa, mr, nr) S8GEMM_##family(name, mr, nr)
#include "targets/cpu/kernels/gemm_s8.def"
#undef S8GEMM

}  // namespace tessel::cpu
