// The random generators on the reference target, through small graphs run by the interpreter:
// shapes and dtypes, the uniform range, normal moments, Multinomial frequencies (never an
// impossible class), and reproducibility (same seed, same values; no seed, same values run to run
// but different per node). Exact values against numpy's legacy stream are checked by the
// conformance cases in tests/conformance/extra/random_and_roi_cases.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/builder.h"
#include "targets/ref/interpreter.h"

namespace tessel {
namespace {

using Attrs = std::vector<std::pair<std::string, Attribute>>;

/// A model at opset 17 whose graph runs one `opType` node on `inputs` (fed in order).
struct OneNodeModel {
  Model model;
  NamedValues feeds;

  OneNodeModel(const std::string &opType, Attrs attrs, std::vector<Tensor> inputs = {}, int outputs = 1) {
    model.opsetImports[""] = 17;
    GraphBuilder b(*model.graph);
    std::vector<Value *> values;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string name = "x" + std::to_string(i);
      values.push_back(b.input(name, Type::tensor(inputs[i].dtype(), Shape::fromSizes(inputs[i].sizes()))));
      feeds.emplace_back(name, inputs[i]);
    }
    for (int i = 0; i < outputs; ++i) b.output(b.op(opType, values, attrs));
  }

  Expected<NamedValues> run() const { return ReferenceInterpreter(model).run(feeds); }

  /// Runs the model and returns output `index`; fails the test on an error.
  Tensor runOk(size_t index = 0) const {
    Expected<NamedValues> outputs = run();
    EXPECT_TRUE(outputs.ok()) << outputs.diag().str();
    if (!outputs.ok() || outputs->size() <= index) return Tensor();
    return (*outputs)[index].second.tensor();
  }
};

std::vector<double> valuesOf(const Tensor &t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.scalarAsDouble(i));
  return out;
}

bool sameBytes(const Tensor &a, const Tensor &b) {
  return a.dtype() == b.dtype() && a.sizes() == b.sizes() &&
         std::equal(static_cast<const uint8_t *>(a.rawData()), static_cast<const uint8_t *>(a.rawData()) + a.numBytes(),
                    static_cast<const uint8_t *>(b.rawData()));
}

constexpr int64_t kSamples = 100000;

TEST(RandomUniform, ShapeDtypeAndRange) {
  // float16 rounds many draws near `high` up to it; those must be redrawn, not returned.
  for (DType dtype : {DType::Float32, DType::Float64, DType::Float16}) {
    OneNodeModel m("RandomUniform", {{"shape", std::vector<int64_t>{100, 1000}},
                                     {"low", -1.5f},
                                     {"high", 2.5f},
                                     {"dtype", static_cast<int64_t>(dtype)},
                                     {"seed", 4.0f}});
    Tensor y = m.runOk();
    ASSERT_EQ(y.dtype(), dtype);
    ASSERT_EQ(y.sizes(), (std::vector<int64_t>{100, 1000}));
    double sum = 0.0, lowest = 1e9, highest = -1e9;
    for (double v : valuesOf(y)) {
      sum += v;
      lowest = std::min(lowest, v);
      highest = std::max(highest, v);
    }
    EXPECT_GE(lowest, -1.5) << dtypeName(dtype);
    EXPECT_LT(highest, 2.5) << dtypeName(dtype);
    EXPECT_LT(lowest, -1.49) << dtypeName(dtype);   // The range is covered, not just respected.
    EXPECT_GT(highest, 2.49) << dtypeName(dtype);
    EXPECT_NEAR(sum / kSamples, 0.5, 0.02) << dtypeName(dtype);
  }
}

TEST(RandomUniform, DefaultsAreFloatInUnitInterval) {
  OneNodeModel m("RandomUniform", {{"shape", std::vector<int64_t>{2, 3, 4}}});
  Tensor y = m.runOk();
  EXPECT_EQ(y.dtype(), DType::Float32);
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 3, 4}));
  for (double v : valuesOf(y)) {
    EXPECT_GE(v, 0.0);
    EXPECT_LT(v, 1.0);
  }
}

TEST(RandomNormal, MeanAndStddev) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    OneNodeModel m("RandomNormal", {{"shape", std::vector<int64_t>{kSamples}},
                                    {"mean", 5.0f},
                                    {"scale", 2.0f},
                                    {"dtype", static_cast<int64_t>(dtype)},
                                    {"seed", 9.0f}});
    Tensor y = m.runOk();
    ASSERT_EQ(y.dtype(), dtype);
    ASSERT_EQ(y.sizes(), (std::vector<int64_t>{kSamples}));
    std::vector<double> v = valuesOf(y);
    double mean = 0.0, var = 0.0;
    for (double x : v) mean += x;
    mean /= kSamples;
    for (double x : v) var += (x - mean) * (x - mean);
    const double stddev = std::sqrt(var / kSamples);
    EXPECT_NEAR(mean, 5.0, 5.0 * 0.01) << dtypeName(dtype);
    EXPECT_NEAR(stddev, 2.0, 2.0 * 0.02) << dtypeName(dtype);
  }
}

TEST(RandomLike, ShapeFromInputDtypeFromAttributeOrInput) {
  Tensor ints(DType::Int32, {3, 5});
  OneNodeModel uniform("RandomUniformLike", {{"dtype", static_cast<int64_t>(DType::Float64)}, {"low", 2.0f},
                                             {"high", 3.0f}}, {ints});
  Tensor u = uniform.runOk();
  EXPECT_EQ(u.dtype(), DType::Float64);
  EXPECT_EQ(u.sizes(), (std::vector<int64_t>{3, 5}));
  for (double v : valuesOf(u)) {
    EXPECT_GE(v, 2.0);
    EXPECT_LT(v, 3.0);
  }

  OneNodeModel normal("RandomNormalLike", {}, {Tensor(DType::Float16, {4, 1, 2})});
  Tensor n = normal.runOk();
  EXPECT_EQ(n.dtype(), DType::Float16);
  EXPECT_EQ(n.sizes(), (std::vector<int64_t>{4, 1, 2}));

  // Without dtype the input's type is the output's, so it must be a float type.
  OneNodeModel bad("RandomNormalLike", {}, {ints});
  Expected<NamedValues> result = bad.run();
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.diag().message.find("without a dtype attribute"), std::string::npos) << result.diag().str();
}

TEST(RandomReproducibility, SameSeedSameValuesOtherSeedOtherValues) {
  auto draw = [](const std::string &op, float seed) {
    return OneNodeModel(op, {{"shape", std::vector<int64_t>{64}}, {"seed", seed}}).runOk();
  };
  for (const std::string op : {"RandomUniform", "RandomNormal"}) {
    EXPECT_TRUE(sameBytes(draw(op, 7.0f), draw(op, 7.0f))) << op;
    EXPECT_FALSE(sameBytes(draw(op, 7.0f), draw(op, 8.0f))) << op;
    // Seeds outside numpy's integer range still seed deterministically.
    EXPECT_TRUE(sameBytes(draw(op, -2.5f), draw(op, -2.5f))) << op;
    EXPECT_FALSE(sameBytes(draw(op, -2.5f), draw(op, 2.5f))) << op;
  }
}

TEST(RandomReproducibility, UnseededNodesRepeatRunToRunButDifferPerNode) {
  OneNodeModel m("RandomUniform", {{"shape", std::vector<int64_t>{64}}}, {}, /*outputs=*/2);
  Expected<NamedValues> first = m.run(), second = m.run();
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_TRUE(sameBytes((*first)[0].second.tensor(), (*second)[0].second.tensor()));
  EXPECT_TRUE(sameBytes((*first)[1].second.tensor(), (*second)[1].second.tensor()));
  EXPECT_FALSE(sameBytes((*first)[0].second.tensor(), (*first)[1].second.tensor()));
}

TEST(RandomUniform, NegativeShapeIsAnError) {
  OneNodeModel m("RandomUniform", {{"shape", std::vector<int64_t>{3, -1}}});
  Expected<NamedValues> result = m.run();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.diag().code, ErrorCode::InvalidArgument);
  EXPECT_NE(result.diag().message.find("negative dimension"), std::string::npos) << result.diag().str();
}

TEST(RandomUniform, HugeShapeIsAnErrorNotAnAllocation) {
  OneNodeModel m("RandomUniform", {{"shape", std::vector<int64_t>{1 << 20, 1 << 20, 1 << 20}}});
  EXPECT_FALSE(m.run().ok());
}

TEST(Multinomial, FrequenciesFollowSoftmaxAndImpossibleClassesNeverAppear) {
  const float inf = std::numeric_limits<float>::infinity();
  // Row 0: probabilities 0.2, 0.3, 0, 0.5 as unnormalized logs (shifted by 3). Row 1: impossible
  // classes first (-inf) and last (exp underflows to 0) around two equal ones.
  const std::vector<double> probs0 = {0.2, 0.3, 0.0, 0.5};
  auto shiftedLog = [](double p) { return static_cast<float>(std::log(p) + 3.0); };
  Tensor logits = Tensor::fromVector<float>(
      {2, 4}, {shiftedLog(0.2), shiftedLog(0.3), -inf, shiftedLog(0.5), -inf, 1.0f, 1.0f, -2000.0f});
  OneNodeModel m("Multinomial", {{"sample_size", kSamples}, {"dtype", int64_t{7}}, {"seed", 1.0f}}, {logits});
  Tensor y = m.runOk();
  ASSERT_EQ(y.dtype(), DType::Int64);
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{2, kSamples}));
  std::vector<std::vector<int64_t>> counts(2, std::vector<int64_t>(4, 0));
  const int64_t *samples = y.data<int64_t>();
  for (int64_t i = 0; i < 2 * kSamples; ++i) {
    ASSERT_GE(samples[i], 0);
    ASSERT_LT(samples[i], 4);
    ++counts[static_cast<size_t>(i / kSamples)][static_cast<size_t>(samples[i])];
  }
  for (size_t c = 0; c < 4; ++c) {
    const double frequency = static_cast<double>(counts[0][c]) / kSamples;
    EXPECT_NEAR(frequency, probs0[c], probs0[c] * 0.02) << "class " << c;
  }
  EXPECT_EQ(counts[0][2], 0);
  EXPECT_EQ(counts[1][0], 0);
  EXPECT_EQ(counts[1][3], 0);
  EXPECT_NEAR(static_cast<double>(counts[1][1]) / kSamples, 0.5, 0.5 * 0.02);
}

TEST(Multinomial, DefaultsToOneInt32SamplePerRow) {
  OneNodeModel m("Multinomial", {}, {Tensor(DType::Float64, {3, 6})});
  Tensor y = m.runOk();
  EXPECT_EQ(y.dtype(), DType::Int32);
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{3, 1}));
  for (double v : valuesOf(y)) {
    EXPECT_GE(v, 0.0);
    EXPECT_LT(v, 6.0);
  }
}

}  // namespace
}  // namespace tessel
