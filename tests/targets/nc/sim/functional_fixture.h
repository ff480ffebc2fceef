// Shared fixture of the functional simulator tests: an nc-v2 MachineState with a small HBM, helpers
// that poke and peek elements by (memory, partition, byte offset), and run(), which assembles one or
// more instructions (assembler.h syntax) and executes them in order.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "support/float_types.h"
#include "targets/nc/isa/assembler.h"
#include "targets/nc/machine/profile.h"
#include "targets/nc/sim/functional/execute.h"
#include "targets/nc/sim/machine_state.h"

namespace tessel::nc::testing {

class FunctionalTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kHbmBytes = 1 << 20;

  void SetUp() override {
    auto loaded = loadProfile("nc-v2");
    ASSERT_TRUE(loaded.ok()) << loaded.diag().message;
    profile_ = *loaded;
    state_ = std::make_unique<MachineState>(profile_, kHbmBytes);
  }

  /// Assembles `text` and executes each instruction; returns the first error.
  Status run(const std::string &text) {
    auto program = assemble(text, "test.s");
    if (!program.ok()) return program.diag();
    for (size_t i = 0; i < program->size(); ++i) {
      Status status = executeInstruction((*program)[i], i, *state_, profile_);
      if (!status.ok()) return status;
    }
    return Status::success();
  }

  /// The message of run(text)'s error, or "ok".
  std::string runError(const std::string &text) {
    Status status = run(text);
    return status.ok() ? "ok" : status.diag().message;
  }

  /// The byte at (space, partition, offset); HBM ignores the partition.
  uint8_t *at(MemSpace space, int64_t partition, uint64_t offset) {
    switch (space) {
      case MemSpace::SBUF: return state_->sbuf().data() + partition * state_->sbufBytesPerPartition() + offset;
      case MemSpace::PSUM: return state_->psum().data() + partition * state_->psumBytesPerPartition() + offset;
      case MemSpace::HBM: return state_->hbm().data() + offset;
    }
    return nullptr;
  }

  template <class T>
  void put(MemSpace space, int64_t partition, uint64_t offset, T value) {
    std::memcpy(at(space, partition, offset), &value, sizeof(T));
  }
  template <class T>
  T get(MemSpace space, int64_t partition, uint64_t offset) {
    T value;
    std::memcpy(&value, at(space, partition, offset), sizeof(T));
    return value;
  }

  void putF32(MemSpace space, int64_t p, uint64_t offset, float value) { put<float>(space, p, offset, value); }
  float getF32(MemSpace space, int64_t p, uint64_t offset) { return get<float>(space, p, offset); }
  void putBf16(MemSpace space, int64_t p, uint64_t offset, float value) {
    put<uint16_t>(space, p, offset, BFloat16::fromFloat(value));
  }
  float getBf16(MemSpace space, int64_t p, uint64_t offset) {
    return std::bit_cast<float>(static_cast<uint32_t>(get<uint16_t>(space, p, offset)) << 16);
  }

  static constexpr MemSpace kSbuf = MemSpace::SBUF, kPsum = MemSpace::PSUM, kHbm = MemSpace::HBM;

  MachineProfile profile_;
  std::unique_ptr<MachineState> state_;
};

}  // namespace tessel::nc::testing
