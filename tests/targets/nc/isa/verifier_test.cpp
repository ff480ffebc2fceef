// Each verifier rule: one instruction that violates it (with the message) and one at the boundary
// that is legal.
#include <gtest/gtest.h>

#include "targets/nc/isa/assembler.h"
#include "targets/nc/isa/verifier.h"
#include "targets/nc/machine/profile.h"

namespace tessel::nc {
namespace {

/// Violations of a one-line program, joined by '|'; "" when legal.
std::string violations(const std::string &line, const IsaLimits &limits = IsaLimits()) {
  auto program = assemble(line, "v.s");
  if (!program.ok()) return "assemble failed: " + program.diag().message;
  std::string joined;
  for (const std::string &error : verifyInstruction(program->at(0), 0, limits))
    joined += (joined.empty() ? "" : "|") + error;
  return joined;
}

const std::string kCopy = "tensor_copy.DVE src=sbuf[p0:128, off 0, [1,8]]:f32 dst=";

TEST(NcIsaVerifier, EngineAllowedForOpcode) {
  EXPECT_EQ(violations("iota.DVE dst=sbuf[p0:128, off 0, [1,8]]:i32"), "#0 iota.DVE: engine DVE may not run iota");
  EXPECT_EQ(violations("iota.POOL dst=sbuf[p0:128, off 0, [1,8]]:i32"), "");
}

TEST(NcIsaVerifier, PartitionRange) {
  EXPECT_EQ(violations("memset.DVE dst=sbuf[p0:129, off 0, [1,8]]:f32"),
            "#0 memset.DVE: dst: partitions p0:129 outside 0..128 (T1)");
  EXPECT_EQ(violations("memset.DVE dst=sbuf[p96:32, off 0, [1,8]]:f32"), "");
  EXPECT_EQ(violations("memset.DVE dst=sbuf[p0:0, off 0, [1,8]]:f32"),
            "#0 memset.DVE: dst: partitions p0:0 outside 0..128 (T1)");
  IsaLimits small;
  small.partitions = 64;
  EXPECT_EQ(violations("memset.DVE dst=sbuf[p64:1, off 0]:f32", small),
            "#0 memset.DVE: dst: partitions p64:1 outside 0..64 (T1)");
}

TEST(NcIsaVerifier, StartPartitionAlignment) {
  EXPECT_EQ(violations("memset.DVE dst=sbuf[p32:64, off 0]:f32"),
            "#0 memset.DVE: dst: start partition 32 not allowed for 64 partitions; must be a multiple of 64 (T6)");
  EXPECT_EQ(violations("memset.DVE dst=sbuf[p64:64, off 0]:f32"), "");
  EXPECT_EQ(violations("memset.DVE dst=sbuf[p64:33, off 0]:f32"), "");
  EXPECT_EQ(violations("memset.DVE dst=sbuf[p16:1, off 0]:f32"),
            "#0 memset.DVE: dst: start partition 16 not allowed for 1 partitions; must be a multiple of 32 (T6)");
}

TEST(NcIsaVerifier, ByteRange) {
  EXPECT_EQ(violations("memset.DVE dst=sbuf[p0:128, off 196604, [1,2]]:f32"),
            "#0 memset.DVE: dst: bytes [196604, 196612) outside sbuf (0..196608)");
  EXPECT_EQ(violations("memset.DVE dst=sbuf[p0:128, off 196600, [1,2]]:f32"), "");
  EXPECT_EQ(violations("memset.DVE dst=sbuf[p0:128, off 4, [-1,3]]:f32"),
            "#0 memset.DVE: dst: bytes [-4, 8) outside sbuf (0..196608)");
  EXPECT_EQ(violations("memset.DVE dst=sbuf[p0:128, off 8, [-1,3]]:f32"), "");
  EXPECT_EQ(violations("memset.DVE dst=psum[p0:128, off 16380, [1,2]]:f32"),
            "#0 memset.DVE: dst: bytes [16380, 16388) outside psum (0..16384)");
}

TEST(NcIsaVerifier, MemoryConnectivity) {
  EXPECT_EQ(violations(kCopy + "hbm[p0:1, off 0, [1,8]]:f32"), "#0 tensor_copy.DVE: dst: DVE cannot access HBM");
  EXPECT_EQ(violations("tensor_copy.POOL dst=psum[p0:128, off 0, [1,8]]:f32 src=sbuf[p0:128, off 0, [1,8]]:f32"),
            "#0 tensor_copy.POOL: dst: POOL cannot access psum (T11)");
  EXPECT_EQ(violations("dma_copy.DMA dst=psum[p0:128, off 0, [1,8]]:f32 src=sbuf[p0:128, off 0, [1,8]]:f32"),
            "#0 dma_copy.DMA: dst: DMA cannot access PSUM (section 4.3)");
  EXPECT_EQ(violations("dma_copy.DMA dst=sbuf[p0:128, off 0, [1,8]]:f32 src=hbm[p0:1, off 0, [8,128], [1,8]]:f32"), "");
  EXPECT_EQ(violations("dma_copy.DMA dst=sbuf[p0:128, off 0, [1,8]]:f32 src=hbm[p0:2, off 0, [1,8]]:f32"),
            "#0 dma_copy.DMA: src: HBM operand must use p0:1 (HBM is linear), got p0:2|"
            "#0 dma_copy.DMA: dst has 1024 elements, src 16");
}

std::string matmul(const std::string &dst, const std::string &stationary, const std::string &moving) {
  return "nc_matmul.PE dst=" + dst + " stationary=" + stationary + " moving=" + moving;
}

TEST(NcIsaVerifier, MatmulPsumOnlyDestinationAndDtypes) {
  std::string stat = "sbuf[p0:128, off 0, [1,128]]:bf16", mov = "sbuf[p0:128, off 256, [1,512]]:bf16";
  EXPECT_EQ(violations(matmul("psum[p0:128, off 0, [1,512]]:f32", stat, mov)), "");
  EXPECT_EQ(violations(matmul("sbuf[p0:128, off 4096, [1,512]]:f32", stat, mov)),
            "#0 nc_matmul.PE: dst: PE reads SBUF and writes PSUM only, got dst in sbuf|"
            "#0 nc_matmul.PE: dst: matmul output must be in PSUM, got sbuf");
  EXPECT_EQ(violations(matmul("psum[p0:128, off 0, [1,512]]:bf16", stat, mov)),
            "#0 nc_matmul.PE: dst: matmul output must be f32, got bf16 (section 3)");
  EXPECT_EQ(violations(matmul("psum[p0:128, off 0, [1,512]]:f32", "sbuf[p0:128, off 0, [1,128]]:f32", mov)),
            "#0 nc_matmul.PE: stationary f32 with moving bf16: f32/tf32 pairs only with f32/tf32 (T12)");
  EXPECT_EQ(violations(matmul("psum[p0:128, off 0, [1,512]]:f32", "sbuf[p0:128, off 0, [1,128]]:i8", mov)),
            "#0 nc_matmul.PE: stationary: PE input dtype i8 not one of f8e4m3 f8e5m2 bf16 f16 tf32 f32 (section 3)");
  EXPECT_EQ(violations(matmul("psum[p0:128, off 0, [1,512]]:f32", stat, "psum[p0:128, off 0, [1,512]]:bf16")),
            "#0 nc_matmul.PE: moving: PE reads SBUF and writes PSUM only, got source in psum");
}

TEST(NcIsaVerifier, MatmulShapeLimits) {
  std::string dst = "psum[p0:128, off 0, [1,512]]:f32";
  EXPECT_EQ(violations(matmul("psum[p0:128, off 0, [1,513]]:f32", "sbuf[p0:128, off 0, [1,128]]:bf16",
                              "sbuf[p0:128, off 256, [1,513]]:bf16")),
            "#0 nc_matmul.PE: K = 128, M = 128, N = 513; limits K <= 128, M <= 128, N <= 512 (T3)|"
            "#0 nc_matmul.PE: dst: bytes [0, 2052) cross a 2048-byte PSUM bank boundary (T2)");
  EXPECT_EQ(violations(matmul("psum[p0:128, off 0, [1,512]]:f32", "sbuf[p0:128, off 0, [2,129]]:bf16",
                              "sbuf[p0:128, off 256, [1,512]]:bf16")),
            "#0 nc_matmul.PE: K = 128, M = 129, N = 512; limits K <= 128, M <= 128, N <= 512 (T3)|"
            "#0 nc_matmul.PE: dst shape 128x512 does not match M x N = 129x512");
  EXPECT_EQ(violations(matmul(dst, "sbuf[p0:64, off 0, [1,128]]:bf16", "sbuf[p0:128, off 256, [1,512]]:bf16")),
            "#0 nc_matmul.PE: contraction K differs: stationary has 64 partitions, moving 128 (T4)");
  EXPECT_EQ(violations(matmul("psum[p0:128, off 1024, [1,512]]:f32", "sbuf[p0:128, off 0, [1,128]]:bf16",
                              "sbuf[p0:128, off 256, [1,512]]:bf16")),
            "#0 nc_matmul.PE: dst: bytes [1024, 3072) cross a 2048-byte PSUM bank boundary (T2)");
  EXPECT_EQ(violations(matmul("psum[p0:128, off 2048, [1,512]]:f32", "sbuf[p0:128, off 0, [1,128]]:bf16",
                              "sbuf[p0:128, off 256, [1,512]]:bf16")),
            "");
}

TEST(NcIsaVerifier, Transpose) {
  EXPECT_EQ(violations("nc_transpose.DVE dst=sbuf[p0:32, off 0, [1,32]]:f32 src=sbuf[p0:32, off 256, [1,32]]:f32"), "");
  EXPECT_EQ(violations("nc_transpose.DVE dst=sbuf[p0:33, off 0, [1,32]]:f32 src=sbuf[p0:32, off 256, [1,33]]:f32"),
            "#0 nc_transpose.DVE: src 32x33 exceeds the DVE transpose limit 32x32 (T9)");
  EXPECT_EQ(violations("nc_transpose.PE dst=psum[p0:64, off 0, [1,128]]:f32 src=sbuf[p0:128, off 0, [1,64]]:bf16"),
            "#0 nc_transpose.PE: dst dtype f32 differs from src dtype bf16 (T9)");
  EXPECT_EQ(violations("nc_transpose.PE dst=sbuf[p0:64, off 0, [1,128]]:bf16 src=sbuf[p0:128, off 512, [1,64]]:bf16"),
            "#0 nc_transpose.PE: dst: PE reads SBUF and writes PSUM only, got dst in sbuf|"
            "#0 nc_transpose.PE: dst: PE transpose writes PSUM, got sbuf");
}

TEST(NcIsaVerifier, DveActFreeSize) {
  EXPECT_EQ(violations("memset.DVE dst=psum[p0:128, off 0, [1,4096]]:u8"), "");
  EXPECT_EQ(violations("memset.DVE dst=psum[p0:128, off 0, [1,4097]]:u8"),
            "#0 memset.DVE: dst: free size 4097 exceeds 4096 elements in psum (T7)");
  EXPECT_EQ(violations("memset.DVE dst=sbuf[p0:128, off 0, [1,65535], [0,2]]:u8"),
            "#0 memset.DVE: dst: free size 131070 exceeds 65536 elements in sbuf (T7)");
}

TEST(NcIsaVerifier, BnStatsFreeSize) {
  std::string dst = "bn_stats.DVE dst=sbuf[p0:128, off 0, [1,6]]:f32 src=sbuf[p0:128, off 64, ";
  EXPECT_EQ(violations(dst + "[1,512]]:f32"), "");
  EXPECT_EQ(violations(dst + "[1,513]]:f32"), "#0 bn_stats.DVE: src free size 513 exceeds 512 (T8)");
}

TEST(NcIsaVerifier, TensorTensorNotBothPsum) {
  std::string head = "tensor_tensor.DVE dst=sbuf[p0:128, off 0, [1,8]]:f32 in0=psum[p0:128, off 0, [1,8]]:f32 in1=";
  EXPECT_EQ(violations(head + "sbuf[p0:128, off 64, [1,8]]:f32 op0=add"), "");
  EXPECT_EQ(violations(head + "psum[p0:128, off 64, [1,8]]:f32 op0=add"),
            "#0 tensor_tensor.DVE: in0 and in1 both in PSUM (T11)");
  EXPECT_EQ(violations(head + "sbuf[p0:128, off 64, [1,8]]:f32"), "#0 tensor_tensor.DVE: op0 is required");
}

TEST(NcIsaVerifier, TensorTensorScanRules) {
  std::string head = "tensor_tensor_scan.DVE dst=sbuf[p0:128, off 0, [1,8]]:f32 in0=sbuf[p0:128, off 64, [1,8]]:f32 "
                     "in1=sbuf[p0:128, off 128, [1,8]]:f32";
  EXPECT_EQ(violations(head + " op0=multiply op1=add"), "");
  EXPECT_EQ(violations(head + " op0=multiply op1=add initial=sbuf[p0:128, off 256]:f32"), "");
  EXPECT_EQ(violations(head + " op0=multiply"), "#0 tensor_tensor_scan.DVE: op0 and op1 are required");
  EXPECT_EQ(violations(head + " op0=multiply op1=add initial=sbuf[p0:128, off 256, [1,2]]:f32"),
            "#0 tensor_tensor_scan.DVE: initial: must be one element per partition ([P,1]), got free size 2");
  EXPECT_EQ(violations("tensor_tensor_scan.POOL dst=sbuf[p0:128, off 0, [1,8]]:f32 in0=sbuf[p0:128, off 64, [1,8]]:f32 "
                       "in1=sbuf[p0:128, off 128, [1,8]]:f32 op0=multiply op1=add"),
            "#0 tensor_tensor_scan.POOL: engine POOL may not run tensor_tensor_scan");
}

TEST(NcIsaVerifier, TensorScalarReduceRules) {
  std::string head = "tensor_scalar_reduce.DVE dst=sbuf[p0:128, off 0, [1,8]]:f32 src=sbuf[p0:128, off 64, [1,8]]:f32 ";
  std::string accum = "accum=sbuf[p0:128, off 256]:f32 ";
  EXPECT_EQ(violations(head + accum + "op0=multiply op1=add imm=2"), "");
  EXPECT_EQ(violations(head + accum + "scalar0=sbuf[p0:128, off 512]:f32 op0=subtract op1=minimum"), "");
  EXPECT_EQ(violations(head + accum + "op1=add"), "#0 tensor_scalar_reduce.DVE: op0 is required");
  EXPECT_EQ(violations(head + accum + "op0=bitwise_and op1=add"),
            "#0 tensor_scalar_reduce.DVE: op0 bitwise_and is bitwise; tensor_scalar_reduce takes an arithmetic op");
  EXPECT_EQ(violations(head + accum + "op0=multiply"),
            "#0 tensor_scalar_reduce.DVE: op1 (the reduce op) none is not one of add, subtract, multiply, maximum, "
            "minimum");
  EXPECT_EQ(violations(head + "accum=sbuf[p0:128, off 256, [1,2]]:f32 op0=multiply op1=add"),
            "#0 tensor_scalar_reduce.DVE: accum: must be one element per partition ([P,1]), got free size 2");
  EXPECT_EQ(violations(head + "accum=sbuf[p0:64, off 256]:f32 op0=multiply op1=add"),
            "#0 tensor_scalar_reduce.DVE: accum: 64 partitions, dst has 128; a [P,1] operand covers dst's partitions");
  EXPECT_EQ(violations("tensor_scalar_reduce.ACT dst=sbuf[p0:128, off 0, [1,8]]:f32 src=sbuf[p0:128, off 64, [1,8]]:f32 " +
                       accum + "op0=multiply op1=add"),
            "#0 tensor_scalar_reduce.ACT: engine ACT may not run tensor_scalar_reduce");
}

TEST(NcIsaVerifier, ActivationFuncAndReduceOp) {
  std::string head = "activation.ACT dst=sbuf[p0:128, off 0, [1,8]]:f32 src=psum[p0:128, off 0, [1,8]]:f32 ";
  std::string accum = "accum=sbuf[p0:128, off 64, [1,1]]:f32 ";
  EXPECT_EQ(violations(head + accum + "op0=add func=exp"), "");
  EXPECT_EQ(violations(head + accum + "op0=maximum func=exp"),
            "#0 activation.ACT: ACT reduce op maximum not supported on this profile (T15)");
  IsaLimits v3;
  v3.actReduceOps = aluOpBit(AluOp::Add) | aluOpBit(AluOp::Maximum) | aluOpBit(AluOp::Minimum) | aluOpBit(AluOp::Multiply);
  EXPECT_EQ(violations(head + accum + "op0=maximum func=exp", v3), "");
  EXPECT_EQ(violations(head), "#0 activation.ACT: func is required");
  EXPECT_EQ(violations(head + "bias=sbuf[p0:128, off 64, [1,2]]:f32 func=exp"),
            "#0 activation.ACT: bias: must be one element per partition ([P,1]), got free size 2");
  EXPECT_EQ(violations(head + "bias=sbuf[p0:128, off 64, [1,1]]:f32 func=exp"), "");
}

TEST(NcIsaVerifier, ActivationImmediateBiasOnlyWhereTheProfileHasIt) {
  std::string head = "activation.ACT dst=sbuf[p0:128, off 0, [1,8]]:f32 src=psum[p0:128, off 0, [1,8]]:f32 func=exp ";
  EXPECT_EQ(violations(head + "imm=0.5,0"), "");  // A scale immediate and a zero bias are fine.
  EXPECT_EQ(violations(head + "imm=1,0.25"),
            "#0 activation.ACT: immediate bias 0.25 not supported; the bias must be a [P,1] operand (T15)");
  IsaLimits v3;
  v3.actBiasImmediate = true;
  EXPECT_EQ(violations(head + "imm=1,0.25", v3), "");
}

TEST(NcIsaVerifier, PoolOperandsInSbuf) {
  EXPECT_EQ(violations("affine_select.POOL dst=sbuf[p0:128, off 0, [1,8]]:f32 src=sbuf[p0:128, off 64, [1,8]]:f32"), "");
  EXPECT_EQ(violations("affine_select.POOL dst=sbuf[p0:128, off 0, [1,8]]:f32 src=hbm[p0:1, off 64, [1,8]]:f32"),
            "#0 affine_select.POOL: src: POOL cannot access hbm (T11)|"
            "#0 affine_select.POOL: operands must be in SBUF (T13)");
}

TEST(NcIsaVerifier, SbufPsumStrideIsInt16) {
  EXPECT_EQ(violations("memset.POOL dst=sbuf[p0:128, off 0, [32767,2]]:u8"), "");
  EXPECT_EQ(violations("memset.POOL dst=sbuf[p0:128, off 0, [32768,2]]:u8"),
            "#0 memset.POOL: dst: free dim 0 stride 32768 outside the sbuf access-pattern range -32768..32767 "
            "(int16 stride)");
  EXPECT_EQ(violations("memset.POOL dst=sbuf[p0:128, off 32768, [1,1], [-32768,2]]:u8"), "");
  EXPECT_EQ(violations("memset.POOL dst=sbuf[p0:128, off 32769, [1,1], [-32769,2]]:u8"),
            "#0 memset.POOL: dst: free dim 1 stride -32769 outside the sbuf access-pattern range -32768..32767 "
            "(int16 stride)");
  EXPECT_EQ(violations("memset.DVE dst=psum[p0:128, off 0, [40000,1]]:f32"),
            "#0 memset.DVE: dst: free dim 0 stride 40000 outside the psum access-pattern range -32768..32767 "
            "(int16 stride)");
}

TEST(NcIsaVerifier, SbufPsumCountIsUint16) {
  EXPECT_EQ(violations("memset.POOL dst=sbuf[p0:128, off 0, [1,65535]]:u8"), "");
  EXPECT_EQ(violations("memset.POOL dst=sbuf[p0:128, off 0, [1,65536]]:u8"),
            "#0 memset.POOL: dst: free dim 0 count 65536 outside the sbuf access-pattern range 1..65535 (uint16 count)");
  EXPECT_EQ(violations("memset.POOL dst=sbuf[p0:128, off 0, [1,0]]:u8"),
            "#0 memset.POOL: dst: free dim 0 has count 0; every dim needs count >= 1");
}

TEST(NcIsaVerifier, HbmDimsAreWide) {
  std::string dst = "dma_copy.DMA dst=sbuf[p0:128, off 0, [1,1000]]:bf16 src=";
  EXPECT_EQ(violations(dst + "hbm[p0:1, off 0, [1,128000]]:bf16 queue=q0"), "");
  EXPECT_EQ(violations(dst + "hbm[p0:1, off 0, [100000,128], [1,1000]]:bf16 queue=q0"), "");
  EXPECT_EQ(violations(dst + "hbm[p0:1, off 256000000, [-1000000,128], [1,1000]]:bf16 queue=q0"), "");
  EXPECT_EQ(violations(dst + "hbm[p0:1, off 0, [1,0], [1,1000]]:bf16 queue=q0"),
            "#0 dma_copy.DMA: src: free dim 0 has count 0; every dim needs count >= 1|"
            "#0 dma_copy.DMA: dst has 128000 elements, src 0");
  // Still inside the core's HBM.
  EXPECT_EQ(violations(dst + "hbm[p0:1, off 0, [100000000,128], [1,1000]]:bf16 queue=q0"),
            "#0 dma_copy.DMA: src: bytes [0, 25400002000) outside hbm (0..17179869184)");
  EXPECT_EQ(violations(dst + "hbm[p0:1, off 0, [9223372036854775807,128], [1,1000]]:bf16 queue=q0"),
            "#0 dma_copy.DMA: src: free dims span more than 64-bit byte addresses; outside hbm (0..17179869184)");
  EXPECT_EQ(violations(dst + "hbm[p0:1, off 18446744073709551615, [1,128000]]:bf16 queue=q0"),
            "#0 dma_copy.DMA: src: offset 18446744073709551615 outside hbm (0..17179869184)");
}

TEST(NcIsaVerifier, Waits) {
  auto program = assemble("memset.DVE dst=sbuf[p0:1, off 0]:f32 wait=s0>=1,s1>=1,s2>=1,s3>=1,s4>=1,s5>=1,s6>=1,s7>=1", "w.s");
  ASSERT_TRUE(program.ok()) << program.diag().str();
  Instruction insn = program->at(0);
  EXPECT_TRUE(verifyInstruction(insn, 0, IsaLimits()).empty());
  insn.waits.push_back({8, 1});
  EXPECT_EQ(verifyInstruction(insn, 0, IsaLimits()),
            std::vector<std::string>{"#0 memset.DVE: 9 semaphore waits; at most 8"});
}

TEST(NcIsaVerifier, DmaQueue) {
  std::string copy = "dma_copy.DMA dst=sbuf[p0:128, off 0, [1,8]]:f32 src=hbm[p0:1, off 0, [1,1024]]:f32 ";
  EXPECT_EQ(violations(copy + "queue=q15"), "");
  EXPECT_EQ(violations(copy + "queue=q16"), "#0 dma_copy.DMA: queue q16 outside the DMA queues q0..q15");
  IsaLimits four;
  four.dmaQueues = 4;
  EXPECT_EQ(violations(copy + "queue=q4", four), "#0 dma_copy.DMA: queue q4 outside the DMA queues q0..q3");
  EXPECT_EQ(violations("memset.DVE dst=sbuf[p0:1, off 0]:f32 queue=q0"), "");
  EXPECT_EQ(violations("memset.DVE dst=sbuf[p0:1, off 0]:f32 queue=q1"),
            "#0 memset.DVE: queue q1 on a non-DMA instruction; only dma_copy has a queue (must be 0)");
}

TEST(NcIsaVerifier, DynamicOffsetOnlyOnADmaCopysHbmOperand) {
  std::string copy = "dma_copy.DMA dst=sbuf[p0:128, off 0, [1,8]]:f32 src=hbm[p0:1, off 0, [1,1024]]:f32 queue=q0 ";
  EXPECT_EQ(violations(copy + "dyn=src+r0*32<=100"), "");
  EXPECT_EQ(violations(copy + "dyn=dst+r0*32<=100"),
            "#0 dma_copy.DMA: dynamic offset: operand slot 0 is not an HBM operand; only HBM addresses are placed at "
            "launch");
  EXPECT_EQ(violations("memset.DVE dst=sbuf[p0:1, off 0]:f32 dyn=dst+r1*4<=2"),
            "#0 memset.DVE: a dynamic offset on memset; only dma_copy takes one");
}

TEST(NcIsaVerifier, PerPartitionScalarOperands) {
  std::string ts = "tensor_scalar.DVE dst=sbuf[p0:128, off 0, [1,8]]:f32 src=sbuf[p0:128, off 64, [1,8]]:f32 ";
  EXPECT_EQ(violations(ts + "scalar0=sbuf[p0:128, off 128]:f32 scalar1=sbuf[p0:128, off 132, [1,1]]:f32 op0=add op1=add"),
            "");
  EXPECT_EQ(violations(ts + "scalar0=sbuf[p0:128, off 128, [1,2]]:f32 op0=add"),
            "#0 tensor_scalar.DVE: scalar0: must be one element per partition ([P,1]), got free size 2");
  EXPECT_EQ(violations(ts + "scalar0=sbuf[p0:64, off 128]:f32 op0=add"),
            "#0 tensor_scalar.DVE: scalar0: 64 partitions, dst has 128; a [P,1] operand covers dst's partitions");
  EXPECT_EQ(violations(ts + "scalar1=sbuf[p0:128, off 128]:f32 op0=add"),
            "#0 tensor_scalar.DVE: scalar1 given but op1 is none");
  std::string act = "activation.ACT dst=sbuf[p0:128, off 0, [1,8]]:f32 src=sbuf[p0:128, off 64, [1,8]]:f32 func=exp ";
  EXPECT_EQ(violations(act + "scale=sbuf[p0:128, off 128]:f32"), "");
  EXPECT_EQ(violations(act + "scale=sbuf[p0:128, off 128, [1,4]]:f32"),
            "#0 activation.ACT: scale: must be one element per partition ([P,1]), got free size 4");
}

TEST(NcIsaVerifier, ActivationAccumReduceOps) {
  std::string head = "activation.ACT dst=sbuf[p0:128, off 0, [1,8]]:f32 src=psum[p0:128, off 0, [1,8]]:f32 "
                     "accum=sbuf[p0:128, off 64, [1,1]]:f32 func=exp ";
  IsaLimits v3;
  v3.actReduceOps = aluOpBit(AluOp::Add) | aluOpBit(AluOp::Maximum) | aluOpBit(AluOp::Minimum) | aluOpBit(AluOp::Multiply);
  for (const char *op : {"add", "maximum", "minimum", "multiply"})
    EXPECT_EQ(violations(head + "op0=" + op, v3), "") << op;
  EXPECT_EQ(violations(head + "op0=subtract", v3),
            "#0 activation.ACT: accum reduce op subtract is not one of add, maximum, minimum, multiply");
  EXPECT_EQ(violations(head), "#0 activation.ACT: accum needs a reduce op in op0");
}

TEST(NcIsaVerifier, LimitsFromProfiles) {
  auto v2 = loadProfile("nc-v2");
  auto v3 = loadProfile("nc-v3");
  ASSERT_TRUE(v2.ok() && v3.ok());
  // The defaults are nc-v2's numbers.
  EXPECT_TRUE(isaLimitsFor(*v2) == IsaLimits());
  IsaLimits limits3 = isaLimitsFor(*v3);
  EXPECT_EQ(limits3.actReduceOps, aluOpBit(AluOp::Add) | aluOpBit(AluOp::Maximum) | aluOpBit(AluOp::Minimum) |
                                      aluOpBit(AluOp::Multiply));
  EXPECT_TRUE(limits3.actBiasImmediate);
  EXPECT_EQ(limits3.dmaQueues, v3->dma.queuesPerEngine);
  EXPECT_EQ(limits3.sbufBytesPerPartition, static_cast<uint64_t>(v3->sbuf.bytesPerPartition));
  EXPECT_EQ(limits3.psumBankBytes, 2048u);
}

TEST(NcIsaVerifier, ProgramStatusListsEveryViolation) {
  auto program = assemble("iota.DVE dst=sbuf[p0:1, off 0]:i32\nmemset.DVE dst=sbuf[p0:1, off 0]:f32\n"
                          "memset.DVE dst=sbuf[p1:1, off 0]:f32\n", "p.s");
  ASSERT_TRUE(program.ok());
  Status status = verifyProgram(*program);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.diag().message,
            "nc program: 2 tile-rule violation(s):\n  #0 iota.DVE: engine DVE may not run iota\n"
            "  #2 memset.DVE: dst: start partition 1 not allowed for 1 partitions; must be a multiple of 32 (T6)");
}

TEST(NcIsaVerifier, Collectives) {
  EXPECT_EQ(violations("all_gather.SP dst=sbuf[p0:128, off 0, [1,64]]:bf16 cores=2"), "");
  EXPECT_EQ(violations("all_reduce.SP dst=sbuf[p0:128, off 0, [1,64]]:f32 op0=add cores=1"), "");
  EXPECT_EQ(violations("all_gather.DVE dst=sbuf[p0:128, off 0, [1,64]]:bf16 cores=2"),
            "#0 all_gather.DVE: engine DVE may not run all_gather");
  EXPECT_EQ(violations("all_gather.SP dst=sbuf[p0:128, off 0, [1,64]]:bf16 cores=0"),
            "#0 all_gather.SP: cores=0 outside the chip's cores 1..2");
  IsaLimits v3;
  v3.coresPerChip = 8;
  EXPECT_EQ(violations("all_gather.SP dst=sbuf[p0:96, off 0, [1,64]]:bf16 cores=9", v3),
            "#0 all_gather.SP: cores=9 outside the chip's cores 1..8|"
            "#0 all_gather.SP: dst: 96 partitions do not split into 9 equal parts, one per core");
  EXPECT_EQ(violations("all_gather.SP dst=sbuf[p0:128, off 0, [1,64]]:bf16 cores=8", v3), "");
  EXPECT_EQ(violations("all_gather.SP dst=psum[p0:128, off 0, [1,64]]:f32 cores=2"),
            "#0 all_gather.SP: dst: collectives work on SBUF, got psum");
  EXPECT_EQ(violations("all_reduce.SP dst=sbuf[p0:128, off 0, [1,64]]:i32 op0=maximum cores=2"),
            "#0 all_reduce.SP: op0 maximum is not add; all_reduce supports add only|"
            "#0 all_reduce.SP: dst dtype i32 is not f32 or bf16");
  EXPECT_EQ(violations(kCopy + "sbuf[p0:128, off 64, [1,8]]:f32 cores=2"),
            "#0 tensor_copy.DVE: cores=2 on a non-collective instruction; only all_gather and all_reduce have a "
            "core count (must be 0)");
}

}  // namespace
}  // namespace tessel::nc
