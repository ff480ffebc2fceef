// Reading calibration samples: both folder layouts, and the errors a user can cause, each naming the
// input (and the folder) at fault.
#include <gtest/gtest.h>

#include <filesystem>

#include "ir/builder.h"
#include "ir/npy.h"
#include "quantize/calibration_data.h"

namespace tessel {
namespace {

namespace fs = std::filesystem;

/// Two inputs: "a" f32[N,3] and "b.in" f32[N,3] (a name that is not a file name as it stands).
Model twoInputModel(DType bType = DType::Float32) {
  Model model;
  model.opsetImports[""] = 13;
  model.sourcePath = "two.onnx";
  GraphBuilder b(*model.graph);
  const Shape shape({Dim::symbolic("N"), Dim(3)});
  Value *a = b.input("a", Type::tensor(DType::Float32, shape));
  Value *c = b.input("b/in", Type::tensor(bType, shape));
  b.output(b.op("Add", {a, c}));
  return model;
}

class CalibrationData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessel-calibration-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const fs::path &folder, const std::string &input, std::vector<int64_t> sizes) {
    fs::create_directories(folder);
    ASSERT_TRUE(writeNpy((folder / npyFileName(input)).string(), Tensor(DType::Float32, std::move(sizes))).ok());
  }
  fs::path dir_;
};

TEST_F(CalibrationData, AFlatFolderIsOneSample) {
  write(dir_, "a", {2, 3});
  write(dir_, "b/in", {2, 3});
  auto samples = readCalibrationSamples(twoInputModel(), dir_.string());
  ASSERT_TRUE(samples.ok()) << samples.diag().str();
  ASSERT_EQ(samples->size(), 1u);
  ASSERT_EQ((*samples)[0].feeds.size(), 2u);
  EXPECT_EQ((*samples)[0].feeds[1].first, "b/in");
}

TEST_F(CalibrationData, SubfoldersAreSamplesInNameOrder) {
  for (const char *name : {"s2", "s1", "s3"}) {
    write(dir_ / name, "a", {std::string(name) == "s1" ? 1 : 4, 3});
    write(dir_ / name, "b/in", {std::string(name) == "s1" ? 1 : 4, 3});
  }
  auto samples = readCalibrationSamples(twoInputModel(), dir_.string());
  ASSERT_TRUE(samples.ok()) << samples.diag().str();
  ASSERT_EQ(samples->size(), 3u);
  EXPECT_EQ((*samples)[0].source, (dir_ / "s1").string());
  EXPECT_EQ((*samples)[0].feeds[0].second.tensor().size(0), 1);
}

TEST_F(CalibrationData, AMissingInputIsNamed) {
  write(dir_ / "s1", "a", {2, 3});
  auto samples = readCalibrationSamples(twoInputModel(), dir_.string());
  ASSERT_FALSE(samples.ok());
  EXPECT_EQ(samples.diag().code, ErrorCode::FileNotFound);
  EXPECT_NE(samples.diag().message.find("model input 'b/in'"), std::string::npos) << samples.diag().str();
  EXPECT_NE(samples.diag().message.find("b_in.npy"), std::string::npos) << samples.diag().str();
  EXPECT_EQ(samples.diag().loc.file, (dir_ / "s1").string());
}

TEST_F(CalibrationData, AShapeMismatchNamesTheInputAndTheSample) {
  write(dir_ / "s1", "a", {2, 3});
  write(dir_ / "s1", "b/in", {2, 4});
  auto samples = readCalibrationSamples(twoInputModel(), dir_.string());
  ASSERT_FALSE(samples.ok());
  EXPECT_EQ(samples.diag().code, ErrorCode::ShapeMismatch);
  EXPECT_NE(samples.diag().message.find("input 'b/in' dim 1 is 3"), std::string::npos) << samples.diag().str();
  EXPECT_EQ(samples.diag().loc.file, (dir_ / "s1").string());
}

TEST_F(CalibrationData, ANonFloatInputIsFedAsItIsAndItsTypeChecked) {
  // Token ids, masks: fed to the model as they are (only float values inside it are quantized).
  write(dir_, "a", {2, 3});
  ASSERT_TRUE(writeNpy((dir_ / npyFileName("b/in")).string(), Tensor(DType::Int64, {2, 3})).ok());
  auto samples = readCalibrationSamples(twoInputModel(DType::Int64), dir_.string());
  ASSERT_TRUE(samples.ok()) << samples.diag().str();
  ASSERT_EQ(samples->size(), 1u);
  EXPECT_EQ((*samples)[0].feeds[1].second.tensor().dtype(), DType::Int64);
  // An .npy of another type than the input's is an error naming the input.
  ASSERT_TRUE(writeNpy((dir_ / npyFileName("b/in")).string(), Tensor(DType::Float32, {2, 3})).ok());
  auto wrongType = readCalibrationSamples(twoInputModel(DType::Int64), dir_.string());
  ASSERT_FALSE(wrongType.ok());
  EXPECT_NE(wrongType.diag().message.find("b/in"), std::string::npos) << wrongType.diag().str();
}

TEST_F(CalibrationData, AMissingOrEmptyFolderIsAnError) {
  auto missing = readCalibrationSamples(twoInputModel(), (dir_ / "nope").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.diag().message.find("does not exist"), std::string::npos);
  auto empty = readCalibrationSamples(twoInputModel(), dir_.string());
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.diag().message.find("neither .npy files nor sample folders"), std::string::npos);
}

}  // namespace
}  // namespace tessel
