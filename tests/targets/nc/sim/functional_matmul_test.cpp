// nc_matmul and nc_transpose: hand-computed products, PSUM accumulation groups (overwrite, then
// accumulate) and the undefined-accumulation errors, shape/dtype errors, the bit-exact transpose,
// and a 512x512x512 bf16 tiled matmul program (HBM -> SBUF -> PE -> PSUM -> SBUF -> HBM) checked
// exactly against the same fp32 accumulation order, which must run well under a second.
#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "functional_fixture.h"

namespace tessel::nc::testing {
namespace {

class NcFunctionalMatmul : public FunctionalTest {
 protected:
  // stationary [K=2, M=2] at SBUF offset 0, moving [K=2, N=3] at offset 64, both bf16.
  void putSmallInputs() {
    const float st[2][2] = {{1, 2}, {3, 4}};
    const float mv[2][3] = {{1, 0, 2}, {0, 1, 3}};
    for (int k = 0; k < 2; ++k) {
      for (int m = 0; m < 2; ++m) putBf16(kSbuf, k, 2 * m, st[k][m]);
      for (int n = 0; n < 3; ++n) putBf16(kSbuf, k, 64 + 2 * n, mv[k][n]);
    }
  }
  std::string matmul(bool accumulate, uint64_t dstOffset = 0) {
    return fmt::format("nc_matmul.PE dst=psum[p0:2, off {}, [1,3]]:f32 stationary=sbuf[p0:2, off 0, [1,2]]:bf16 "
                       "moving=sbuf[p0:2, off 64, [1,3]]:bf16{}\n",
                       dstOffset, accumulate ? " acc=1" : "");
  }
  std::vector<float> psumRow(int64_t p, uint64_t offset, int n) {
    std::vector<float> row;
    for (int i = 0; i < n; ++i) row.push_back(getF32(kPsum, p, offset + 4 * i));
    return row;
  }
};

TEST_F(NcFunctionalMatmul, ProductIsStationaryTransposedTimesMoving) {
  putSmallInputs();
  ASSERT_TRUE(run(matmul(false)).ok());
  EXPECT_EQ(psumRow(0, 0, 3), (std::vector<float>{1, 3, 11}));
  EXPECT_EQ(psumRow(1, 0, 3), (std::vector<float>{2, 4, 16}));
  EXPECT_TRUE(state_->psumWordWrittenByMatmul(0));
}

TEST_F(NcFunctionalMatmul, AccumulationGroupOverwritesThenAccumulates) {
  putSmallInputs();
  putF32(kPsum, 0, 0, 1000.0f);  // Stale data: the first matmul of a group overwrites it.
  ASSERT_TRUE(run(matmul(false) + matmul(true) + matmul(true)).ok());
  EXPECT_EQ(psumRow(0, 0, 3), (std::vector<float>{3, 9, 33}));
  EXPECT_EQ(psumRow(1, 0, 3), (std::vector<float>{6, 12, 48}));
  ASSERT_TRUE(run(matmul(false)).ok());  // A new group.
  EXPECT_EQ(psumRow(0, 0, 3), (std::vector<float>{1, 3, 11}));
}

TEST_F(NcFunctionalMatmul, AccumulateOntoMemsetIsAnError) {
  putSmallInputs();
  Status status = run("memset.DVE dst=psum[p0:2, off 0, [1,3]]:f32 imm=0\n" + matmul(true));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.diag().code, ErrorCode::RuntimeError);
  EXPECT_EQ(status.diag().message,
            "instruction 1 (nc_matmul.PE): acc=1 accumulates onto PSUM partition 0 bytes 0..4, which no matmul wrote "
            "last (never written, or written by a non-matmul instruction); that is undefined (section 4.3)");
  EXPECT_EQ(getF32(kPsum, 0, 0), 0.0f);
}

TEST_F(NcFunctionalMatmul, AccumulateOntoUnwrittenPsumIsAnError) {
  putSmallInputs();
  EXPECT_NE(runError(matmul(true, 2048)).find("acc=1 accumulates onto PSUM partition 0 bytes 2048..2052"),
            std::string::npos);
}

TEST_F(NcFunctionalMatmul, NonMatmulWriteInsideAGroupBreaksIt) {
  putSmallInputs();
  ASSERT_TRUE(run(matmul(false)).ok());
  // DVE overwrites element 2 of partition 1 (bytes 8..12); the other words stay matmul-written.
  ASSERT_TRUE(run("memset.DVE dst=psum[p1:1, off 8]:f32 imm=5").ok());
  EXPECT_TRUE(state_->psumWordWrittenByMatmul(state_->psumBytesPerPartition() + 4));
  EXPECT_FALSE(state_->psumWordWrittenByMatmul(state_->psumBytesPerPartition() + 8));
  EXPECT_EQ(runError(matmul(true)),
            "instruction 0 (nc_matmul.PE): acc=1 accumulates onto PSUM partition 1 bytes 8..12, which no matmul "
            "wrote last (never written, or written by a non-matmul instruction); that is undefined (section 4.3)");
}

TEST_F(NcFunctionalMatmul, ShapeAndDTypeErrors) {
  EXPECT_EQ(runError("nc_matmul.PE dst=psum[p0:2, off 0, [1,3]]:f32 stationary=sbuf[p0:2, off 0, [1,2]]:bf16 "
                     "moving=sbuf[p0:3, off 64, [1,3]]:bf16"),
            "instruction 0 (nc_matmul.PE): contraction K differs: stationary [2, 2] has 2 partitions, moving [3, 3] "
            "has 3");
  EXPECT_EQ(runError("nc_matmul.PE dst=psum[p0:2, off 0, [1,4]]:f32 stationary=sbuf[p0:2, off 0, [1,2]]:bf16 "
                     "moving=sbuf[p0:2, off 64, [1,3]]:bf16"),
            "instruction 0 (nc_matmul.PE): operand dst has shape [2, 4] (2 x 4 elements); stationary [2, 2] and "
            "moving [2, 3] give M x N = 2 x 3");
  Status status = run("nc_matmul.PE dst=psum[p0:2, off 0, [1,3]]:bf16 stationary=sbuf[p0:2, off 0, [1,2]]:bf16 "
                      "moving=sbuf[p0:2, off 64, [1,3]]:bf16");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.diag().code, ErrorCode::TypeMismatch);
}

TEST_F(NcFunctionalMatmul, StridedStationaryAndFp32Inputs) {
  // stationary read with stride 2 (every other element) and fp32 inputs: exact small integers.
  for (int k = 0; k < 3; ++k)
    for (int i = 0; i < 4; ++i) putF32(kSbuf, k, 4 * i, static_cast<float>(k + 1) * (i + 1));
  for (int k = 0; k < 3; ++k) putF32(kSbuf, k, 64, 1.0f);
  ASSERT_TRUE(run("nc_matmul.PE dst=psum[p0:2, off 0]:f32 stationary=sbuf[p0:3, off 0, [2,2]]:f32 "
                  "moving=sbuf[p0:3, off 64, [1,1]]:f32").ok());
  // dst[m] = sum_k st[k][m]; st[k] = {(k+1)*1, (k+1)*3}: sums 6 and 18.
  EXPECT_EQ(getF32(kPsum, 0, 0), 6.0f);
  EXPECT_EQ(getF32(kPsum, 1, 0), 18.0f);
}

TEST_F(NcFunctionalMatmul, TransposeIsBitExact) {
  // src [3 partitions, 4] bf16 -> dst [4 partitions, 3]; one element is a NaN with a payload.
  for (int p = 0; p < 3; ++p)
    for (int f = 0; f < 4; ++f) put<uint16_t>(kSbuf, p, 2 * f, static_cast<uint16_t>(0x3f80 + 16 * p + f));
  put<uint16_t>(kSbuf, 2, 6, 0x7fc1);
  ASSERT_TRUE(run("nc_transpose.PE dst=psum[p0:4, off 0, [1,3]]:bf16 src=sbuf[p0:3, off 0, [1,4]]:bf16").ok());
  for (int f = 0; f < 4; ++f)
    for (int p = 0; p < 3; ++p)
      EXPECT_EQ(get<uint16_t>(kPsum, f, 2 * p), p == 2 && f == 3 ? 0x7fc1 : 0x3f80 + 16 * p + f) << f << "," << p;
  EXPECT_FALSE(state_->psumWordWrittenByMatmul(0));
  EXPECT_NE(runError("nc_transpose.DVE dst=sbuf[p0:4, off 0, [1,3]]:f32 src=sbuf[p0:3, off 64, [1,4]]:bf16")
                .find("operand dst is f32 but src is bf16"),
            std::string::npos);
  EXPECT_NE(runError("nc_transpose.DVE dst=sbuf[p0:3, off 0, [1,4]]:bf16 src=sbuf[p0:3, off 64, [1,4]]:bf16")
                .find("the transpose of src [3, 4] is 4 x 3"),
            std::string::npos);
}

TEST(NcFunctionalMatmulProgram, TiledBf16Matmul512) {
  constexpr int kSize = 512, kTile = 128, kTiles = kSize / kTile;
  auto profile = loadProfile("nc-v2");
  ASSERT_TRUE(profile.ok());
  // HBM: A^T [K][M] bf16 at 0, B [K][N] bf16 after it, C [M][N] f32 after that.
  const uint64_t aOffset = 0, bOffset = kSize * kSize * 2, cOffset = 2 * bOffset;
  MachineState state(*profile, cOffset + kSize * kSize * 4);

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> at(kSize * kSize), b(kSize * kSize);  // bf16-rounded values.
  for (size_t i = 0; i < at.size(); ++i) {
    uint16_t aBits = BFloat16::fromFloat(dist(rng)), bBits = BFloat16::fromFloat(dist(rng));
    at[i] = BFloat16::fromBits(aBits);
    b[i] = BFloat16::fromBits(bBits);
    std::memcpy(state.hbm().data() + aOffset + 2 * i, &aBits, 2);
    std::memcpy(state.hbm().data() + bOffset + 2 * i, &bBits, 2);
  }

  // SBUF per partition k: A^T rows of K tiles kt at kt*1024, B rows at 4096 + kt*1024, C at 8192.
  std::string text;
  for (int kt = 0; kt < kTiles; ++kt) {
    text += fmt::format(
        "dma_copy.DMA dst=sbuf[p0:128, off {}, [1,512]]:bf16 src=hbm[p0:1, off {}, [512,128], [1,512]]:bf16\n",
        kt * 1024, aOffset + kt * kTile * kSize * 2);
    text += fmt::format(
        "dma_copy.DMA dst=sbuf[p0:128, off {}, [1,512]]:bf16 src=hbm[p0:1, off {}, [512,128], [1,512]]:bf16\n",
        4096 + kt * 1024, bOffset + kt * kTile * kSize * 2);
  }
  for (int mt = 0; mt < kTiles; ++mt) {
    for (int kt = 0; kt < kTiles; ++kt)
      text += fmt::format(
          "nc_matmul.PE dst=psum[p0:128, off {}, [1,512]]:f32 stationary=sbuf[p0:128, off {}, [1,128]]:bf16 "
          "moving=sbuf[p0:128, off {}, [1,512]]:bf16{}\n",
          mt * 2048, kt * 1024 + mt * kTile * 2, 4096 + kt * 1024, kt > 0 ? " acc=1" : "");
    text += fmt::format(
        "activation.ACT dst=sbuf[p0:128, off 8192, [1,512]]:f32 src=psum[p0:128, off {}, [1,512]]:f32 func=copy\n",
        mt * 2048);
    text += fmt::format(
        "dma_copy.DMA dst=hbm[p0:1, off {}, [512,128], [1,512]]:f32 src=sbuf[p0:128, off 8192, [1,512]]:f32\n",
        cOffset + mt * kTile * kSize * 4);
  }
  auto program = assemble(text, "matmul512.s");
  ASSERT_TRUE(program.ok()) << program.diag().message;

  auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < program->size(); ++i) {
    Status status = executeInstruction((*program)[i], i, state, *profile);
    ASSERT_TRUE(status.ok()) << status.str();
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("512x512x512 bf16 tiled matmul program (%zu instructions): %.3f s\n", program->size(), seconds);
#ifdef NDEBUG
  EXPECT_LT(seconds, 1.0);
#endif

  // Reference in the simulator's order: each K tile sums k ascending in fp32, then adds to PSUM.
  int mismatches = 0;
  for (int m = 0; m < kSize; ++m) {
    for (int n = 0; n < kSize; ++n) {
      float c = 0;
      for (int kt = 0; kt < kTiles; ++kt) {
        float partial = 0;
        for (int k = kt * kTile; k < (kt + 1) * kTile; ++k) partial += at[k * kSize + m] * b[k * kSize + n];
        c = kt == 0 ? partial : c + partial;
      }
      float got;
      std::memcpy(&got, state.hbm().data() + cOffset + 4 * (m * kSize + n), 4);
      if (got != c && ++mismatches < 5) ADD_FAILURE() << "C[" << m << "][" << n << "] = " << got << ", expected " << c;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
}  // namespace tessel::nc::testing
