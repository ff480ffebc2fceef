// dma_copy: HBM <-> SBUF with and without a dtype cast, HBM -> HBM with wide counts and negative
// strides, SBUF -> SBUF across partitions, and the errors (PSUM, element counts).
#include <cmath>
#include <vector>

#include "functional_fixture.h"

namespace tessel::nc::testing {
namespace {

class NcFunctionalDma : public FunctionalTest {};

TEST_F(NcFunctionalDma, HbmToSbufWithCast) {
  // HBM f32 [2 rows, 4] -> SBUF bf16 [2 partitions, 4]: the outer HBM dim becomes the partitions.
  const float values[8] = {1, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -2, 5, 6, 7, 8};
  for (int i = 0; i < 8; ++i) putF32(kHbm, 0, 4096 + 4 * i, values[i]);
  ASSERT_TRUE(run("dma_copy.DMA dst=sbuf[p0:2, off 0, [1,4]]:bf16 src=hbm[p0:1, off 4096, [4,2], [1,4]]:f32").ok());
  EXPECT_EQ(get<uint16_t>(kSbuf, 0, 2), 0x3f80);  // Tie: even.
  EXPECT_EQ(get<uint16_t>(kSbuf, 0, 4), 0x3f82);  // Tie: even (up).
  EXPECT_EQ(getBf16(kSbuf, 0, 6), -2.0f);
  EXPECT_EQ(getBf16(kSbuf, 1, 0), 5.0f);
  EXPECT_EQ(getBf16(kSbuf, 1, 6), 8.0f);
}

TEST_F(NcFunctionalDma, SbufToHbmBitExactAndStrided) {
  put<uint32_t>(kSbuf, 0, 0, 0x7fc00001u);  // NaN payload survives a same-dtype copy.
  putF32(kSbuf, 0, 4, 2.0f);
  putF32(kSbuf, 1, 0, 3.0f);
  putF32(kSbuf, 1, 4, 4.0f);
  // Store transposed into HBM: element (p, j) -> HBM element j*2 + p.
  ASSERT_TRUE(run("dma_copy.DMA dst=hbm[p0:1, off 0, [1,2], [2,2]]:f32 src=sbuf[p0:2, off 0, [1,2]]:f32").ok());
  EXPECT_EQ(get<uint32_t>(kHbm, 0, 0), 0x7fc00001u);
  EXPECT_EQ(getF32(kHbm, 0, 4), 3.0f);
  EXPECT_EQ(getF32(kHbm, 0, 8), 2.0f);
  EXPECT_EQ(getF32(kHbm, 0, 12), 4.0f);
}

TEST_F(NcFunctionalDma, HbmToHbmWideCountsAndReversal) {
  constexpr int kCount = 100000;  // Past the 16-bit count of on-chip patterns.
  for (int i = 0; i < kCount; ++i) put<int8_t>(kHbm, 0, i, static_cast<int8_t>(i % 101));
  ASSERT_TRUE(run("dma_copy.DMA dst=hbm[p0:1, off 200000, [-1,100000]]:i8 src=hbm[p0:1, off 0, [1,100000]]:i8").ok());
  EXPECT_EQ(get<int8_t>(kHbm, 0, 200000), 0);
  EXPECT_EQ(get<int8_t>(kHbm, 0, 200000 - 5), 5);
  EXPECT_EQ(get<int8_t>(kHbm, 0, 200000 - (kCount - 1)), static_cast<int8_t>((kCount - 1) % 101));
}

TEST_F(NcFunctionalDma, SbufToSbufAcrossPartitionsWithIntegerCast) {
  for (int p = 0; p < 4; ++p) putF32(kSbuf, p, 0, -1.5f * p);
  // [4 partitions, 1] f32 -> [1 partition, 4] i16 in partition 100.
  ASSERT_TRUE(run("dma_copy.DMA dst=sbuf[p100:1, off 64, [1,4]]:i16 src=sbuf[p0:4, off 0]:f32").ok());
  EXPECT_EQ(get<int16_t>(kSbuf, 100, 64), 0);
  EXPECT_EQ(get<int16_t>(kSbuf, 100, 66), -1);  // -1.5 truncates toward zero.
  EXPECT_EQ(get<int16_t>(kSbuf, 100, 70), -4);
}

TEST_F(NcFunctionalDma, LaunchRegisterPlacesTheHbmWindow) {
  // Two rows of 4 into a [2 heads, 8 positions, 4] cache at position r0 (a KV cache written in place).
  for (int p = 0; p < 2; ++p)
    for (int i = 0; i < 4; ++i) putF32(kSbuf, p, 4 * i, 10.0f * p + i);
  const std::string store = "dma_copy.DMA dst=hbm[p0:1, off 0, [32,2], [1,4]]:f32 src=sbuf[p0:2, off 0, [1,4]]:f32 "
                            "queue=q0 dyn=dst+r0*16<=7";
  state_->setLaunchRegisters({5});
  ASSERT_TRUE(run(store).ok());
  EXPECT_EQ(getF32(kHbm, 0, (5 * 4 + 2) * 4), 2.0f);         // Head 0, position 5.
  EXPECT_EQ(getF32(kHbm, 0, (8 * 4 + 5 * 4 + 3) * 4), 13.0f);  // Head 1, position 5.
  EXPECT_EQ(getF32(kHbm, 0, (4 * 4) * 4), 0.0f);             // Position 4 untouched.
  state_->setLaunchRegisters({8});
  EXPECT_EQ(runError(store), "instruction 0 (dma_copy.DMA): operand dst: launch register r0 = 8 is outside 0..7");
  state_->setLaunchRegisters({});
  EXPECT_EQ(runError(store),
            "instruction 0 (dma_copy.DMA): operand dst is placed by launch register r0; the launch set 0");
}

TEST_F(NcFunctionalDma, Errors) {
  Status psum = run("dma_copy.DMA dst=hbm[p0:1, off 0, [1,4]]:f32 src=psum[p0:1, off 0, [1,4]]:f32");
  ASSERT_FALSE(psum.ok());
  EXPECT_EQ(psum.diag().message,
            "instruction 0 (dma_copy.DMA): operand src is in PSUM; DMA cannot reach PSUM (evict through SBUF, "
            "section 4.3)");
  EXPECT_EQ(runError("dma_copy.DMA dst=psum[p0:1, off 0, [1,4]]:f32 src=hbm[p0:1, off 0, [1,4]]:f32"),
            "instruction 0 (dma_copy.DMA): operand dst is in PSUM; DMA cannot reach PSUM (evict through SBUF, "
            "section 4.3)");
  Status count = run("dma_copy.DMA dst=sbuf[p0:2, off 0, [1,4]]:f32 src=hbm[p0:1, off 0, [1,7]]:f32");
  ASSERT_FALSE(count.ok());
  EXPECT_EQ(count.diag().code, ErrorCode::ShapeMismatch);
  EXPECT_EQ(count.diag().message,
            "instruction 0 (dma_copy.DMA): operand dst [2, 4] has 8 elements but src [1, 7] has 7");
}

}  // namespace
}  // namespace tessel::nc::testing
