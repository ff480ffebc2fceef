// The tile DSL: views (slices, reshapes, broadcasts, HBM transposes), the recorded Tile IR as text,
// and shape errors that name the op index, its kind and the offending values.
#include "targets/nc/tile/dsl.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace tessel::nc::tile {
namespace {

std::string firstError(const MachineProfile &profile, void (*body)(KernelBuilder &)) {
  KernelBuilder builder("k", profile);
  body(builder);
  Expected<Kernel> kernel = builder.finish();
  return kernel.ok() ? "ok" : kernel.diag().message;
}

TEST(Dsl, ViewsComposeAccessPatterns) {
  MachineProfile profile = loadTestProfile("nc-v2");
  KernelBuilder b("views", profile);
  TileView t = b.sbuf("t", DType::BF16, 128, {4, 512});
  TileView s = t.partitionSlice(64, 64).slice(0, 1, 2).cols(128, 256);
  EXPECT_EQ(s.partitionStart(), 64);
  EXPECT_EQ(s.partitions(), 64);
  EXPECT_EQ(s.offsetElements(), 512 + 128);
  EXPECT_EQ(s.freeShape(), (std::vector<int64_t>{2, 256}));
  EXPECT_EQ(s.dims()[0], (FreeDim{512, 2}));
  TileView r = b.sbuf("r", DType::F32, 128, {2048}).reshapeFree({4, 512});
  EXPECT_EQ(r.dims(), (std::vector<FreeDim>{{512, 4}, {1, 512}}));
  TileView scalar = b.sbuf("m", DType::F32, 128, {1}).broadcastFree(512);
  EXPECT_EQ(scalar.dims(), (std::vector<FreeDim>{{0, 512}}));
  EXPECT_EQ(scalar.freeSize(), 512);
  HbmView x = b.input("x", DType::F32, {64, 32});
  HbmView xt = x.transpose();
  EXPECT_EQ(xt.shape(), (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(xt.dims()[0], (FreeDim{1, 32}));
  HbmView block = x.rows(8, 16).cols(4, 8).reshapeDim(0, {2, 8});
  EXPECT_EQ(block.offsetElements(), 8 * 32 + 4);
  EXPECT_EQ(block.dims(), (std::vector<FreeDim>{{256, 2}, {32, 8}, {1, 8}}));
  HbmView row = b.input("bias", DType::F32, {1, 512}).broadcast(0, 128);
  EXPECT_EQ(row.dims()[0], (FreeDim{0, 128}));
  EXPECT_TRUE(b.finish().ok());
}

TEST(Dsl, PrintKernel) {
  MachineProfile profile = loadTestProfile("nc-v2");
  Kernel kernel = buildKernel("act", profile, [](KernelBuilder &b) {
    HbmView x = b.input("x", DType::F32, {128, 64});
    HbmView out = b.output("out", DType::BF16, {128, 64});
    TileView t = b.sbuf("t", DType::F32, 128, {64});
    TileView sum = b.sbuf("sum", DType::F32, 128, {1});
    TileView y = b.sbuf("y", DType::BF16, 128, {64});
    b.load(t, x);
    b.activation(y, t, ActFunc::Exp, ActivationArgs{2.0f, std::nullopt, sum});
    b.tensorScalar(y, y, AluOp::Multiply, sum, AluOp::Add, 1.0f);
    b.store(out, y);
  });
  EXPECT_EQ(printKernel(kernel),
            "kernel 'act'\n"
            "  input x: f32[128, 64]\n"
            "  output out: bf16[128, 64]\n"
            "  tile t: sbuf f32[128, 64]\n"
            "  tile sum: sbuf f32[128, 1]\n"
            "  tile y: sbuf bf16[128, 64]\n"
            "  #0 load.DMA dst=t[p0:128, +0, [1,64]] src=x[+0, [64,128], [1,64]]\n"
            "  #1 activation.ACT dst=y[p0:128, +0, [1,64]] src=t[p0:128, +0, [1,64]] accum=sum[p0:128, +0, [1,1]] "
            "op0=add func=exp imm=2,0\n"
            "  #2 tensorScalar.auto dst=y[p0:128, +0, [1,64]] src=y[p0:128, +0, [1,64]] scalar0=sum[p0:128, +0, [1,1]] "
            "op0=multiply op1=add imm=0,1\n"
            "  #3 store.DMA dst=out[+0, [64,128], [1,64]] src=y[p0:128, +0, [1,64]]\n");
}

TEST(Dsl, ImmediateBiasBecomesAConstantTileOnNcV2) {
  MachineProfile v2 = loadTestProfile("nc-v2"), v3 = loadTestProfile("nc-v3");
  auto body = [](KernelBuilder &b) {
    TileView t = b.sbuf("t", DType::F32, 128, {64});
    b.memset(t, 0.0f);
    ActivationArgs args;
    args.bias = 0.5f;
    b.activation(t, t, ActFunc::Relu, args);
  };
  Kernel onV2 = buildKernel("bias", v2, body), onV3 = buildKernel("bias", v3, body);
  ASSERT_EQ(onV2.ops.size(), 3u);
  EXPECT_EQ(onV2.ops[1].kind, TileOpKind::Memset);
  EXPECT_EQ(onV2.ops[1].scalars, (std::vector<float>{0.5f}));
  EXPECT_TRUE(onV2.ops[2].operands[2].has_value());  // bias operand
  ASSERT_EQ(onV3.ops.size(), 2u);
  EXPECT_EQ(onV3.ops[1].scalars, (std::vector<float>{1.0f, 0.5f}));
}

TEST(Dsl, ErrorsNameTheOpAndValues) {
  MachineProfile profile = loadTestProfile("nc-v2");
  EXPECT_EQ(firstError(profile,
                       [](KernelBuilder &b) {
                         TileView acc = b.psum("acc", DType::F32, 128, {512});
                         TileView st = b.sbuf("st", DType::BF16, 128, {128});
                         TileView mv = b.sbuf("mv", DType::BF16, 64, {512});
                         b.memset(st, 0.0f);
                         b.matmul(acc, st, mv, false);
                       }),
            "kernel 'k': op #1 (matmul): contraction K differs: stationary [128, 128] vs moving [64, 512] (T4)");
  EXPECT_EQ(firstError(profile,
                       [](KernelBuilder &b) {
                         TileView acc = b.psum("acc", DType::F32, 128, {512});
                         TileView st = b.sbuf("st", DType::BF16, 128, {256});
                         b.matmul(acc, st, st, false);
                       }),
            "kernel 'k': op #0 (matmul): K = 128, M = 256, N = 256; limits K <= 128, M <= 128, N <= 512 (T3)");
  EXPECT_EQ(firstError(profile,
                       [](KernelBuilder &b) {
                         TileView t = b.sbuf("t", DType::F32, 128, {64});
                         b.memset(t, 0.0f);
                         b.copy(t, t.cols(60, 8));
                       }),
            "kernel 'k': slice(dim -1, start 60, count 8) of a view with free shape [64] (tile 't'): outside the dim");
  EXPECT_EQ(firstError(profile,
                       [](KernelBuilder &b) {
                         TileView t = b.sbuf("t", DType::F32, 128, {64});
                         b.memset(t.partitionSlice(16, 32), 0.0f);
                       }),
            "kernel 'k': op #0 (memset): dst of tile 't' starts at partition 16 with 32 partitions; the start must "
            "be a multiple of 32 (T6)");
  EXPECT_EQ(firstError(profile,
                       [](KernelBuilder &b) {
                         TileView t = b.sbuf("t", DType::F32, 128, {64});
                         TileView u = b.sbuf("u", DType::F32, 128, {32});
                         b.tensorTensor(u, t, t, AluOp::Add);
                       }),
            "kernel 'k': op #0 (tensorTensor): dst [128, 32], a [128, 64] and b [128, 64] must have the same "
            "partitions and free size");
  EXPECT_EQ(firstError(profile,
                       [](KernelBuilder &b) {
                         TileView p = b.psum("p", DType::F32, 128, {64});
                         TileView t = b.sbuf("t", DType::F32, 128, {64});
                         b.copy(t, p, Engine::POOL);
                       }),
            "kernel 'k': op #0 (copy): engine POOL cannot access an operand's memory (POOL has no PSUM access, T11)");
  EXPECT_EQ(firstError(profile,
                       [](KernelBuilder &b) {
                         HbmView x = b.input("x", DType::F32, {128, 64});
                         TileView p = b.psum("p", DType::F32, 128, {64});
                         b.load(p, x);
                       }),
            "kernel 'k': op #0 (load): dst is in psum; DMA reaches SBUF only (PSUM is not reachable by DMA, section "
            "4.3)");
  EXPECT_EQ(firstError(profile,
                       [](KernelBuilder &b) {
                         HbmView x = b.input("x", DType::F32, {128, 64});
                         TileView t = b.sbuf("t", DType::F32, 128, {32});
                         b.load(t, x);
                       }),
            "kernel 'k': op #0 (load): dst [128, 32] has 4096 elements, src [128, 64] has 8192");
  EXPECT_EQ(firstError(profile,
                       [](KernelBuilder &b) {
                         TileView t = b.sbuf("t", DType::F32, 128, {64});
                         TileView s = b.sbuf("s", DType::F32, 128, {1});
                         b.activation(t, t, ActFunc::Exp, ActivationArgs{1.0f, std::nullopt, s, AluOp::Maximum});
                       }),
            "kernel 'k': op #0 (activation): ACT reduce op maximum not supported on nc-v2; supported: add (T15)");
  EXPECT_EQ(firstError(profile,
                       [](KernelBuilder &b) {
                         TileView t = b.sbuf("t", DType::F32, 128, {64});
                         b.tensorScalar(t, t, AluOp::Maximum, 0.0f, AluOp::None, 0.0f, Engine::ACT);
                       }),
            "kernel 'k': op #0 (tensorScalar): ACT runs tensor_scalar only as multiply, add or multiply then add; "
            "got maximum then none");
  EXPECT_EQ(firstError(profile,
                       [](KernelBuilder &b) {
                         TileView t = b.sbuf("t", DType::F32, 128, {64});
                         TileView s = b.sbuf("s", DType::F32, 128, {1});
                         b.tensorScalarReduce(t, t, AluOp::Multiply, 2.0f, s, AluOp::Abs);
                       }),
            "kernel 'k': op #0 (tensorScalarReduce): reduce op abs is not one of add, subtract, multiply, maximum, "
            "minimum");
  EXPECT_EQ(firstError(profile,
                       [](KernelBuilder &b) {
                         TileView t = b.sbuf("t", DType::F32, 128, {64});
                         TileView s = b.sbuf("s", DType::F32, 128, {2});
                         b.tensorScalarReduce(t, t, AluOp::Multiply, 2.0f, s, AluOp::Add);
                       }),
            "kernel 'k': op #0 (tensorScalarReduce): accum must be [P, 1] with dst's 128 partitions; got [128, 2]");
  EXPECT_EQ(firstError(profile, [](KernelBuilder &b) { b.sbuf("big", DType::F32, 129, {4}); }),
            "kernel 'k': tile 'big': 129 partitions; must be 1..128 (T1)");
}

TEST(Dsl, FirstErrorWins) {
  MachineProfile profile = loadTestProfile("nc-v2");
  KernelBuilder b("k", profile);
  TileView t = b.sbuf("t", DType::F32, 128, {64});
  b.memset(t.cols(0, 100), 0.0f);  // Slice error; the memset then records the unsliced view.
  b.reduce(t, t, AluOp::Add);      // Also wrong (dst free size), but not reported.
  Expected<Kernel> kernel = b.finish();
  ASSERT_FALSE(kernel.ok());
  EXPECT_EQ(kernel.diag().code, ErrorCode::InvalidArgument);
  EXPECT_NE(kernel.diag().message.find("slice(dim -1, start 0, count 100)"), std::string::npos);
}

}  // namespace
}  // namespace tessel::nc::tile
