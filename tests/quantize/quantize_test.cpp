// End to end on a small model built here (Conv -> Relu -> Conv -> Flatten -> Gemm or MatMul, with
// biases): quantize it with calibration data written to a temp folder, write and import the QDQ
// model back, and check it against what the rules give, computed here independently: the number of
// QuantizeLinear / DequantizeLinear nodes, the int8 weights and their per-channel scales, the int32
// biases, each activation's scale and zero point from the min/max of the fp32 values, and outputs
// close to the fp32 model's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"
#include "ir/builder.h"
#include "ir/clone.h"
#include "ir/npy.h"
#include "quantize/quantize.h"
#include "runtime/session.h"

namespace tessel {
namespace {

namespace fs = std::filesystem;

Tensor randomTensor(std::vector<int64_t> sizes, std::mt19937 &rng, float lo = -1, float hi = 1) {
  Tensor t(DType::Float32, std::move(sizes));
  std::uniform_real_distribution<float> dist(lo, hi);
  for (float &v : t.span<float>()) v = dist(rng);
  return t;
}

/// `model` with every value typed, by a round trip through ONNX (the importer infers types).
Model typed(const Model &model) {
  auto bytes = exportOnnxBytes(model);
  EXPECT_TRUE(bytes.ok()) << bytes.diag().str();
  auto imported = importOnnxBytes(*bytes, "small.onnx");
  EXPECT_TRUE(imported.ok()) << imported.diag().str();
  return std::move(imported).value();
}

enum class Head { Gemm, GemmTransB, MatMul };

/// x[2,3,6,6] -> Conv(4, pad 1) -> Relu -> Conv(5) -> Flatten -> head -> y, typed.
Model makeModel(Head head, std::mt19937 &rng) {
  Model model;
  model.opsetImports[""] = 13;
  GraphBuilder b(*model.graph);
  Value *x = b.input("x", Type::tensor(DType::Float32, Shape::fromSizes({2, 3, 6, 6})));
  Value *c1 = b.op("Conv", {x, b.constant("w1", randomTensor({4, 3, 3, 3}, rng)), b.constant("b1", randomTensor({4}, rng))},
                   {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  Value *r1 = b.op("Relu", {c1});
  Value *c2 = b.op("Conv", {r1, b.constant("w2", randomTensor({5, 4, 3, 3}, rng)), b.constant("b2", randomTensor({5}, rng))});
  Value *f = b.op("Flatten", {c2});
  Value *y = nullptr;
  if (head == Head::MatMul) {
    Value *mm = b.op("MatMul", {f, b.constant("w3", randomTensor({80, 6}, rng))});
    y = b.op("Add", {mm, b.constant("b3", randomTensor({6}, rng))});
  } else {
    const bool transB = head == Head::GemmTransB;
    Value *w3 = b.constant("w3", randomTensor(transB ? std::vector<int64_t>{6, 80} : std::vector<int64_t>{80, 6}, rng));
    y = b.op("Gemm", {f, w3, b.constant("b3", randomTensor({6}, rng))}, {{"transB", int64_t{transB}}});
  }
  // Readable names for the checks (the builder's are derived from the op types).
  using Named = std::pair<Value *, const char *>;
  for (auto [value, name] : {Named{c1, "c1"}, Named{r1, "r1"}, Named{c2, "c2"}, Named{f, "f"}, Named{y, "y"}})
    model.graph->renameValue(value, name);
  if (head == Head::MatMul) model.graph->renameValue(y->producer()->input(0), "mm");
  b.output(y);
  return typed(model);
}

class Quantize : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessel-quantize-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// Writes `count` samples of x (uniform in [lo, hi)) as DIR/sample_N/x.npy and reads them back.
  std::vector<CalibrationSample> writeSamples(const Model &model, int count, std::mt19937 &rng, float lo = -1, float hi = 1) {
    for (int i = 0; i < count; ++i) {
      fs::create_directories(dir_ / ("sample_" + std::to_string(i)));
      EXPECT_TRUE(writeNpy((dir_ / ("sample_" + std::to_string(i)) / "x.npy").string(), randomTensor({2, 3, 6, 6}, rng, lo, hi)).ok());
    }
    auto samples = readCalibrationSamples(model, dir_.string());
    EXPECT_TRUE(samples.ok()) << samples.diag().str();
    return std::move(samples).value();
  }

  /// Quantizes, writes the QDQ model and imports it back.
  Model quantizeAndReload(const Model &model, const std::vector<CalibrationSample> &samples, QuantizeOptions options) {
    options.calibrationTarget = "ref";  // The same numerics as the fp32 values computed below.
    auto result = quantizeModel(model, samples, options);
    EXPECT_TRUE(result.ok()) << result.diag().str();
    const std::string path = (dir_ / "out.onnx").string();
    EXPECT_TRUE(exportOnnxFile(result->model, path).ok());
    auto reloaded = importOnnxFile(path);
    EXPECT_TRUE(reloaded.ok()) << reloaded.diag().str();
    report_ = result->report;
    return std::move(reloaded).value();
  }

  fs::path dir_;
  QuantizeReport report_;
};

int countOps(const Graph &graph, const std::string &opType) {
  return static_cast<int>(std::count_if(graph.nodes().begin(), graph.nodes().end(),
                                        [&](const auto &n) { return n->opType() == opType; }));
}

const Tensor &initializer(const Graph &graph, const std::string &name) {
  const Value *v = graph.findValue(name);
  EXPECT_TRUE(v && v->hasInitializer()) << "no initializer '" << name << "'";
  static const Tensor kNone;
  return v && v->hasInitializer() ? v->initializer() : kNone;
}

/// The fp32 values of `names` over the samples, read from the ref target by marking them outputs.
std::map<std::string, std::vector<float>> fp32Values(const Model &model, const std::vector<std::string> &names,
                                                     const std::vector<CalibrationSample> &samples) {
  Model copy = cloneModel(model);
  for (const std::string &name : names)
    if (copy.graph->findValue(name)->producer()) copy.graph->addOutput(copy.graph->findValue(name));
  auto session = Session::create(std::move(copy), "ref");
  std::map<std::string, std::vector<float>> values;
  for (const CalibrationSample &sample : samples) {
    auto outputs = (*session)->run(sample.feeds);
    EXPECT_TRUE(outputs.ok()) << outputs.diag().str();
    NamedValues all = sample.feeds;
    all.insert(all.end(), outputs->begin(), outputs->end());
    for (const auto &[name, value] : all) {
      auto span = value.tensor().span<float>();
      values[name].insert(values[name].end(), span.begin(), span.end());
    }
  }
  return values;
}

/// Checks tensor `name`'s scale and zero point in the QDQ model against its fp32 values' range.
void expectActivationParams(const Graph &qdq, const std::string &name, const std::vector<float> &values, bool symmetric) {
  SCOPED_TRACE(name);
  const float lo = std::min(0.0f, *std::min_element(values.begin(), values.end()));
  const float hi = std::max(0.0f, *std::max_element(values.begin(), values.end()));
  const Tensor &scale = initializer(qdq, name + "_scale");
  const Tensor &zeroPoint = initializer(qdq, name + "_zero_point");
  ASSERT_EQ(scale.rank(), 0u);
  ASSERT_EQ(zeroPoint.rank(), 0u);
  if (symmetric) {
    ASSERT_EQ(zeroPoint.dtype(), DType::Int8);
    EXPECT_FLOAT_EQ(scale.data<float>()[0], std::max(-lo, hi) / 127);
    EXPECT_EQ(zeroPoint.data<int8_t>()[0], 0);
    return;
  }
  ASSERT_EQ(zeroPoint.dtype(), DType::UInt8);
  const float expectedScale = (hi - lo) / 255;
  EXPECT_FLOAT_EQ(scale.data<float>()[0], expectedScale);
  EXPECT_EQ(zeroPoint.data<uint8_t>()[0], static_cast<uint8_t>(std::clamp(std::nearbyint(-lo / expectedScale), 0.0f, 255.0f)));
}

/// Checks weight `name`: int8 with zero point 0 and one scale max|w_c| / 127 per index c along
/// `axis` (or one for the tensor when axis < 0), the values round(w / scale).
void expectWeight(const Graph &qdq, const Tensor &w, const std::string &name, int64_t axis) {
  SCOPED_TRACE(name);
  const Tensor &q = initializer(qdq, name + "_quantized");
  const Tensor &scale = initializer(qdq, name + "_scale");
  const Tensor &zeroPoint = initializer(qdq, name + "_zero_point");
  ASSERT_EQ(q.dtype(), DType::Int8);
  ASSERT_EQ(q.sizes(), w.sizes());
  ASSERT_EQ(zeroPoint.dtype(), DType::Int8);
  const int64_t channels = axis < 0 ? 1 : w.size(static_cast<size_t>(axis));
  ASSERT_EQ(scale.numel(), channels);
  ASSERT_EQ(scale.rank(), axis < 0 ? 0u : 1u);
  std::vector<float> maxAbs(static_cast<size_t>(channels), 0.0f);
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(std::max<int64_t>(axis, 0)) + 1; axis >= 0 && d < w.rank(); ++d) inner *= w.size(d);
  auto channelOf = [&](int64_t i) { return axis < 0 ? 0 : (i / inner) % channels; };
  for (int64_t i = 0; i < w.numel(); ++i)
    maxAbs[static_cast<size_t>(channelOf(i))] = std::max(maxAbs[static_cast<size_t>(channelOf(i))], std::fabs(w.data<float>()[i]));
  for (int64_t c = 0; c < channels; ++c) {
    EXPECT_FLOAT_EQ(scale.data<float>()[c], maxAbs[static_cast<size_t>(c)] / 127) << "channel " << c;
    EXPECT_EQ(zeroPoint.data<int8_t>()[c], 0);
  }
  for (int64_t i = 0; i < w.numel(); ++i) {
    const float s = scale.data<float>()[channelOf(i)];
    EXPECT_EQ(q.data<int8_t>()[i], static_cast<int8_t>(std::nearbyint(w.data<float>()[i] / s))) << "element " << i;
  }
  // The DequantizeLinear that reads it back says the axis.
  const Node *dq = qdq.findValue(name + "_dequantized")->producer();
  ASSERT_TRUE(dq);
  EXPECT_EQ(dq->opType(), "DequantizeLinear");
  if (axis >= 0) EXPECT_EQ(dq->attrInt("axis", -99), axis);
  else EXPECT_FALSE(dq->hasAttr("axis"));
}

/// Checks bias `name`: int32 = round(b / (inputScale * weightScale_c)).
void expectBias(const Graph &qdq, const Tensor &b, const std::string &name, const std::string &input,
                const std::string &weight) {
  SCOPED_TRACE(name);
  const Tensor &q = initializer(qdq, name + "_quantized");
  ASSERT_EQ(q.dtype(), DType::Int32);
  ASSERT_EQ(initializer(qdq, name + "_zero_point").dtype(), DType::Int32);
  const float inputScale = initializer(qdq, input + "_scale").data<float>()[0];
  const Tensor &weightScale = initializer(qdq, weight + "_scale");
  for (int64_t c = 0; c < b.numel(); ++c) {
    const float scale = inputScale * weightScale.data<float>()[weightScale.numel() == 1 ? 0 : c];
    EXPECT_EQ(q.data<int32_t>()[c], static_cast<int32_t>(std::nearbyint(b.data<float>()[c] / scale))) << "channel " << c;
  }
}

double cosine(const Tensor &a, const Tensor &b) {
  double dot = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    dot += double(a.data<float>()[i]) * b.data<float>()[i];
    aa += double(a.data<float>()[i]) * a.data<float>()[i];
    bb += double(b.data<float>()[i]) * b.data<float>()[i];
  }
  return dot / std::sqrt(aa * bb);
}

/// Both models' output y on every sample: the QDQ model's cosine similarity with the fp32 model's.
void expectOutputsClose(const Model &fp32, const Model &qdq, const std::vector<CalibrationSample> &samples) {
  auto want = Session::create(cloneModel(fp32), "ref");
  auto got = Session::create(cloneModel(qdq), "ref");
  for (const CalibrationSample &sample : samples) {
    auto w = (*want)->run(sample.feeds);
    auto g = (*got)->run(sample.feeds);
    ASSERT_TRUE(w.ok() && g.ok()) << (g.ok() ? "" : g.diag().str());
    ASSERT_EQ((*g)[0].first, "y");  // The graph output keeps its name.
    EXPECT_GE(cosine((*w)[0].second.tensor(), (*g)[0].second.tensor()), 0.99) << sample.source;
  }
}

TEST_F(Quantize, GemmModelFollowsTheQdqRules) {
  std::mt19937 rng(7);
  Model model = makeModel(Head::Gemm, rng);
  std::vector<CalibrationSample> samples = writeSamples(model, 3, rng);
  Model qdq = quantizeAndReload(model, samples, {});
  const Graph &g = *qdq.graph;
  // Activations: x, Relu's r1 (not the Conv's c1 before it), c2, f, y: one pair each. DQs also for
  // three weights and three biases.
  EXPECT_EQ(countOps(g, "QuantizeLinear"), 5);
  EXPECT_EQ(countOps(g, "DequantizeLinear"), 11);
  EXPECT_EQ(qdq.opsetFor(""), 13);
  const std::vector<std::string> activations = {"x", "r1", "c2", "f", "y"};
  auto fp32 = fp32Values(model, activations, samples);
  for (const std::string &name : activations) expectActivationParams(g, name, fp32[name], /*symmetric=*/false);
  EXPECT_EQ(initializer(g, "r1_zero_point").data<uint8_t>()[0], 0);  // A Relu's range starts at 0.
  EXPECT_EQ(g.findValue("c1_scale"), nullptr);                        // The Conv's output before it is not quantized.
  const Graph &f = *model.graph;
  expectWeight(g, initializer(f, "w1"), "w1", 0);
  expectWeight(g, initializer(f, "w2"), "w2", 0);
  expectWeight(g, initializer(f, "w3"), "w3", 1);  // Gemm B [K, N]: the channels are N.
  expectBias(g, initializer(f, "b1"), "b1", "x", "w1");
  expectBias(g, initializer(f, "b2"), "b2", "r1", "w2");
  expectBias(g, initializer(f, "b3"), "b3", "f", "w3");
  // The float weights are gone.
  EXPECT_EQ(g.findValue("w1"), nullptr);
  expectOutputsClose(model, qdq, samples);
  // The report: one entry per node, and the error of y, small.
  ASSERT_EQ(report_.nodes.size(), 3u);
  EXPECT_EQ(report_.nodes[0].node.output.name, "r1");
  ASSERT_EQ(report_.modelOutputs.size(), 1u);
  EXPECT_GE(report_.modelOutputs[0].second.cosine, 0.99);
  EXPECT_LT(report_.modelOutputs[0].second.relativeL2, 0.1);
  EXPECT_GT(report_.modelOutputs[0].second.maxAbs, 0.0);  // Quantization does change something.
}

TEST_F(Quantize, GemmTransBQuantizesWeightRows) {
  std::mt19937 rng(8);
  Model model = makeModel(Head::GemmTransB, rng);
  std::vector<CalibrationSample> samples = writeSamples(model, 2, rng);
  Model qdq = quantizeAndReload(model, samples, {});
  expectWeight(*qdq.graph, initializer(*model.graph, "w3"), "w3", 0);  // B [N, K].
  expectOutputsClose(model, qdq, samples);
}

TEST_F(Quantize, MatMulQuantizesColumnsAndLeavesTheAddAlone) {
  std::mt19937 rng(9);
  Model model = makeModel(Head::MatMul, rng);
  std::vector<CalibrationSample> samples = writeSamples(model, 2, rng);
  Model qdq = quantizeAndReload(model, samples, {});
  const Graph &g = *qdq.graph;
  // x, r1, c2, f, and the MatMul's output mm; the Add's output y stays f32.
  EXPECT_EQ(countOps(g, "QuantizeLinear"), 5);
  EXPECT_EQ(countOps(g, "DequantizeLinear"), 5 + 3 + 2);
  EXPECT_EQ(g.findValue("y_scale"), nullptr);
  EXPECT_NE(g.findValue("b3"), nullptr);
  expectWeight(g, initializer(*model.graph, "w3"), "w3", 1);  // MatMul B [K, N].
  auto fp32 = fp32Values(model, {"mm"}, samples);
  expectActivationParams(g, "mm", fp32["mm"], /*symmetric=*/false);
  expectOutputsClose(model, qdq, samples);
}

TEST_F(Quantize, PerTensorWeightsAndSymmetricActivations) {
  std::mt19937 rng(10);
  Model model = makeModel(Head::Gemm, rng);
  // Inputs all above 0: an asymmetric range would start at 0; a symmetric one is still +-max.
  std::vector<CalibrationSample> samples = writeSamples(model, 2, rng, 0.5f, 2.0f);
  QuantizeOptions options;
  options.perChannel = false;
  options.symmetricActivations = true;
  Model qdq = quantizeAndReload(model, samples, options);
  const Graph &g = *qdq.graph;
  for (const char *w : {"w1", "w2", "w3"}) expectWeight(g, initializer(*model.graph, w), w, -1);
  expectBias(g, initializer(*model.graph, "b2"), "b2", "r1", "w2");
  EXPECT_EQ(initializer(g, "b2_scale").rank(), 0u);
  const std::vector<std::string> activations = {"x", "r1", "c2", "f", "y"};
  auto fp32 = fp32Values(model, activations, samples);
  for (const std::string &name : activations) expectActivationParams(g, name, fp32[name], /*symmetric=*/true);
  expectOutputsClose(model, qdq, samples);
}

TEST_F(Quantize, PercentileLeavesOutliersOutOfTheRange) {
  std::mt19937 rng(11);
  Model model = makeModel(Head::Gemm, rng);
  std::vector<CalibrationSample> samples = writeSamples(model, 1, rng);
  // One outlier in 432 values: the 99th percentile of |x| ignores it.
  samples[0].feeds[0].second.tensor().data<float>()[17] = 50.0f;
  QuantizeOptions options;
  options.method = CalibrationMethod::Percentile;
  options.percentile = 99.0;
  options.symmetricActivations = true;
  Model qdq = quantizeAndReload(model, samples, options);
  std::vector<float> magnitudes;
  for (float v : samples[0].feeds[0].second.tensor().span<float>()) magnitudes.push_back(std::fabs(v));
  std::sort(magnitudes.begin(), magnitudes.end());
  const float p99 = magnitudes[static_cast<size_t>(std::ceil(0.99 * magnitudes.size())) - 1];
  const float binWidth = 50.0f / 2048;  // The histogram's, over [0, max|x|].
  EXPECT_NEAR(initializer(*qdq.graph, "x_scale").data<float>()[0] * 127, p99, binWidth);
}

TEST_F(Quantize, AnOpset11ModelIsConvertedTo13) {
  std::mt19937 rng(12);
  Model model = makeModel(Head::Gemm, rng);
  model.opsetImports[""] = 11;
  std::vector<CalibrationSample> samples = writeSamples(model, 1, rng);
  Model qdq = quantizeAndReload(model, samples, {});
  EXPECT_EQ(qdq.opsetFor(""), 13);
  EXPECT_EQ(countOps(*qdq.graph, "QuantizeLinear"), 5);
}

TEST_F(Quantize, AWeightListedAsAnInputIsQuantizedAndTheInputStays) {
  std::mt19937 rng(13);
  Model model;
  model.opsetImports[""] = 13;
  GraphBuilder b(*model.graph);
  Value *x = b.input("x", Type::tensor(DType::Float32, Shape::fromSizes({2, 3, 6, 6})));
  Value *w = b.input("w", Type::tensor(DType::Float32, Shape::fromSizes({4, 3, 3, 3})));
  model.graph->addInitializer("w", randomTensor({4, 3, 3, 3}, rng));  // Both, as before IR version 4.
  b.output(b.op("Conv", {x, w}));
  model = typed(model);
  std::vector<CalibrationSample> samples = writeSamples(model, 1, rng);
  Model qdq = quantizeAndReload(model, samples, {});
  expectWeight(*qdq.graph, initializer(*model.graph, "w"), "w", 0);
  ASSERT_NE(qdq.graph->findValue("w"), nullptr);
  EXPECT_TRUE(qdq.graph->findValue("w")->isGraphInput());
}

TEST_F(Quantize, AModelWithNothingToQuantizeIsAnError) {
  Model model;
  model.opsetImports[""] = 13;
  GraphBuilder b(*model.graph);
  b.output(b.op("Relu", {b.input("x", Type::tensor(DType::Float32, Shape::fromSizes({2})))}));
  auto result = quantizeModel(model, {CalibrationSample{"s", {{"x", Tensor::fromVector<float>({2}, {1, 2})}}}}, {});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.diag().message.find("nothing to quantize"), std::string::npos) << result.diag().str();
}

}  // namespace
}  // namespace tessel
