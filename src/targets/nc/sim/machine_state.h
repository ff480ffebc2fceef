// The memories of one simulated core: SBUF and PSUM as partitions x bytes, HBM as one linear byte
// range (section 4). The functional simulator reads and writes them through access patterns; the
// state also remembers, per PSUM 4-byte word, whether a matmul wrote it last, because accumulating
// onto data a non-matmul instruction wrote is undefined on the hardware (section 4.3) and the
// simulator reports it. Addresses: SBUF/PSUM byte = partition * bytesPerPartition + offset; HBM
// byte = offset.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "support/diagnostic.h"
#include "targets/nc/machine/profile.h"

namespace tessel::nc {

class MachineState {
 public:
  /// Zero-filled SBUF and PSUM sized by `profile`, and `hbmBytes` of zero-filled HBM.
  MachineState(const MachineProfile &profile, uint64_t hbmBytes);

  int64_t partitions() const { return partitions_; }
  uint64_t sbufBytesPerPartition() const { return sbufBytesPerPartition_; }
  uint64_t psumBytesPerPartition() const { return psumBytesPerPartition_; }
  uint64_t hbmBytes() const { return hbm_.size(); }

  /// The raw bytes of each memory (SBUF/PSUM partition-major).
  std::span<uint8_t> sbuf() { return sbuf_; }
  std::span<uint8_t> psum() { return psum_; }
  std::span<uint8_t> hbm() { return hbm_; }

  /// Copies bytes into or out of HBM; OutOfRange error when the range does not fit.
  Status writeHbm(uint64_t offsetBytes, std::span<const uint8_t> bytes);
  Status readHbm(uint64_t offsetBytes, std::span<uint8_t> bytes) const;

  /// The program's launch arguments: the scalar registers the host sets when it starts the program,
  /// which place the operands of Instruction::dynamicOffset.
  const std::vector<int64_t> &launchRegisters() const { return launchRegisters_; }
  void setLaunchRegisters(std::vector<int64_t> values) { launchRegisters_ = std::move(values); }

  /// Per PSUM 4-byte word: true when a matmul wrote it last.
  bool psumWordWrittenByMatmul(uint64_t byteAddress) const { return psumMatmulWritten_[byteAddress / 4]; }
  void setPsumWordWrittenByMatmul(uint64_t byteAddress, bool byMatmul) {
    psumMatmulWritten_[byteAddress / 4] = byMatmul;
  }

 private:
  int64_t partitions_;
  uint64_t sbufBytesPerPartition_, psumBytesPerPartition_;
  std::vector<uint8_t> sbuf_, psum_, hbm_;
  std::vector<bool> psumMatmulWritten_;
  std::vector<int64_t> launchRegisters_;
};

}  // namespace tessel::nc
