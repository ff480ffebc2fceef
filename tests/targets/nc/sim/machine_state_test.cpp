// MachineState: memory sizes come from the profile, everything starts zeroed and unmarked, HBM
// copies are bounds-checked, and the PSUM marks are per 4-byte word.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "targets/nc/machine/profile.h"
#include "targets/nc/sim/machine_state.h"

namespace tessel::nc {
namespace {

MachineProfile profile(const char *name) {
  auto loaded = loadProfile(name);
  EXPECT_TRUE(loaded.ok());
  return *loaded;
}

TEST(NcMachineState, SizesFromProfile) {
  for (const char *name : {"nc-v2", "nc-v3"}) {
    MachineProfile p = profile(name);
    MachineState state(p, 4096);
    EXPECT_EQ(state.partitions(), p.partitions);
    EXPECT_EQ(state.sbufBytesPerPartition(), static_cast<uint64_t>(p.sbuf.bytesPerPartition));
    EXPECT_EQ(state.psumBytesPerPartition(), static_cast<uint64_t>(p.psum.bytesPerPartition));
    EXPECT_EQ(state.sbuf().size(), static_cast<size_t>(p.partitions * p.sbuf.bytesPerPartition));
    EXPECT_EQ(state.psum().size(), static_cast<size_t>(p.partitions * p.psum.bytesPerPartition));
    EXPECT_EQ(state.hbmBytes(), 4096u);
  }
}

TEST(NcMachineState, StartsZeroed) {
  MachineState state(profile("nc-v2"), 1024);
  auto zero = [](std::span<uint8_t> bytes) {
    return std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b == 0; });
  };
  EXPECT_TRUE(zero(state.sbuf()));
  EXPECT_TRUE(zero(state.psum()));
  EXPECT_TRUE(zero(state.hbm()));
  EXPECT_FALSE(state.psumWordWrittenByMatmul(0));
  EXPECT_FALSE(state.psumWordWrittenByMatmul(state.psum().size() - 4));
}

TEST(NcMachineState, HbmReadWrite) {
  MachineState state(profile("nc-v2"), 16);
  std::vector<uint8_t> bytes = {1, 2, 3, 4};
  ASSERT_TRUE(state.writeHbm(12, bytes).ok());
  std::vector<uint8_t> back(4);
  ASSERT_TRUE(state.readHbm(12, back).ok());
  EXPECT_EQ(back, bytes);
  EXPECT_EQ(state.hbm()[12], 1);

  Status past = state.writeHbm(13, bytes);
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.diag().code, ErrorCode::InvalidArgument);
  EXPECT_EQ(past.diag().message, "HBM write of bytes [13, 17) past the 16-byte HBM");
  Status far = state.readHbm(~0ull - 1, back);
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(state.hbm()[13], 2);  // The failed write changed nothing.
  EXPECT_TRUE(state.writeHbm(16, std::span<const uint8_t>()).ok());
}

TEST(NcMachineState, PsumMarksPerWord) {
  MachineState state(profile("nc-v2"), 0);
  const uint64_t partition1 = state.psumBytesPerPartition();
  state.setPsumWordWrittenByMatmul(partition1 + 8, true);
  EXPECT_TRUE(state.psumWordWrittenByMatmul(partition1 + 8));
  EXPECT_TRUE(state.psumWordWrittenByMatmul(partition1 + 11));  // Same word.
  EXPECT_FALSE(state.psumWordWrittenByMatmul(partition1 + 12));
  EXPECT_FALSE(state.psumWordWrittenByMatmul(8));
  state.setPsumWordWrittenByMatmul(partition1 + 10, false);
  EXPECT_FALSE(state.psumWordWrittenByMatmul(partition1 + 8));
}

}  // namespace
}  // namespace tessel::nc
