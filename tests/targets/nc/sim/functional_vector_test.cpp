// DVE/POOL elementwise and reduction instructions: tensor_tensor (arithmetic, comparisons, bitwise
// on raw integer bits), broadcast (stride 0) and negative-stride access patterns, tensor_scalar with
// immediates and [P,1] scalar operands, tensor_reduce over the innermost free dim, tensor_copy,
// memset, bn_stats + bn_aggr against a direct mean/variance, tensor_tensor_scan (the linear
// recurrence from an immediate or a [P,1] initial value) and tensor_scalar_reduce against the
// tensor_scalar results folded in fp32.
#include <algorithm>
#include <cmath>
#include <vector>

#include "functional_fixture.h"

namespace tessel::nc::testing {
namespace {

class NcFunctionalVector : public FunctionalTest {
 protected:
  void putRow(MemSpace space, int64_t p, uint64_t offset, const std::vector<float> &values) {
    for (size_t i = 0; i < values.size(); ++i) putF32(space, p, offset + 4 * i, values[i]);
  }
  std::vector<float> getRow(MemSpace space, int64_t p, uint64_t offset, int count) {
    std::vector<float> values;
    for (int i = 0; i < count; ++i) values.push_back(getF32(space, p, offset + 4 * i));
    return values;
  }
  std::vector<int32_t> getI32Row(int64_t p, uint64_t offset, int count) {
    std::vector<int32_t> values;
    for (int i = 0; i < count; ++i) values.push_back(get<int32_t>(kSbuf, p, offset + 4 * i));
    return values;
  }
};

using Row = std::vector<float>;

TEST_F(NcFunctionalVector, TensorTensorArithmeticAndCompare) {
  putRow(kSbuf, 0, 0, {1, 2, 3, 4});
  putRow(kSbuf, 1, 0, {5, 6, 7, 8});
  putRow(kSbuf, 0, 64, {4, 3, 2, 1});
  putRow(kSbuf, 1, 64, {-1, -2, -3, -4});
  const std::string operands = " dst=sbuf[p0:2, off 128, [1,4]]:f32 in0=sbuf[p0:2, off 0, [1,4]]:f32 "
                               "in1=sbuf[p0:2, off 64, [1,4]]:f32 op0=";
  ASSERT_TRUE(run("tensor_tensor.DVE" + operands + "subtract").ok());
  EXPECT_EQ(getRow(kSbuf, 0, 128, 4), (Row{-3, -1, 1, 3}));
  EXPECT_EQ(getRow(kSbuf, 1, 128, 4), (Row{6, 8, 10, 12}));
  ASSERT_TRUE(run("tensor_tensor.POOL" + operands + "greater").ok());
  EXPECT_EQ(getRow(kSbuf, 0, 128, 4), (Row{0, 0, 1, 1}));
  ASSERT_TRUE(run("tensor_tensor.DVE" + operands + "abs_max").ok());
  EXPECT_EQ(getRow(kSbuf, 1, 128, 4), (Row{5, 6, 7, 8}));
  ASSERT_TRUE(run("tensor_tensor.DVE" + operands + "power").ok());
  EXPECT_EQ(getRow(kSbuf, 0, 128, 4), (Row{1, 8, 9, 4}));
  ASSERT_TRUE(run("tensor_tensor.DVE" + operands + "logical_xor").ok());
  EXPECT_EQ(getRow(kSbuf, 0, 128, 4), (Row{0, 0, 0, 0}));
}

TEST_F(NcFunctionalVector, BroadcastAndNegativeStrides) {
  putRow(kSbuf, 0, 0, {1, 2, 3, 4});
  putRow(kSbuf, 0, 64, {10, 20});
  // in0 reversed (start at the last element, stride -1); in1 = element 0 repeated (stride 0) in the
  // outer dim of a 2x2 view: dst[i][j] = in0 reversed [i*2+j] + in1[i].
  ASSERT_TRUE(
      run("tensor_tensor.DVE dst=sbuf[p0:1, off 128, [2,2], [1,2]]:f32 in0=sbuf[p0:1, off 12, [-2,2], [-1,2]]:f32 "
          "in1=sbuf[p0:1, off 64, [1,2], [0,2]]:f32 op0=add")
          .ok());
  EXPECT_EQ(getRow(kSbuf, 0, 128, 4), (Row{14, 13, 22, 21}));
  // Writing through a negative stride reverses.
  ASSERT_TRUE(run("tensor_copy.DVE dst=sbuf[p0:1, off 204, [-1,4]]:f32 src=sbuf[p0:1, off 0, [1,4]]:f32").ok());
  EXPECT_EQ(getRow(kSbuf, 0, 192, 4), (Row{4, 3, 2, 1}));
}

TEST_F(NcFunctionalVector, BitwiseOpsUseRawIntegerBits) {
  put<int32_t>(kSbuf, 0, 0, 0x0ff0);
  put<int32_t>(kSbuf, 0, 4, -1);
  put<int32_t>(kSbuf, 0, 64, 0x00ff);
  put<int32_t>(kSbuf, 0, 68, 0x1234);
  ASSERT_TRUE(run("tensor_tensor.DVE dst=sbuf[p0:1, off 128, [1,2]]:i32 in0=sbuf[p0:1, off 0, [1,2]]:i32 "
                  "in1=sbuf[p0:1, off 64, [1,2]]:i32 op0=bitwise_and")
                  .ok());
  EXPECT_EQ(getI32Row(0, 128, 2), (std::vector<int32_t>{0x00f0, 0x1234}));
  // i8 -128 (0x80) shifted right logically by 1 is 0x40; invert of u8 0 is 255.
  put<int8_t>(kSbuf, 0, 256, -128);
  put<uint8_t>(kSbuf, 0, 260, 0);
  ASSERT_TRUE(
      run("tensor_scalar.DVE dst=sbuf[p0:1, off 264]:i8 src=sbuf[p0:1, off 256]:i8 op0=logical_shift_right imm=1\n"
          "tensor_scalar.DVE dst=sbuf[p0:1, off 268]:u8 src=sbuf[p0:1, off 260]:u8 op0=invert\n"
          "tensor_scalar.DVE dst=sbuf[p0:1, off 272]:i32 src=sbuf[p0:1, off 256]:i8 op0=left_shift imm=4")
          .ok());
  EXPECT_EQ(get<int8_t>(kSbuf, 0, 264), 0x40);
  EXPECT_EQ(get<uint8_t>(kSbuf, 0, 268), 255);
  EXPECT_EQ(get<int32_t>(kSbuf, 0, 272), 0);  // 0x80 << 4 wraps to 0 in the 8-bit source width.
  Status status = run("tensor_tensor.DVE dst=sbuf[p0:1, off 128]:f32 in0=sbuf[p0:1, off 0]:f32 "
                      "in1=sbuf[p0:1, off 64]:i32 op0=bitwise_or");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.diag().code, ErrorCode::TypeMismatch);
  EXPECT_EQ(status.diag().message,
            "instruction 0 (tensor_tensor.DVE): bitwise op bitwise_or needs integer operands; operand in0 is f32");
}

TEST_F(NcFunctionalVector, TensorTensorShapeMismatch) {
  Status status = run("tensor_tensor.DVE dst=sbuf[p0:2, off 128, [1,4]]:f32 in0=sbuf[p0:2, off 0, [1,4]]:f32 "
                      "in1=sbuf[p0:2, off 64, [1,3]]:f32 op0=add");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.diag().code, ErrorCode::ShapeMismatch);
  EXPECT_EQ(status.diag().message,
            "instruction 0 (tensor_tensor.DVE): operand in0 has shape [2, 4] but in1 has shape [2, 3]");
  // Dims of count 1 do not change the shape.
  EXPECT_TRUE(run("tensor_tensor.DVE dst=sbuf[p0:2, off 128, [4,1], [1,4]]:f32 in0=sbuf[p0:2, off 0, [1,4], [1,1]]:f32 "
                  "in1=sbuf[p0:2, off 64, [1,4]]:f32 op0=add")
                  .ok());
  EXPECT_EQ(runError("tensor_tensor.DVE dst=sbuf[p0:2, off 128, [4,2], [1,2]]:f32 in0=sbuf[p0:2, off 0, [1,4]]:f32 "
                     "in1=sbuf[p0:2, off 64, [1,4]]:f32 op0=add"),
            "instruction 0 (tensor_tensor.DVE): operand dst has shape [2, 2, 2] but in0 has shape [2, 4]");
}

TEST_F(NcFunctionalVector, TensorTensorScanRunsTheRecurrence) {
  putRow(kSbuf, 0, 0, {2, 0.5f, 1, 3});   // in0 (a)
  putRow(kSbuf, 1, 0, {1, 1, 1, 1});
  putRow(kSbuf, 0, 64, {1, 2, 3, 4});     // in1 (b)
  putRow(kSbuf, 1, 64, {1, -1, 1, -1});
  putF32(kSbuf, 0, 192, 10);               // initial[P,1]
  putF32(kSbuf, 1, 192, -2);
  const std::string operands = " dst=sbuf[p0:2, off 128, [1,4]]:f32 in0=sbuf[p0:2, off 0, [1,4]]:f32 "
                               "in1=sbuf[p0:2, off 64, [1,4]]:f32 op0=multiply op1=add";
  // r = a * r + b from r = 0 (imm[0] absent): p0: 1, 2.5, 5.5, 20.5; p1: 1, 0, 1, 0.
  ASSERT_TRUE(run("tensor_tensor_scan.DVE" + operands).ok());
  EXPECT_EQ(getRow(kSbuf, 0, 128, 4), (Row{1, 2.5f, 5.5f, 20.5f}));
  EXPECT_EQ(getRow(kSbuf, 1, 128, 4), (Row{1, 0, 1, 0}));
  // From an immediate and from a per-partition initial value.
  ASSERT_TRUE(run("tensor_tensor_scan.DVE" + operands + " imm=1").ok());
  EXPECT_EQ(getRow(kSbuf, 0, 128, 4), (Row{3, 3.5f, 6.5f, 23.5f}));
  ASSERT_TRUE(run("tensor_tensor_scan.DVE" + operands + " initial=sbuf[p0:2, off 192]:f32").ok());
  EXPECT_EQ(getRow(kSbuf, 0, 128, 4), (Row{21, 12.5f, 15.5f, 50.5f}));
  EXPECT_EQ(getRow(kSbuf, 1, 128, 4), (Row{-1, -2, -1, -2}));
  // Both operators are required, and arithmetic.
  EXPECT_NE(runError("tensor_tensor_scan.DVE dst=sbuf[p0:2, off 128, [1,4]]:f32 in0=sbuf[p0:2, off 0, [1,4]]:f32 "
                     "in1=sbuf[p0:2, off 64, [1,4]]:f32 op0=multiply")
                .find("op0 and op1 must be arithmetic binary operators"),
            std::string::npos);
}

TEST_F(NcFunctionalVector, TensorScalarImmediatesAndOperands) {
  putRow(kSbuf, 0, 0, {1, 2, 3});
  putRow(kSbuf, 1, 0, {4, 5, 6});
  putF32(kSbuf, 0, 64, 10);
  putF32(kSbuf, 1, 64, 20);
  putF32(kSbuf, 0, 68, -1);
  putF32(kSbuf, 1, 68, 2);
  // (x - 1.5) * 2 from immediates.
  ASSERT_TRUE(run("tensor_scalar.DVE dst=sbuf[p0:2, off 128, [1,3]]:f32 src=sbuf[p0:2, off 0, [1,3]]:f32 "
                  "op0=subtract op1=multiply imm=1.5,2")
                  .ok());
  EXPECT_EQ(getRow(kSbuf, 0, 128, 3), (Row{-1, 1, 3}));
  EXPECT_EQ(getRow(kSbuf, 1, 128, 3), (Row{5, 7, 9}));
  // (x + s0[p]) * s1[p] from [P,1] operands.
  ASSERT_TRUE(run("tensor_scalar.ACT dst=sbuf[p0:2, off 128, [1,3]]:f32 src=sbuf[p0:2, off 0, [1,3]]:f32 "
                  "scalar0=sbuf[p0:2, off 64]:f32 scalar1=sbuf[p0:2, off 68]:f32 op0=add op1=multiply")
                  .ok());
  EXPECT_EQ(getRow(kSbuf, 0, 128, 3), (Row{-11, -12, -13}));
  EXPECT_EQ(getRow(kSbuf, 1, 128, 3), (Row{48, 50, 52}));
  // s0 from imm[0], s1 from the scalar1 operand; op1 maximum.
  ASSERT_TRUE(run("tensor_scalar.POOL dst=sbuf[p0:2, off 128, [1,3]]:f32 src=sbuf[p0:2, off 0, [1,3]]:f32 "
                  "scalar1=sbuf[p0:2, off 68]:f32 op0=multiply op1=maximum imm=-1")
                  .ok());
  EXPECT_EQ(getRow(kSbuf, 0, 128, 3), (Row{-1, -1, -1}));
  EXPECT_EQ(getRow(kSbuf, 1, 128, 3), (Row{2, 2, 2}));
  // Unary ops ignore the scalar; none is needed.
  putRow(kSbuf, 0, 0, {-1, 4, -9});
  ASSERT_TRUE(run("tensor_scalar.DVE dst=sbuf[p0:1, off 128, [1,3]]:f32 src=sbuf[p0:1, off 0, [1,3]]:f32 op0=abs "
                  "op1=rsqrt")
                  .ok());
  EXPECT_EQ(getRow(kSbuf, 0, 128, 3), (Row{1, 0.5f, 1.0f / 3}));
  EXPECT_EQ(runError("tensor_scalar.DVE dst=sbuf[p0:1, off 128, [1,3]]:f32 src=sbuf[p0:1, off 0, [1,3]]:f32 "
                     "op0=add op1=multiply imm=1"),
            "instruction 0 (tensor_scalar.DVE): op1 multiply needs a scalar: operand scalar1 or imm[1]");
}

TEST_F(NcFunctionalVector, TensorScalarReduceAppliesTheOpAndReducesItsResults) {
  const Row x0 = {1.5f, -2, 3, 0.25f, -7, 4}, x1 = {-1, 8, 0.5f, 2, 6, -3};
  putRow(kSbuf, 0, 0, x0);
  putRow(kSbuf, 1, 0, x1);
  putF32(kSbuf, 0, 64, 0.5f);  // scalar0[P,1]
  putF32(kSbuf, 1, 64, -2);
  // The reference: the tensor_scalar results and their fold, computed here in fp32.
  auto expect = [&](const Row &x, float s, bool subtract, bool maxReduce) {
    Row y;
    for (float v : x) y.push_back(subtract ? v - s : v * s);
    float r = y[0];
    for (size_t i = 1; i < y.size(); ++i) r = maxReduce ? std::max(r, y[i]) : r + y[i];
    y.push_back(r);
    return y;
  };
  auto withAccum = [&](int64_t p) {
    Row row = getRow(kSbuf, p, 128, 6);
    row.push_back(getF32(kSbuf, p, 192));
    return row;
  };
  // Multiply by an immediate, sum: the rmsnorm-style "scale and sum" in one instruction.
  ASSERT_TRUE(run("tensor_scalar_reduce.DVE dst=sbuf[p0:2, off 128, [1,6]]:f32 src=sbuf[p0:2, off 0, [1,6]]:f32 "
                  "accum=sbuf[p0:2, off 192]:f32 op0=multiply op1=add imm=3")
                  .ok());
  EXPECT_EQ(withAccum(0), expect(x0, 3, false, false));
  EXPECT_EQ(withAccum(1), expect(x1, 3, false, false));
  // Subtract a per-partition scalar, max-reduce, over two free dims.
  ASSERT_TRUE(run("tensor_scalar_reduce.DVE dst=sbuf[p0:2, off 128, [3,2], [1,3]]:f32 "
                  "src=sbuf[p0:2, off 0, [3,2], [1,3]]:f32 accum=sbuf[p0:2, off 192]:f32 scalar0=sbuf[p0:2, off 64]:f32 "
                  "op0=subtract op1=maximum")
                  .ok());
  EXPECT_EQ(withAccum(0), expect(x0, 0.5f, true, true));
  EXPECT_EQ(withAccum(1), expect(x1, -2, true, true));
  // Squares (power 2) summed: dst rounds to bf16 (1.03125^2 = 1.0625 + 2^-10 loses its last bit), the
  // sum folds the fp32 squares.
  putRow(kSbuf, 0, 0, {1.03125f, 3, 0, 0, 0, 0});
  ASSERT_TRUE(run("tensor_scalar_reduce.DVE dst=sbuf[p0:1, off 128, [1,6]]:bf16 src=sbuf[p0:1, off 0, [1,6]]:f32 "
                  "accum=sbuf[p0:1, off 192]:f32 op0=power op1=add imm=2")
                  .ok());
  EXPECT_EQ(getF32(kSbuf, 0, 192), 1.0634765625f + 9);
  EXPECT_EQ(runError("tensor_scalar_reduce.DVE dst=sbuf[p0:2, off 128, [1,6]]:f32 src=sbuf[p0:2, off 0, [1,6]]:f32 "
                     "accum=sbuf[p0:2, off 192]:f32 op0=multiply op1=abs imm=1"),
            "instruction 0 (tensor_scalar_reduce.DVE): accum needs a binary arithmetic reduce operator in op1, got abs");
  EXPECT_EQ(runError("tensor_scalar_reduce.DVE dst=sbuf[p0:2, off 128, [1,6]]:f32 src=sbuf[p0:2, off 0, [1,6]]:f32 "
                     "accum=sbuf[p0:2, off 192]:f32 op0=multiply op1=add"),
            "instruction 0 (tensor_scalar_reduce.DVE): op0 multiply needs a scalar: operand scalar0 or imm[0]");
}

TEST_F(NcFunctionalVector, TensorScalarBitwiseThenArithmetic) {
  put<int32_t>(kSbuf, 0, 0, 13);  // 0b1101
  ASSERT_TRUE(run("tensor_scalar.DVE dst=sbuf[p0:1, off 64]:f32 src=sbuf[p0:1, off 0]:i32 op0=bitwise_and "
                  "op1=add imm=6,0.5")
                  .ok());
  EXPECT_EQ(getF32(kSbuf, 0, 64), 4.5f);  // (13 & 6) + 0.5.
}

TEST_F(NcFunctionalVector, TensorReduceInnermostDim) {
  // Two partitions of a [2 rows, 4] view; reduce each row.
  putRow(kSbuf, 0, 0, {1, 2, 3, 4, 5, 6, 7, 8});
  putRow(kSbuf, 1, 0, {-1, -2, -3, -4, 0, 0, 0, 9});
  ASSERT_TRUE(
      run("tensor_reduce.DVE dst=sbuf[p0:2, off 64, [1,2]]:f32 src=sbuf[p0:2, off 0, [4,2], [1,4]]:f32 op0=add").ok());
  EXPECT_EQ(getRow(kSbuf, 0, 64, 2), (Row{10, 26}));
  EXPECT_EQ(getRow(kSbuf, 1, 64, 2), (Row{-10, 9}));
  ASSERT_TRUE(
      run("tensor_reduce.DVE dst=sbuf[p0:2, off 64, [1,2]]:f32 src=sbuf[p0:2, off 0, [4,2], [1,4]]:f32 op0=maximum")
          .ok());
  EXPECT_EQ(getRow(kSbuf, 1, 64, 2), (Row{-1, 9}));
  // Innermost dim strided (stride 2) and the outer one stride 1: sums of the even and odd elements.
  ASSERT_TRUE(
      run("tensor_reduce.DVE dst=sbuf[p0:1, off 64, [1,2]]:f32 src=sbuf[p0:1, off 0, [1,2], [2,4]]:f32 op0=add").ok());
  EXPECT_EQ(getRow(kSbuf, 0, 64, 2), (Row{16, 20}));
  // One free dim: one element per partition.
  ASSERT_TRUE(
      run("tensor_reduce.DVE dst=sbuf[p0:2, off 64, [1,1]]:f32 src=sbuf[p0:2, off 0, [1,8]]:f32 op0=minimum").ok());
  EXPECT_EQ(getF32(kSbuf, 1, 64), -4.0f);
  // Bitwise reduce on integers.
  for (int i = 0; i < 4; ++i) put<int32_t>(kSbuf, 0, 128 + 4 * i, 1 << i);
  ASSERT_TRUE(
      run("tensor_reduce.DVE dst=sbuf[p0:1, off 192]:i32 src=sbuf[p0:1, off 128, [1,4]]:i32 op0=bitwise_or").ok());
  EXPECT_EQ(get<int32_t>(kSbuf, 0, 192), 15);
  EXPECT_EQ(
      runError("tensor_reduce.DVE dst=sbuf[p0:2, off 64, [1,4]]:f32 src=sbuf[p0:2, off 0, [4,2], [1,4]]:f32 op0=add"),
      "instruction 0 (tensor_reduce.DVE): operand dst has shape [2, 4]; reducing the innermost dim of src "
      "[2, 2, 4] leaves 2 partitions x 2 elements");
  EXPECT_EQ(
      runError("tensor_reduce.DVE dst=sbuf[p0:2, off 64, [1,2]]:f32 src=sbuf[p0:2, off 0, [4,2], [1,4]]:f32 op0=abs"),
      "instruction 0 (tensor_reduce.DVE): tensor_reduce needs a binary reduce operator in op0, got abs");
}

TEST_F(NcFunctionalVector, TensorCopyAcrossPartitionsAndMemset) {
  putRow(kSbuf, 64, 0, {1.0f + 0x1p-8f, 2, 3, 4});
  // Upper half to lower half, f32 -> bf16, 1-D source into a 2x2 destination view.
  ASSERT_TRUE(run("tensor_copy.DVE dst=sbuf[p0:64, off 0, [2,2], [1,2]]:bf16 src=sbuf[p64:64, off 0, [1,4]]:f32").ok());
  EXPECT_EQ(getBf16(kSbuf, 0, 0), 1.0f);
  EXPECT_EQ(getBf16(kSbuf, 0, 6), 4.0f);
  EXPECT_NE(runError("tensor_copy.DVE dst=sbuf[p0:64, off 0, [1,3]]:bf16 src=sbuf[p64:64, off 0, [1,4]]:f32")
                .find("operand dst has shape [64, 3] (64 x 3 elements) but src has shape [64, 4] (64 x 4 elements)"),
            std::string::npos);

  ASSERT_TRUE(run("memset.POOL dst=sbuf[p0:3, off 64, [1,2]]:i32 imm=7\n"
                  "memset.DVE dst=psum[p0:1, off 0, [1,2]]:bf16 imm=1.00390625")
                  .ok());
  EXPECT_EQ(getI32Row(2, 64, 2), (std::vector<int32_t>{7, 7}));
  EXPECT_EQ(get<uint16_t>(kPsum, 0, 2), 0x3f80);  // 1 + 2^-8 rounds to even.
  EXPECT_EQ(runError("memset.DVE dst=sbuf[p0:1, off 0]:f32"),
            "instruction 0 (memset.DVE): memset needs its fill value in imm[0]");
}

TEST_F(NcFunctionalVector, BnStatsThenBnAggrMatchDirectMeanAndVariance) {
  putRow(kSbuf, 0, 0, {1, 2, 3, 4, 5});
  ASSERT_TRUE(run("bn_stats.DVE dst=sbuf[p0:1, off 64, [1,6]]:f32 src=sbuf[p0:1, off 0, [1,5]]:f32").ok());
  // Even elements {1,3,5}: count 3, mean 3, M2 8; odd {2,4}: count 2, mean 3, M2 2.
  EXPECT_EQ(getRow(kSbuf, 0, 64, 6), (Row{3, 3, 8, 2, 3, 2}));
  ASSERT_TRUE(run("bn_aggr.DVE dst=sbuf[p0:1, off 128, [1,2]]:f32 src=sbuf[p0:1, off 64, [1,6]]:f32").ok());
  EXPECT_EQ(getRow(kSbuf, 0, 128, 2), (Row{3, 2}));

  // Two partitions, 700 values each in two bn_stats chunks (512 + 188), aggregated together.
  std::vector<std::vector<double>> data(2);
  for (int p = 0; p < 2; ++p)
    for (int i = 0; i < 700; ++i) {
      double x = std::sin(0.37 * i + p) * (p + 1) + 0.01 * i;
      data[p].push_back(static_cast<float>(x));
      putF32(kSbuf, p, 4 * i, static_cast<float>(x));
    }
  ASSERT_TRUE(run("bn_stats.DVE dst=sbuf[p0:2, off 4096, [1,6]]:f32 src=sbuf[p0:2, off 0, [1,512]]:f32\n"
                  "bn_stats.DVE dst=sbuf[p0:2, off 4120, [1,6]]:f32 src=sbuf[p0:2, off 2048, [1,188]]:f32\n"
                  "bn_aggr.DVE dst=sbuf[p0:2, off 4200, [1,2]]:f32 src=sbuf[p0:2, off 4096, [1,12]]:f32")
                  .ok());
  for (int p = 0; p < 2; ++p) {
    double mean = 0, var = 0;
    for (double x : data[p]) mean += x;
    mean /= data[p].size();
    for (double x : data[p]) var += (x - mean) * (x - mean);
    var /= data[p].size();
    EXPECT_NEAR(getF32(kSbuf, p, 4200), mean, 1e-5);
    EXPECT_NEAR(getF32(kSbuf, p, 4204), var, 1e-5 * var);
  }
  EXPECT_NE(runError("bn_aggr.DVE dst=sbuf[p0:1, off 128, [1,2]]:f32 src=sbuf[p0:1, off 64, [1,8]]:f32")
                .find("bn_aggr reads bn_stats records (a multiple of 6)"),
            std::string::npos);
}

}  // namespace
}  // namespace tessel::nc::testing
