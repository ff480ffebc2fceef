// The scheduler and the simulator apply one statement of the shared-port rules (isa/ports.h), so on
// programs whose time the ports decide the scheduler's estimate is the simulated time: independent
// DVE and POOL work on SBUF (nc-v2 serialises the two on its SBUF port; nc-v3 only in DVE's
// performance modes), DVE and ACT reading PSUM, and DMA-bound copies.
#include <gtest/gtest.h>

#include "test_util.h"

namespace tessel::nc::tile {
namespace {

/// `pairs` independent elementwise ops on each of DVE and POOL over [128, 2048] bf16 SBUF tiles,
/// then one small store so the kernel has an output.
void sbufPortKernel(KernelBuilder &b, int pairs) {
  HbmView out = b.output("out", DType::BF16, {128, 8});
  TileView x = b.sbuf("x", DType::BF16, 128, {2048});
  b.memset(x, 0.5f, Engine::DVE);
  for (int i = 0; i < pairs; ++i) {
    TileView d = b.sbuf("d", DType::BF16, 128, {2048});
    TileView p = b.sbuf("p", DType::BF16, 128, {2048});
    b.tensorTensor(d, x, x, AluOp::Add, Engine::DVE);
    b.tensorTensor(p, x, x, AluOp::Multiply, Engine::POOL);
  }
  TileView small = b.sbuf("small", DType::BF16, 128, {8});
  b.copy(small, x.cols(0, 8), Engine::DVE);
  b.store(out, small);
}

/// DVE and ACT copies out of PSUM tiles (nc-v2 serialises the two on PSUM).
void psumPortKernel(KernelBuilder &b, int pairs) {
  HbmView out = b.output("out", DType::F32, {128, 8});
  TileView acc = b.psum("acc", DType::F32, 128, {512});
  b.memset(acc, 1.0f, Engine::DVE);
  for (int i = 0; i < pairs; ++i) {
    TileView d = b.sbuf("d", DType::F32, 128, {512});
    TileView a = b.sbuf("a", DType::F32, 128, {512});
    b.copy(d, acc, Engine::DVE);
    b.copy(a, acc, Engine::ACT);
  }
  TileView small = b.sbuf("small", DType::F32, 128, {8});
  b.copy(small, acc.cols(0, 8), Engine::DVE);
  b.store(out, small);
}

/// Loads and stores of [128, 2048] bf16 tiles with nothing in between: the DMA queues decide.
void dmaKernel(KernelBuilder &b, int tiles) {
  HbmView in = b.input("in", DType::BF16, {128 * tiles, 2048});
  HbmView out = b.output("out", DType::BF16, {128 * tiles, 2048});
  for (int i = 0; i < tiles; ++i) {
    TileView t = b.sbuf("t", DType::BF16, 128, {2048});
    b.load(t, in.rows(128 * i, 128));
    b.store(out.rows(128 * i, 128), t);
  }
}

struct Case {
  const char *profile;
  const char *name;
  void (*body)(KernelBuilder &, int);
  int size;
  double tolerance;  // |estimate - simulated| / simulated
};

class PortEstimateTest : public ::testing::TestWithParam<Case> {};

TEST_P(PortEstimateTest, EstimateIsTheSimulatedTime) {
  const Case &c = GetParam();
  MachineProfile profile = loadTestProfile(c.profile);
  Kernel kernel = buildKernel(c.name, profile, [&](KernelBuilder &b) { c.body(b, c.size); });
  Expected<CompiledKernel> compiled = compileKernel(kernel, profile);
  ASSERT_TRUE(compiled.ok()) << compiled.diag().str();
  const double simulated = simulatedNs(*compiled, profile);
  ASSERT_GT(simulated, 0);
  EXPECT_NEAR(compiled->estimatedNs / simulated, 1.0, c.tolerance)
      << c.name << " on " << c.profile << ": estimate " << compiled->estimatedNs << " ns, simulated " << simulated
      << " ns";
}

INSTANTIATE_TEST_SUITE_P(
    Programs, PortEstimateTest,
    ::testing::Values(Case{"nc-v2", "sbuf_ports", sbufPortKernel, 32, 0.02},
                      Case{"nc-v3", "sbuf_ports", sbufPortKernel, 32, 0.02},
                      Case{"nc-v2", "psum_ports", psumPortKernel, 32, 0.02},
                      Case{"nc-v3", "psum_ports", psumPortKernel, 32, 0.02},
                      Case{"nc-v2", "dma", dmaKernel, 16, 0.02}, Case{"nc-v3", "dma", dmaKernel, 16, 0.02}),
    [](const ::testing::TestParamInfo<Case> &info) {
      std::string name = std::string(info.param.name) + "_" + info.param.profile;
      for (char &ch : name)
        if (ch == '-') ch = '_';
      return name;
    });

}  // namespace
}  // namespace tessel::nc::tile
