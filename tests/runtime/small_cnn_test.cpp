// End to end on the bundled example: import, run on every target (the accelerator's at fp32), and
// compare with the golden output that examples/make_small_cnn.py computed independently with numpy.
#include <gtest/gtest.h>

#include "ir/npy.h"
#include "runtime/session.h"

namespace tessel {
namespace {

const std::string kExamples = std::string(TESSEL_SOURCE_DIR) + "/examples/";

class SmallCnn : public ::testing::TestWithParam<std::string> {};

TEST_P(SmallCnn, MatchesNumpyGolden) {
  auto session = Session::load(kExamples + "small_cnn.onnx", GetParam());
  ASSERT_TRUE(session.ok()) << session.diag().str();
  auto input = readNpy(kExamples + "small_cnn_input.npy");
  auto expected = readNpy(kExamples + "small_cnn_expected.npy");
  ASSERT_TRUE(input.ok() && expected.ok());
  auto outputs = (*session)->run({{"image", *input}});
  ASSERT_TRUE(outputs.ok()) << outputs.diag().str();
  ASSERT_EQ(outputs->size(), 1u);
  const Tensor &got = (*outputs)[0].second.tensor();
  ASSERT_EQ(got.sizes(), expected->sizes());
  for (int64_t i = 0; i < got.numel(); ++i) {
    EXPECT_NEAR(got.data<float>()[i], expected->data<float>()[i], 1e-5) << "element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, SmallCnn, ::testing::Values("ref", "cpu", "nc-v2", "nc-v3"));

// On an accelerator the session says where the nodes ran: the small CNN runs on the device.
TEST(SmallCnnPlacement, AcceleratorRunsTheModelOnTheDevice) {
  auto session = Session::load(kExamples + "small_cnn.onnx", "nc-v2");
  ASSERT_TRUE(session.ok()) << session.diag().str();
  auto input = readNpy(kExamples + "small_cnn_input.npy");
  ASSERT_TRUE(input.ok());
  ASSERT_TRUE((*session)->run({{"image", *input}}).ok());
  EXPECT_GT((*session)->lastPlacement().deviceNodes, 0);
  EXPECT_EQ((*session)->lastPlacement().hostNodes, 0) << (*session)->lastPlacement().fallbacks.size();
}

}  // namespace
}  // namespace tessel
