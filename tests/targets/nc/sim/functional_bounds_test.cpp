// Operand bounds: every element must lie inside its partition (SBUF, PSUM) or inside HBM; the error
// names the instruction, the operand, the partition and the byte range. A failing instruction
// writes nothing.
#include "functional_fixture.h"

namespace tessel::nc::testing {
namespace {

class NcFunctionalBounds : public FunctionalTest {};

TEST_F(NcFunctionalBounds, SbufPastThePartition) {
  const std::string prefix = "tensor_tensor.DVE dst=sbuf[p32:32, off 0, [1,3]]:f32 in0=sbuf[p32:32, off 0, [1,3]]:f32 ";
  Status status = run("memset.DVE dst=sbuf[p0:1, off 0]:f32 imm=1\n" + prefix +
                      "in1=sbuf[p32:32, off 196600, [1,3]]:f32 op0=add");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.diag().code, ErrorCode::RuntimeError);
  EXPECT_EQ(status.diag().message,
            "instruction 1 (tensor_tensor.DVE): operand in1 reads SBUF partition 32 bytes 196600..196612, past the "
            "196608-byte partition");
  // The last element ending exactly at the partition end is fine.
  EXPECT_TRUE(run(prefix + "in1=sbuf[p32:32, off 196596, [1,3]]:f32 op0=add").ok());
  // A negative stride running before byte 0.
  EXPECT_EQ(runError(prefix + "in1=sbuf[p32:32, off 4, [-1,3]]:f32 op0=add"),
            "instruction 0 (tensor_tensor.DVE): operand in1 reads SBUF partition 32 bytes -4..8, before the start of "
            "the partition");
  // The outer dim's span counts too.
  EXPECT_NE(runError("memset.DVE dst=sbuf[p0:1, off 0, [49152,2], [1,1]]:f32 imm=0")
                .find("operand dst writes SBUF partition 0 bytes 0..196612, past the 196608-byte partition"),
            std::string::npos);
}

TEST_F(NcFunctionalBounds, PsumAndPartitionsAndHbm) {
  EXPECT_EQ(runError("memset.DVE dst=psum[p0:128, off 16380, [1,2]]:f32 imm=0"),
            "instruction 0 (memset.DVE): operand dst writes PSUM partition 0 bytes 16380..16388, past the 16384-byte "
            "partition");
  EXPECT_EQ(runError("memset.DVE dst=sbuf[p96:64, off 0]:f32 imm=0"),
            "instruction 0 (memset.DVE): operand dst writes SBUF partitions 96..159, past the 128 partitions");
  EXPECT_EQ(runError("dma_copy.DMA dst=sbuf[p0:1, off 0, [1,2]]:f32 src=hbm[p0:1, off 1048572, [1,2]]:f32"),
            "instruction 0 (dma_copy.DMA): operand src reads HBM bytes 1048572..1048580, past the 1048576-byte HBM");
  EXPECT_EQ(runError("dma_copy.DMA dst=sbuf[p0:2, off 0, [1,2]]:f32 src=hbm[p0:2, off 0, [1,2]]:f32"),
            "instruction 0 (dma_copy.DMA): operand src is in HBM but names partitions p0:2; HBM is linear (p0:1)");
  EXPECT_EQ(runError("tensor_copy.DVE dst=sbuf[p0:1, off 0, [1,2]]:f32 src=hbm[p0:1, off 0, [1,2]]:f32"),
            "instruction 0 (tensor_copy.DVE): operand src is in HBM; only dma_copy reaches HBM");
}

TEST_F(NcFunctionalBounds, FailedInstructionWritesNothing) {
  putF32(kSbuf, 0, 0, 5.0f);
  EXPECT_FALSE(run("tensor_copy.DVE dst=sbuf[p0:1, off 0, [1,2]]:f32 src=sbuf[p0:1, off 196604, [1,2]]:f32").ok());
  EXPECT_EQ(getF32(kSbuf, 0, 0), 5.0f);
}

}  // namespace
}  // namespace tessel::nc::testing
