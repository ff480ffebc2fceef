// The memory planner: buffers alive at the same time never overlap, and dead ones are reused.
#include <gtest/gtest.h>

#include <random>

#include "targets/cpu/memory_plan.h"

namespace tessel::cpu {
namespace {

void expectNoOverlap(const std::vector<BufferLifetime> &buffers, const MemoryPlan &plan) {
  for (size_t a = 0; a < buffers.size(); ++a) {
    EXPECT_EQ(plan.offsets[a] % kArenaAlignment, 0u);
    EXPECT_LE(plan.offsets[a] + buffers[a].bytes, plan.arenaBytes);
    for (size_t b = a + 1; b < buffers.size(); ++b) {
      bool together = buffers[a].first <= buffers[b].last && buffers[b].first <= buffers[a].last;
      bool apart = plan.offsets[a] + buffers[a].bytes <= plan.offsets[b] ||
                   plan.offsets[b] + buffers[b].bytes <= plan.offsets[a];
      EXPECT_TRUE(!together || apart) << "buffers " << a << " and " << b << " overlap";
    }
  }
}

TEST(MemoryPlan, AChainReusesTwoBuffers) {
  // x0 -> x1 -> x2 -> x3: each buffer lives from its definition to its one reader.
  std::vector<BufferLifetime> chain = {{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  MemoryPlan plan = planMemory(chain);
  expectNoOverlap(chain, plan);
  EXPECT_EQ(plan.arenaBytes, 2 * 1024u);
}

TEST(MemoryPlan, FillsGapsBetweenLiveBuffers) {
  std::vector<BufferLifetime> buffers = {{4096, 0, 10}, {64, 0, 2}, {4096, 0, 10}, {64, 3, 5}};
  MemoryPlan plan = planMemory(buffers);
  expectNoOverlap(buffers, plan);
  EXPECT_EQ(plan.arenaBytes, 2 * 4096u + 64);  // The two small buffers share a place.
  EXPECT_EQ(plan.offsets[1], plan.offsets[3]);
}

TEST(MemoryPlan, RandomLifetimesNeverOverlap) {
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    std::vector<BufferLifetime> buffers;
    for (int i = 0; i < 60; ++i) {
      int first = static_cast<int>(rng() % 40);
      buffers.push_back({1 + rng() % 5000, first, first + static_cast<int>(rng() % 10)});
    }
    MemoryPlan plan = planMemory(buffers);
    expectNoOverlap(buffers, plan);
    size_t total = 0;
    for (const auto &b : buffers) total += (b.bytes + 63) / 64 * 64;
    EXPECT_LE(plan.arenaBytes, total);
  }
}

}  // namespace
}  // namespace tessel::cpu
