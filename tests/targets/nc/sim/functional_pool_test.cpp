// iota and affine_select: affine functions of the (relative) partition index and the flat free
// index; the causal mask as affine_select.
#include <cmath>
#include <limits>

#include "functional_fixture.h"

namespace tessel::nc::testing {
namespace {

class NcFunctionalPool : public FunctionalTest {};

TEST_F(NcFunctionalPool, IotaPartitionAndFreeIndex) {
  ASSERT_TRUE(run("iota.POOL dst=sbuf[p32:4, off 0, [1,5]]:i32 imm=10,100,1").ok());
  for (int p = 0; p < 4; ++p)
    for (int k = 0; k < 5; ++k) EXPECT_EQ(get<int32_t>(kSbuf, 32 + p, 4 * k), 10 + 100 * p + k);
  // Two free dims: k is the flat index; strided destination; f32 output.
  ASSERT_TRUE(run("iota.POOL dst=sbuf[p0:2, off 64, [1,2], [2,3]]:f32 imm=0,-1,2").ok());
  // Element (i, j) sits at element offset i + 2 j and holds -p + 2 * (3 i + j).
  EXPECT_EQ(getF32(kSbuf, 1, 64 + 4 * (1 + 2 * 2)), -1.0f + 2 * (3 + 2));
  EXPECT_EQ(getF32(kSbuf, 0, 64 + 4 * 2), 2.0f);
  // Integer destinations saturate.
  ASSERT_TRUE(run("iota.POOL dst=sbuf[p0:4, off 128]:i8 imm=-100,100,0").ok());
  EXPECT_EQ(get<int8_t>(kSbuf, 0, 128), -100);
  EXPECT_EQ(get<int8_t>(kSbuf, 2, 128), 100);
  EXPECT_EQ(get<int8_t>(kSbuf, 3, 128), 127);
}

TEST_F(NcFunctionalPool, AffineSelectCausalMask) {
  for (int p = 0; p < 4; ++p)
    for (int k = 0; k < 4; ++k) putF32(kSbuf, p, 4 * k, static_cast<float>(10 * p + k));
  // value = p - k: keep where k <= p, -inf elsewhere.
  ASSERT_TRUE(run("affine_select.POOL dst=sbuf[p0:4, off 64, [1,4]]:f32 src=sbuf[p0:4, off 0, [1,4]]:f32 "
                  "imm=bits:0xff800000,1,-1")
                  .ok());
  for (int p = 0; p < 4; ++p)
    for (int k = 0; k < 4; ++k) {
      float got = getF32(kSbuf, p, 64 + 4 * k);
      if (k <= p) EXPECT_EQ(got, 10.0f * p + k);
      else EXPECT_EQ(got, -std::numeric_limits<float>::infinity());
    }
  // With an offset (imm[3] = 1: k <= p + 1), a bf16 destination and a finite fill.
  ASSERT_TRUE(run("affine_select.POOL dst=sbuf[p0:4, off 128, [1,4]]:bf16 src=sbuf[p0:4, off 0, [1,4]]:f32 "
                  "imm=-30000,1,-1,1")
                  .ok());
  EXPECT_EQ(getBf16(kSbuf, 0, 128 + 2), 1.0f);
  EXPECT_EQ(getBf16(kSbuf, 0, 128 + 4), -29952.0f);  // -30000 rounded to bf16.
  EXPECT_EQ(getBf16(kSbuf, 2, 128 + 6), 23.0f);
  EXPECT_EQ(runError("affine_select.POOL dst=sbuf[p0:4, off 128, [1,4]]:f32 src=sbuf[p0:4, off 0, [1,4]]:f32 imm=0"),
            "instruction 0 (affine_select.POOL): affine_select needs imm=<fill>,<partition coefficient>,<free "
            "coefficient>[,<offset>]; got 1 immediate(s)");
}

}  // namespace
}  // namespace tessel::nc::testing
