// Robustness of the compilers. Valid but unusual models: seeded random graphs of real ops over odd
// shapes (scalars, size-1 and empty dims, broadcasting corners, prime sizes, 5-D) are compiled for
// cpu (-O3) and nc-v2 and run. Whatever the reference interpreter runs, both targets must run too
// (the accelerator moving to the host what it cannot do) and agree with it; nothing may crash,
// hang or end in an internal error. Damaged copies of real models: each one that imports compiles
// and runs, or fails with a clear diagnostic. Deterministic seeds; the sanitizer build runs it too.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "frontend/onnx/importer.h"
#include "model_builder.h"
#include "runtime/session.h"
#include "targets/nc/compiler/executable.h"

namespace tessel {
namespace {

/// Builds one random model as an ONNX protobuf: a chain of ops over a growing pool of values whose
/// shapes the builder tracks, so that every node it emits is valid.
class RandomModel {
 public:
  explicit RandomModel(uint32_t seed) : rng_(seed) {
    model_.set_ir_version(8);
    auto *opset = model_.add_opset_import();
    opset->set_domain("");
    opset->set_version(13);
    model_.mutable_graph()->set_name("fuzz");
  }

  onnx::ModelProto build(int nodes) {
    addInput(randomShape(pick(0, 4)));
    if (coin(0.3)) addInput(values_[0].shape);
    for (int i = 0; i < nodes; ++i) addRandomNode();
    addOutput(values_.back());
    if (values_.size() > 3 && coin(0.5)) addOutput(values_[static_cast<size_t>(pick(1, static_cast<int>(values_.size()) - 2))]);
    return model_;
  }

 private:
  struct Val {
    std::string name;
    std::vector<int64_t> shape;
  };

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  const Val &anyValue() { return values_[static_cast<size_t>(pick(0, static_cast<int>(values_.size()) - 1))]; }

  std::vector<int64_t> randomShape(int rank) {
    static constexpr int64_t kSizes[] = {1, 1, 2, 3, 5, 7, 8, 16, 17, 33, 64};
    std::vector<int64_t> shape;
    for (int d = 0; d < rank; ++d) shape.push_back(coin(0.04) ? 0 : kSizes[pick(0, 10)]);
    return shape;
  }

  static int64_t numel(const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }

  std::string fresh() { return "v" + std::to_string(counter_++); }

  void setInfo(onnx::ValueInfoProto *info, const Val &v) {
    info->set_name(v.name);
    auto *t = info->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    auto *shape = t->mutable_shape();
    for (int64_t d : v.shape) shape->add_dim()->set_dim_value(d);
  }

  void addInput(std::vector<int64_t> shape) {
    Val v{fresh(), std::move(shape)};
    setInfo(model_.mutable_graph()->add_input(), v);
    values_.push_back(v);
  }

  void addOutput(const Val &v) {
    for (const auto &out : model_.graph().output())
      if (out.name() == v.name) return;
    setInfo(model_.mutable_graph()->add_output(), v);
  }

  /// A float initializer of the given shape with values in [-1, 1).
  std::string constant(const std::vector<int64_t> &shape) {
    auto *t = model_.mutable_graph()->add_initializer();
    t->set_name(fresh());
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shape) t->add_dims(d);
    std::uniform_real_distribution<float> u(-1, 1);
    for (int64_t i = 0; i < numel(shape); ++i) t->add_float_data(u(rng_));
    return t->name();
  }

  std::string intConstant(const std::vector<int64_t> &values) {
    auto *t = model_.mutable_graph()->add_initializer();
    t->set_name(fresh());
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
    return t->name();
  }

  onnx::NodeProto *node(const std::string &op, std::vector<std::string> inputs, std::vector<int64_t> outShape) {
    auto *n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + std::to_string(counter_));
    for (const std::string &in : inputs) n->add_input(in);
    Val out{fresh(), std::move(outShape)};
    n->add_output(out.name);
    values_.push_back(out);
    return n;
  }

  static void attrInt(onnx::NodeProto *n, const char *name, int64_t v) {
    auto *a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attrFloat(onnx::NodeProto *n, const char *name, float v) {
    auto *a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attrInts(onnx::NodeProto *n, const char *name, const std::vector<int64_t> &v) {
    auto *a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }

  void addRandomNode() {
    const Val x = anyValue();
    const int rank = static_cast<int>(x.shape.size());
    switch (pick(0, 13)) {
      case 0: {  // Unary activations, with and without parameters.
        static const char *kOps[] = {"Relu", "Sigmoid", "Tanh", "Neg", "Abs", "LeakyRelu", "HardSigmoid", "Elu"};
        const char *op = kOps[pick(0, 7)];
        auto *n = node(op, {x.name}, x.shape);
        if (std::string(op) == "LeakyRelu") attrFloat(n, "alpha", 0.07f);
        break;
      }
      case 1:
      case 2: {  // Binary ops against a broadcast partner: the same value, a scalar, the last dim, [1].
        static const char *kOps[] = {"Add", "Mul", "Sub", "Max"};
        std::vector<int64_t> partner;
        const int form = pick(0, 3);
        if (form == 2 && rank > 0) partner = {x.shape.back()};
        else if (form == 3) partner = {1};
        std::vector<int64_t> out = x.shape;
        if (form == 3 && rank == 0) out = {1};  // [] against [1] broadcasts to [1].
        std::string other = form == 0 ? x.name : constant(partner);
        if (coin(0.5)) node(kOps[pick(0, 3)], {x.name, other}, out);
        else node(kOps[pick(0, 3)], {other, x.name}, out);
        break;
      }
      case 3: {  // MatMul with a weight; rank 1 is the vector corner.
        if (rank == 0) return;
        const int64_t k = x.shape.back(), n = std::vector<int64_t>{1, 3, 16, 40}[static_cast<size_t>(pick(0, 3))];
        std::vector<int64_t> out = x.shape;
        if (rank == 1) out = {n};
        else out.back() = n;
        node("MatMul", {x.name, constant({k, n})}, out);
        break;
      }
      case 4: {  // Softmax over the last axis.
        if (rank == 0) return;
        attrInt(node("Softmax", {x.name}, x.shape), "axis", -1);
        break;
      }
      case 5: {  // ReduceMean over one axis, kept or not.
        if (rank == 0) return;
        const int axis = pick(0, rank - 1);
        const bool keep = coin(0.5);
        std::vector<int64_t> out;
        for (int d = 0; d < rank; ++d) {
          if (d != axis) out.push_back(x.shape[static_cast<size_t>(d)]);
          else if (keep) out.push_back(1);
        }
        if (std::find(x.shape.begin(), x.shape.end(), 0) != x.shape.end()) return;  // Mean of nothing.
        auto *n = node("ReduceMean", {x.name}, out);
        attrInts(n, "axes", {axis});
        attrInt(n, "keepdims", keep ? 1 : 0);
        break;
      }
      case 6: {  // Transpose by a random permutation.
        if (rank == 0) return;
        std::vector<int64_t> perm(static_cast<size_t>(rank));
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng_);
        std::vector<int64_t> out;
        for (int64_t p : perm) out.push_back(x.shape[static_cast<size_t>(p)]);
        attrInts(node("Transpose", {x.name}, out), "perm", perm);
        break;
      }
      case 7: {  // Reshape to [-1], [1, -1] or a 5-D view.
        const int64_t n = numel(x.shape);
        const int form = pick(0, 2);
        std::vector<int64_t> target = form == 0 ? std::vector<int64_t>{-1} : form == 1 ? std::vector<int64_t>{1, -1}
                                                                                        : std::vector<int64_t>{1, 1, 1, 1, -1};
        std::vector<int64_t> out = target;
        out.back() = n;
        node("Reshape", {x.name, intConstant(target)}, out);
        break;
      }
      case 8: {  // Unsqueeze at the front (opset 13: axes as an input).
        if (rank >= 5) return;
        std::vector<int64_t> out = x.shape;
        out.insert(out.begin(), 1);
        node("Unsqueeze", {x.name, intConstant({0})}, out);
        break;
      }
      case 9: {  // Concat with itself on a random axis.
        if (rank == 0) return;
        const int axis = pick(0, rank - 1);
        std::vector<int64_t> out = x.shape;
        out[static_cast<size_t>(axis)] *= 2;
        attrInt(node("Concat", {x.name, x.name}, out), "axis", axis);
        break;
      }
      case 10: {  // Slice one axis with starts and ends that need clamping, negative or past the end.
        if (rank == 0) return;
        const int axis = pick(0, rank - 1);
        const int64_t size = x.shape[static_cast<size_t>(axis)];
        const int64_t start = pick(-3, 3), end = coin(0.3) ? int64_t{1} << 40 : pick(-2, 5);
        auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + size : v, int64_t{0}, size); };
        std::vector<int64_t> out = x.shape;
        out[static_cast<size_t>(axis)] = std::max<int64_t>(0, clamp(end) - clamp(start));
        node("Slice", {x.name, intConstant({start}), intConstant({end}), intConstant({axis})}, out);
        break;
      }
      case 11: {  // A 2-D convolution over a value viewed as NCHW.
        if (rank != 4 || x.shape[2] < 3 || x.shape[3] < 3 || x.shape[1] == 0 || x.shape[0] == 0) return;
        const int64_t m = pick(1, 8), k = coin(0.5) ? 1 : 3, pad = k == 3 && coin(0.5) ? 1 : 0;
        const int64_t stride = coin(0.3) ? 2 : 1, group = coin(0.3) ? x.shape[1] : 1;
        const int64_t outC = group == 1 ? m : x.shape[1];
        std::vector<int64_t> out = {x.shape[0], outC, (x.shape[2] + 2 * pad - k) / stride + 1,
                                    (x.shape[3] + 2 * pad - k) / stride + 1};
        auto *n = node("Conv", {x.name, constant({outC, x.shape[1] / group, k, k}), constant({outC})}, out);
        attrInts(n, "pads", {pad, pad, pad, pad});
        attrInts(n, "strides", {stride, stride});
        attrInt(n, "group", group);
        break;
      }
      case 12: {  // Pooling over a value viewed as NCHW.
        if (rank != 4 || x.shape[2] < 2 || x.shape[3] < 2) return;
        const bool max = coin(0.5);
        std::vector<int64_t> out = {x.shape[0], x.shape[1], x.shape[2] / 2, x.shape[3] / 2};
        auto *n = node(max ? "MaxPool" : "AveragePool", {x.name}, out);
        attrInts(n, "kernel_shape", {2, 2});
        attrInts(n, "strides", {2, 2});
        break;
      }
      case 13: {  // Clip to a range (the HardSwish/ReLU6 pieces exporters emit).
        auto *n = model_.mutable_graph()->add_node();
        n->set_op_type("Clip");
        n->set_name("Clip_" + std::to_string(counter_));
        n->add_input(x.name);
        n->add_input(scalar(0.0f));
        n->add_input(scalar(6.0f));
        Val out{fresh(), x.shape};
        n->add_output(out.name);
        values_.push_back(out);
        break;
      }
    }
  }

  std::string scalar(float v) {
    auto *t = model_.mutable_graph()->add_initializer();
    t->set_name(fresh());
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(v);
    return t->name();
  }

  std::mt19937 rng_;
  onnx::ModelProto model_;
  std::vector<Val> values_;
  int counter_ = 0;
};

/// max |got - want| over max(1, max |want|): a scale-aware distance for outputs near zero.
double relativeError(const Tensor &got, const Tensor &want) {
  double scale = 1, worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::abs(want.scalarAsDouble(i)));
  for (int64_t i = 0; i < want.numel(); ++i)
    worst = std::max(worst, std::abs(got.scalarAsDouble(i) - want.scalarAsDouble(i)));
  return worst / scale;
}

NamedValues randomFeeds(const Graph &graph, std::mt19937 &rng) {
  NamedValues feeds;
  std::uniform_real_distribution<float> u(-1, 1);
  for (const Value *in : graph.inputs()) {
    if (in->hasInitializer()) continue;
    std::vector<int64_t> sizes;
    for (const Dim &d : in->type().shape().dims()) sizes.push_back(d.size);
    Tensor t(DType::Float32, sizes);
    for (float &v : t.span<float>()) v = u(rng);
    feeds.emplace_back(in->name(), RuntimeValue(std::move(t)));
  }
  return feeds;
}

TEST(FuzzCompile, UnusualModelsCompileAndAgreeOnEveryTarget) {
  constexpr int kModels = 300;
  int ran = 0, onDevice = 0;
  for (int seed = 0; seed < kModels; ++seed) {
    RandomModel builder(static_cast<uint32_t>(20261201 + seed));
    const std::string bytes = builder.build(3 + seed % 6).SerializeAsString();
    const std::string path = "fuzz" + std::to_string(seed) + ".onnx";
    SCOPED_TRACE(path);
    // TESSEL_FUZZ_DUMP=DIR keeps every generated model, to rerun one with the CLI.
    if (const char *dump = std::getenv("TESSEL_FUZZ_DUMP")) testing::writeBytes(std::string(dump) + "/" + path, bytes);
    auto model = importOnnxBytes(bytes, path);
    ASSERT_TRUE(model.ok()) << model.diag().str();  // The generator's bug, not the compiler's.
    std::mt19937 rng(static_cast<uint32_t>(seed));
    const NamedValues feeds = randomFeeds(*model->graph, rng);
    auto want = ReferenceInterpreter(*model).run(feeds);
    ASSERT_TRUE(want.ok()) << want.diag().str();
    ++ran;

    auto cpuModel = importOnnxBytes(bytes, path);
    ASSERT_TRUE(cpuModel.ok());
    SessionOptions options;
    options.threads = 2;
    auto session = Session::create(std::move(*cpuModel), "cpu", options);
    if (!session.ok()) {
      ADD_FAILURE() << "cpu compile: " << session.diag().str();
      continue;
    }
    auto cpuOut = (*session)->run(feeds);
    if (!cpuOut.ok()) {
      ADD_FAILURE() << "cpu run: " << cpuOut.diag().str();
      continue;
    }
    for (size_t o = 0; o < want->size(); ++o)
      EXPECT_LE(relativeError((*cpuOut)[o].second.tensor(), (*want)[o].second.tensor()), 1e-4)
          << "cpu output " << (*want)[o].first;

    auto ncModel = importOnnxBytes(bytes, path);
    ASSERT_TRUE(ncModel.ok());
    nc::compiler::NcCompileOptions ncOptions;
    ncOptions.lowering.autoCast = nc::compiler::AutoCast::None;
    auto exe = nc::compiler::compileNc(std::move(*ncModel), ncOptions);
    if (!exe.ok()) {
      ADD_FAILURE() << "nc-v2 compile: " << exe.diag().str();
      continue;
    }
    auto ncOut = (*exe)->run(feeds);
    if (!ncOut.ok()) {
      ADD_FAILURE() << "nc-v2 run: " << ncOut.diag().str();
      continue;
    }
    for (size_t o = 0; o < want->size(); ++o)
      EXPECT_LE(relativeError(ncOut->outputs[o].second.tensor(), (*want)[o].second.tensor()), 1e-3)
          << "nc-v2 output " << (*want)[o].first;
    if (!(*exe)->programs().empty()) ++onDevice;
  }
  EXPECT_EQ(ran, kModels);
  // The generator must reach the device, or the accelerator half of the test checks nothing.
  EXPECT_GT(onDevice, kModels / 2);
  std::printf("fuzz: %d models on ref, cpu and nc-v2 (%d with device stages)\n", ran, onDevice);
}

// Damaged copies of real models (the bundled CNN, ONNX test models with convolutions, pooling and
// control flow): each one the importer accepts is compiled for cpu and nc-v2 and run, and must end
// in outputs or a clear diagnostic, never a crash or an internal error.
TEST(FuzzCompile, DamagedModelsCompileOrFailCleanly) {
  const std::string data = "/usr/share/libonnx-testdata/data/";
  const std::vector<std::string> seeds = {std::string(TESSEL_SOURCE_DIR) + "/examples/small_cnn.onnx",
                                          data + "pytorch-converted/test_ConvTranspose2d/model.onnx",
                                          data + "node/test_maxpool_2d_pads/model.onnx",
                                          data + "node/test_if/model.onnx",
                                          data + "node/test_gemm_all_attributes/model.onnx"};
  std::mt19937 rng(20261202);
  int compiled = 0, rejected = 0;
  for (const std::string &seed : seeds) {
    const std::string bytes = testing::readBytes(seed);
    ASSERT_FALSE(bytes.empty()) << "missing seed model " << seed;
    for (int i = 0; i < 48; ++i) {
      std::string damaged = bytes;
      std::uniform_int_distribution<size_t> position(0, bytes.size() - 1);
      for (int flips = 1 + static_cast<int>(rng() % 3); flips > 0; --flips)
        damaged[position(rng)] ^= static_cast<char>(1 << (rng() % 8));
      auto model = importOnnxBytes(damaged, seed);
      if (!model.ok()) continue;
      std::mt19937 feedRng(static_cast<uint32_t>(i));
      NamedValues feeds;
      bool feedable = true;
      for (const Value *in : model->graph->inputs()) {
        if (in->hasInitializer()) continue;
        std::optional<std::vector<int64_t>> sizes = in->type().shape().sizes();
        const bool small = sizes && std::all_of(sizes->begin(), sizes->end(), [](int64_t d) { return d >= 0 && d <= 64; });
        if (!small || in->type().dtype() != DType::Float32) {
          feedable = false;
          break;
        }
        Tensor t(DType::Float32, *sizes);
        for (float &v : t.span<float>()) v = std::uniform_real_distribution<float>(-1, 1)(feedRng);
        feeds.emplace_back(in->name(), RuntimeValue(std::move(t)));
      }
      if (!feedable) continue;
      auto expectClean = [&](const Diagnostic &d, const char *what) {
        ++rejected;
        EXPECT_NE(d.code, ErrorCode::Internal) << what << ": " << d.str();
        EXPECT_FALSE(d.message.empty()) << what;
      };
      auto cpuModel = importOnnxBytes(damaged, seed);
      auto session = Session::create(std::move(*cpuModel), "cpu");
      if (!session.ok()) {
        expectClean(session.diag(), "cpu compile");
      } else if (auto out = (*session)->run(feeds); !out.ok()) {
        expectClean(out.diag(), "cpu run");
      }
      auto ncModel = importOnnxBytes(damaged, seed);
      auto exe = nc::compiler::compileNc(std::move(*ncModel), {});
      if (!exe.ok()) {
        expectClean(exe.diag(), "nc-v2 compile");
        continue;
      }
      ++compiled;
      if (auto out = (*exe)->run(feeds); !out.ok()) expectClean(out.diag(), "nc-v2 run");
    }
  }
  // Some damage must leave a model that compiles, or the compilers were never reached.
  EXPECT_GT(compiled, 0);
  std::printf("fuzz: %d damaged models compiled for nc-v2, %d clean rejections\n", compiled, rejected);
}

}  // namespace
}  // namespace tessel
