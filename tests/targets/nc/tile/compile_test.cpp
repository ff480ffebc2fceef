// The kernel compiler end to end on small kernels: the exact program (semaphores included) of a
// two-load add, waits for each dependence kind, redundant waits dropped, engine choice for ops the
// kernel left open, and the printed allocation and schedule.
#include "targets/nc/tile/compile.h"

#include <map>
#include <set>

#include <gtest/gtest.h>

#include "targets/nc/isa/disassembler.h"
#include "test_util.h"

namespace tessel::nc::tile {
namespace {

CompiledKernel compileOrDie(const Kernel &kernel, const MachineProfile &profile, const CompileOptions &options = {}) {
  Expected<CompiledKernel> compiled = compileKernel(kernel, profile, options);
  EXPECT_TRUE(compiled.ok()) << compiled.diag().str();
  return compiled.ok() ? *compiled : CompiledKernel{};
}

TEST(Compile, AddKernelProgram) {
  MachineProfile profile = loadTestProfile("nc-v2");
  Kernel kernel = buildKernel("add", profile, addKernel);
  CompiledKernel compiled = compileOrDie(kernel, profile);
  // Both loads on their own queues, each incrementing its queue's semaphore (s5 = q0, s6 = q1);
  // the add waits for both and increments DVE's (s1); the store waits for the add.
  EXPECT_EQ(disassemble(compiled.program),
            "dma_copy.DMA dst=sbuf[p0:128, off 0, [1,512]]:bf16 src=hbm[p0:1, off 0, [512,128], [1,512]]:bf16 "
            "queue=q0 inc=s5\n"
            "dma_copy.DMA dst=sbuf[p0:128, off 1024, [1,512]]:bf16 src=hbm[p0:1, off 131072, [512,128], [1,512]]:bf16 "
            "queue=q1 inc=s6\n"
            "tensor_tensor.DVE dst=sbuf[p0:128, off 2048, [1,512]]:bf16 in0=sbuf[p0:128, off 0, [1,512]]:bf16 "
            "in1=sbuf[p0:128, off 1024, [1,512]]:bf16 op0=add wait=s5>=1,s6>=1 inc=s1\n"
            "dma_copy.DMA dst=hbm[p0:1, off 262144, [512,128], [1,512]]:bf16 src=sbuf[p0:128, off 2048, [1,512]]:bf16 "
            "queue=q2 wait=s1>=1\n");
  EXPECT_EQ(printAllocation(kernel, compiled),
            "allocation 'add': SBUF peak 3072 bytes per partition, PSUM peak 0, policy least-recently-freed\n"
            "  input x: HBM offset 0 bf16[128, 512]\n"
            "  input y: HBM offset 131072 bf16[128, 512]\n"
            "  output out: HBM offset 262144 bf16[128, 512]\n"
            "  tile #0 a: SBUF offset 0 bytes 1024 ops #0..#2\n"
            "  tile #1 b: SBUF offset 1024 bytes 1024 ops #1..#2\n"
            "  tile #2 sum: SBUF offset 2048 bytes 1024 ops #2..#3\n");
  std::string schedule = printSchedule(compiled);
  EXPECT_NE(schedule.find("DVE:\n"), std::string::npos) << schedule;
  EXPECT_NE(schedule.find("DMA.q2:\n"), std::string::npos) << schedule;
  EXPECT_EQ(compiled.hbmBytes, 3u * 128 * 512 * 2);
}

TEST(Compile, ADimOfCountOneIsEncodedWithStrideZero) {
  // A [row][col] pattern of one row 40000 elements into a tile: the row dim's stride is past int16,
  // but a dim of count 1 never steps, so the DSL accepts it and the instruction carries stride 0.
  MachineProfile profile = loadTestProfile("nc-v2");
  Kernel kernel = buildKernel("one_row", profile, [](KernelBuilder &b) {
    HbmView out = b.output("out", DType::BF16, {128, 64});
    TileView wide = b.sbuf("wide", DType::BF16, 128, {40064});
    b.memset(wide, 1.0f);
    TileView row = b.sbuf("row", DType::BF16, 128, {64});
    b.copy(row, wide.pattern(40000, {FreeDim{40000, 1}, FreeDim{1, 64}}));
    b.store(out, row);
  });
  CompiledKernel compiled = compileOrDie(kernel, profile);
  const std::string text = disassemble(compiled.program);
  EXPECT_NE(text.find("[0,1], [1,64]"), std::string::npos) << text;
  EXPECT_EQ(text.find("40000,1"), std::string::npos) << text;
}

TEST(Compile, OneDmaQueueOrdersTheStoreBehindTheLoads) {
  MachineProfile profile = loadTestProfile("nc-v2");
  Kernel kernel = buildKernel("add", profile, addKernel);
  CompiledKernel compiled = compileOrDie(kernel, profile, CompileOptions{/*dmaQueues=*/1});
  ASSERT_EQ(compiled.program.size(), 4u);
  for (const Instruction &insn : compiled.program)
    if (insn.opcode == Opcode::DmaCopy) {
      EXPECT_EQ(insn.queue, 0);
    }
  // The loads only increment q0's semaphore; the add waits for the second one (which implies the first).
  EXPECT_EQ(compiled.program[2].waits, (std::vector<SemaphoreWait>{{5, 2}}));
}

TEST(Compile, CountedCopyOnFewerDmaEnginesWaitsForThePreviousOne) {
  // On one queue, a 1-partition copy (one DMA engine) could finish before the 128-partition copy
  // triggered before it; both are counted, so the second waits for the first.
  MachineProfile profile = loadTestProfile("nc-v2");
  Kernel kernel = buildKernel("order", profile, [](KernelBuilder &b) {
    HbmView x = b.input("x", DType::F32, {128, 64});
    HbmView y = b.input("y", DType::F32, {1, 64});
    TileView t = b.sbuf("t", DType::F32, 128, {64});
    TileView u = b.sbuf("u", DType::F32, 1, {64});
    b.load(t, x);
    b.load(u, y);
    b.memset(t.partitionSlice(0, 32), 0.0f, Engine::DVE);
    b.memset(u, 0.0f, Engine::DVE);
  });
  CompiledKernel compiled = compileOrDie(kernel, profile, CompileOptions{/*dmaQueues=*/1});
  ASSERT_EQ(compiled.program.size(), 4u);
  EXPECT_EQ(compiled.program[1].waits, (std::vector<SemaphoreWait>{{5, 1}}));
  EXPECT_EQ(compiled.program[1].increment, std::optional<uint16_t>(5));
}

TEST(Compile, EachDependenceKindWaits) {
  MachineProfile profile = loadTestProfile("nc-v2");
  Kernel kernel = buildKernel("kinds", profile, [](KernelBuilder &b) {
    HbmView x = b.input("x", DType::F32, {128, 64});
    HbmView out = b.output("out", DType::F32, {128, 64});
    TileView t = b.sbuf("t", DType::F32, 128, {64});
    TileView u = b.sbuf("u", DType::F32, 128, {64});
    b.load(t, x);                              // #0
    b.copy(u, t, Engine::ACT);                 // #1 RAW on #0
    b.memset(t, 2.0f, Engine::POOL);           // #2 WAR on #1, WAW on #0
    b.tensorTensor(u, u, t, AluOp::Add, Engine::DVE);  // #3 RAW on #1, #2; WAW on #1
    b.store(out, u);                           // #4 RAW on #3
  });
  CompiledKernel compiled = compileOrDie(kernel, profile);
  std::string text = disassemble(compiled.program);
  EXPECT_EQ(text,
            "dma_copy.DMA dst=sbuf[p0:128, off 0, [1,64]]:f32 src=hbm[p0:1, off 0, [64,128], [1,64]]:f32 queue=q0 "
            "inc=s5\n"
            "tensor_copy.ACT dst=sbuf[p0:128, off 256, [1,64]]:f32 src=sbuf[p0:128, off 0, [1,64]]:f32 wait=s5>=1 "
            "inc=s2\n"
            "memset.POOL dst=sbuf[p0:128, off 0, [1,64]]:f32 imm=2 wait=s2>=1 inc=s3\n"
            "tensor_tensor.DVE dst=sbuf[p0:128, off 256, [1,64]]:f32 in0=sbuf[p0:128, off 256, [1,64]]:f32 "
            "in1=sbuf[p0:128, off 0, [1,64]]:f32 op0=add wait=s3>=1 inc=s1\n"
            "dma_copy.DMA dst=hbm[p0:1, off 32768, [64,128], [1,64]]:f32 src=sbuf[p0:128, off 256, [1,64]]:f32 "
            "queue=q1 wait=s1>=1\n");
  // The memset's WAW on the load is implied by its WAR on the copy (which waited for the load); the
  // add's RAW on the copy is implied by the memset, which waited for the copy.
}

TEST(Compile, OpenEnginesAvoidPsumOnPoolAndSpreadWork) {
  MachineProfile profile = loadTestProfile("nc-v2");
  Kernel kernel = buildKernel("spread", profile, [](KernelBuilder &b) {
    TileView acc = b.psum("acc", DType::F32, 128, {512});
    TileView src = b.sbuf("src", DType::BF16, 128, {512});
    b.memset(src, 1.0f);
    b.matmul(acc, src.cols(0, 128), src, /*accumulate=*/false);
    for (int i = 0; i < 6; ++i) {
      TileView dst = b.sbuf("dst", DType::BF16, 128, {512});
      b.copy(dst, i % 2 == 0 ? acc : src);
      b.memset(b.sbuf("z", DType::F32, 128, {1}), 0.0f);
    }
  });
  CompiledKernel compiled = compileOrDie(kernel, profile);
  std::set<Engine> copyEngines;
  for (const Instruction &insn : compiled.program) {
    if (insn.opcode != Opcode::TensorCopy) continue;
    copyEngines.insert(insn.engine);
    if (insn.operands[1]->space == MemSpace::PSUM) {
      EXPECT_NE(insn.engine, Engine::POOL);
    }
  }
  EXPECT_GE(copyEngines.size(), 2u) << printSchedule(compiled);
}

TEST(Compile, ScheduleOrdersEachStreamByStart) {
  MachineProfile profile = loadTestProfile("nc-v3");
  Kernel kernel = buildKernel("matmul", profile, [](KernelBuilder &b) { matmulKernel(b, 256, 512, 1024); });
  CompiledKernel compiled = compileOrDie(kernel, profile);
  ASSERT_EQ(compiled.timing.size(), compiled.program.size());
  for (size_t k = 1; k < compiled.timing.size(); ++k) EXPECT_LE(compiled.timing[k - 1].startNs, compiled.timing[k].startNs);
  // Matmuls into one accumulation group keep their recorded order (acc=0 first); groups in
  // different PSUM banks may interleave.
  std::map<uint64_t, std::vector<int32_t>> matmulOpsByBank;
  for (size_t k = 0; k < compiled.program.size(); ++k)
    if (compiled.program[k].opcode == Opcode::NcMatmul)
      matmulOpsByBank[compiled.program[k].operands[0]->offsetBytes].push_back(compiled.timing[k].op);
  EXPECT_FALSE(matmulOpsByBank.empty());
  for (const auto &[offset, ops] : matmulOpsByBank) EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end())) << offset;
  for (const Instruction &insn : compiled.program) EXPECT_LE(insn.waits.size(), static_cast<size_t>(kMaxWaits));
  EXPECT_GT(compiled.estimatedNs, 0);
}

TEST(Compile, TooManyProducerQueuesStillFitsTheWaitLimit) {
  // One op reads a tile written by 16 loads on 16 queues: more producers than kMaxWaits.
  MachineProfile profile = loadTestProfile("nc-v2");
  Kernel kernel = buildKernel("gather", profile, [](KernelBuilder &b) {
    HbmView x = b.input("x", DType::F32, {128, 16 * 64});
    HbmView out = b.output("out", DType::F32, {128, 16 * 64});
    TileView t = b.sbuf("t", DType::F32, 128, {16 * 64});
    TileView u = b.sbuf("u", DType::F32, 128, {16 * 64});
    for (int i = 0; i < 16; ++i) b.load(t.cols(i * 64, 64), x.cols(i * 64, 64));
    b.copy(u, t, Engine::DVE);
    b.store(out, u);
  });
  CompiledKernel compiled = compileOrDie(kernel, profile);
  std::set<uint8_t> queues;
  for (const Instruction &insn : compiled.program) {
    EXPECT_LE(insn.waits.size(), static_cast<size_t>(kMaxWaits));
    if (insn.opcode == Opcode::DmaCopy) queues.insert(insn.queue);
  }
  EXPECT_GT(queues.size(), static_cast<size_t>(kMaxWaits));
}

TEST(Compile, VerifierErrorsNameTheOp) {
  MachineProfile profile = loadTestProfile("nc-v2");
  // A DVE copy of 70000 elements per partition breaks T7 (64K from SBUF).
  Kernel kernel = buildKernel("big", profile, [](KernelBuilder &b) {
    TileView a = b.sbuf("a", DType::U8, 1, {4, 17500});
    TileView c = b.sbuf("c", DType::U8, 1, {4, 17500});
    b.memset(a, 0.0f, Engine::POOL);
    b.copy(c, a, Engine::DVE);
  });
  Expected<CompiledKernel> compiled = compileKernel(kernel, profile);
  ASSERT_FALSE(compiled.ok());
  EXPECT_NE(compiled.diag().message.find("kernel 'big': op #1 (copy) on DVE:"), std::string::npos)
      << compiled.diag().message;
  EXPECT_NE(compiled.diag().message.find("T7"), std::string::npos) << compiled.diag().message;
}

}  // namespace
}  // namespace tessel::nc::tile
