// The memories of one simulated core (machine_state.h): zero-filled byte arrays sized from the
// profile, plus the per-PSUM-word "written by a matmul" marks the functional simulator keeps.
#include "targets/nc/sim/machine_state.h"

#include <algorithm>

namespace tessel::nc {

MachineState::MachineState(const MachineProfile &profile, uint64_t hbmBytes)
    : partitions_(profile.partitions),
      sbufBytesPerPartition_(static_cast<uint64_t>(profile.sbuf.bytesPerPartition)),
      psumBytesPerPartition_(static_cast<uint64_t>(profile.psum.bytesPerPartition)),
      sbuf_(static_cast<size_t>(partitions_) * sbufBytesPerPartition_, 0),
      psum_(static_cast<size_t>(partitions_) * psumBytesPerPartition_, 0),
      hbm_(hbmBytes, 0),
      // One mark per 4-byte word; a partial trailing word still gets one.
      psumMatmulWritten_((psum_.size() + 3) / 4, false) {}

Status MachineState::writeHbm(uint64_t offsetBytes, std::span<const uint8_t> bytes) {
  if (offsetBytes > hbm_.size() || bytes.size() > hbm_.size() - offsetBytes)
    return makeError(ErrorCode::InvalidArgument, "HBM write of bytes [{}, {}) past the {}-byte HBM", offsetBytes,
                     offsetBytes + bytes.size(), hbm_.size());
  std::copy(bytes.begin(), bytes.end(), hbm_.begin() + static_cast<ptrdiff_t>(offsetBytes));
  return Status::success();
}

Status MachineState::readHbm(uint64_t offsetBytes, std::span<uint8_t> bytes) const {
  if (offsetBytes > hbm_.size() || bytes.size() > hbm_.size() - offsetBytes)
    return makeError(ErrorCode::InvalidArgument, "HBM read of bytes [{}, {}) past the {}-byte HBM", offsetBytes,
                     offsetBytes + bytes.size(), hbm_.size());
  std::copy_n(hbm_.begin() + static_cast<ptrdiff_t>(offsetBytes), bytes.size(), bytes.begin());
  return Status::success();
}

}  // namespace tessel::nc
