// The text IR: the printer's format on a small model, print -> parse -> print identity on graphs
// that use every attribute kind, subgraphs, omitted inputs and outputs, symbolic dims and every
// dtype, exact float round trips, and parser errors that point at line:col.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <limits>
#include <random>

#include "ir/builder.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace tessel {
namespace {

Type f32(std::vector<int64_t> sizes) { return Type::tensor(DType::Float32, Shape::fromSizes(sizes)); }

PrintOptions fullTensors() {
  PrintOptions options;
  options.elideLargeTensors = false;
  return options;
}

/// Prints `model` in full, parses it back and expects the same text; returns the parsed model.
Model expectRoundTrip(const Model &model) {
  EXPECT_TRUE(verifyModel(model).ok()) << verifyModel(model).str();
  std::string first = printModel(model, fullTensors());
  auto parsed = parseModel(first, "roundtrip.tsl.txt");
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.diag().str()) << "\n" << first;
  if (!parsed.ok()) return Model();
  EXPECT_TRUE(verifyModel(*parsed).ok()) << verifyModel(*parsed).str();
  EXPECT_EQ(printModel(*parsed, fullTensors()), first);
  return std::move(parsed).value();
}

Model modelWithOpset(int64_t version) {
  Model model;
  model.opsetImports[""] = version;
  return model;
}

TEST(Printer, WritesTheDocumentedFormat) {
  Model model = modelWithOpset(13);
  model.producerName = "pytorch";
  Graph &g = *model.graph;
  Value *x = g.addInput("x", Type::tensor(DType::Float32, Shape({Dim::symbolic("batch"), Dim(3)})));
  Value *w = g.addInput("onnx::Gemm_1", f32({4, 3}));
  g.addInitializer("onnx::Gemm_1", Tensor::fromVector<float>({4, 3}, std::vector<float>(12, 0.5f)));
  Value *b = g.addInitializer("b", Tensor::fromVector<float>({4}, {0.1f, -1, 0, 2.5e-8f}));
  Node *gemm = g.addNode("Gemm", {x, w, b}, {"y"}, "fc");
  gemm->setAttr("alpha", 1.0f);
  gemm->setAttr("transB", int64_t{1});
  gemm->output(0)->setType(Type::tensor(DType::Float32, Shape({Dim::symbolic("batch"), Dim(4)})));
  g.addOutput(gemm->output(0));
  EXPECT_EQ(printModel(model),
            "model opset(ai.onnx=13) ir_version=8 producer=\"pytorch\" {\n"
            "func @main(%x: f32[batch,3], %\"onnx::Gemm_1\": f32[4,3] = dense<f32[4,3]: 0.5, 0.5, 0.5, 0.5, 0.5, "
            "0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5>) -> (%y: f32[batch,4]) {\n"
            "  const %b = dense<f32[4]: 0.1, -1, 0, 2.5e-08>\n"
            "  %y = Gemm(%x, %\"onnx::Gemm_1\", %b) {alpha = 1.0, transB = 1} name=\"fc\" : f32[batch,4]\n"
            "  return %y\n"
            "}\n"
            "}\n");
  expectRoundTrip(model);
}

/// A node holding one attribute of every kind, including empty lists and nested subgraphs that
/// read values of the enclosing graphs.
TEST(PrinterParser, RoundTripsEveryAttributeKind) {
  Model model = modelWithOpset(17);
  Graph &g = *model.graph;
  GraphBuilder b(g);
  Value *x = b.input("x", f32({2}));
  Node *node = g.addNode("If", {x}, {"out"}, "if");

  auto branch = std::make_shared<Graph>("then branch");
  branch->setParentNode(node);
  Node *inner = branch->addNode("Add", {x, x}, {"t"});
  auto nested = std::make_shared<Graph>("nested");
  nested->setParentNode(inner);
  Node *deep = nested->addNode("Neg", {x}, {"n"});  // Reads the top-level %x two levels up.
  nested->addOutput(deep->output(0));
  inner->setAttr("body", nested);
  branch->addOutput(inner->output(0));
  auto other = std::make_shared<Graph>("else");
  other->setParentNode(node);
  other->addOutput(x);  // A subgraph may return an outer value directly.

  node->setAttr("f", 0.1f);
  node->setAttr("i", int64_t{-7});
  node->setAttr("s", std::string("a \"quoted\"\nline\\"));
  node->setAttr("t", Tensor::fromVector<int64_t>({2}, {1, -2}));
  node->setAttr("g", branch);
  node->setAttr("ty", Type::sequence(Type::optional(f32({2}))));
  node->setAttr("fs", std::vector<float>{1.0f, -0.0f, 3.5f});
  node->setAttr("is", std::vector<int64_t>{1, 2, 3});
  node->setAttr("ss", std::vector<std::string>{"a", ""});
  node->setAttr("ts", std::vector<Tensor>{Tensor::scalar<float>(2.0f), Tensor::fromVector<bool>({2}, {true, false})});
  node->setAttr("gs", std::vector<Attribute::GraphPtr>{other});
  node->setAttr("tys", std::vector<Type>{Type(), f32({})});
  node->setAttr("empty_fs", std::vector<float>{});
  node->setAttr("empty_is", std::vector<int64_t>{});
  node->setAttr("empty_ss", std::vector<std::string>{});
  node->setAttr("empty_ts", std::vector<Tensor>{});
  node->setAttr("empty_gs", std::vector<Attribute::GraphPtr>{});
  node->setAttr("empty_tys", std::vector<Type>{});
  node->setAttr("weird name", int64_t{0});
  b.output(node->output(0));

  Model parsed = expectRoundTrip(model);
  const Node &p = *parsed.graph->nodes().front();
  ASSERT_EQ(p.attributes().size(), node->attributes().size());
  for (size_t i = 0; i < p.attributes().size(); ++i) {
    EXPECT_EQ(p.attributes()[i].first, node->attributes()[i].first);
    EXPECT_EQ(p.attributes()[i].second.kind(), node->attributes()[i].second.kind()) << p.attributes()[i].first;
  }
  EXPECT_EQ(p.attrFloat("f", 0), 0.1f);
  EXPECT_EQ(p.attrString("s", ""), "a \"quoted\"\nline\\");
  EXPECT_TRUE(std::signbit(p.attrFloats("fs")[1]));
  const Graph *pb = p.attrGraph("g");
  ASSERT_NE(pb, nullptr);
  EXPECT_EQ(pb->name(), "then branch");
  EXPECT_EQ(pb->parentNode(), &p);
  const Node &pinner = *pb->nodes().front();
  const Graph *pnested = pinner.attrGraph("body");
  ASSERT_NE(pnested, nullptr);
  EXPECT_EQ(pnested->nodes().front()->input(0), parsed.graph->inputs()[0]);
  EXPECT_EQ(parsed.graph->inputs()[0]->uses().size(), 4u);  // If, Add twice, Neg.
}

TEST(PrinterParser, RoundTripsOmittedInputsAndOutputs) {
  Model model = modelWithOpset(13);
  Graph &g = *model.graph;
  Value *x = g.addInput("x", f32({1, 4, 8}));
  Value *w = g.addInput("w", f32({1, 12, 4}));
  Node *lstm = g.addNode("LSTM", {x, w, nullptr, nullptr, nullptr, nullptr}, {"", "h", ""});
  lstm->setAttr("hidden_size", int64_t{3});
  Node *zeroOutputs = g.addNode("Sink", {lstm->output(1), nullptr}, {}, "", "com.example");
  (void)zeroOutputs;
  g.addOutput(lstm->output(1));
  std::string text = printModel(model);
  EXPECT_NE(text.find("  _, %h, _ = LSTM(%x, %w, _, _, _, _) {hidden_size = 3}\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  com.example.Sink(%h, _)\n"), std::string::npos) << text;
  Model parsed = expectRoundTrip(model);
  const Node &p = *parsed.graph->nodes().front();
  EXPECT_EQ(p.inputs().size(), 6u);
  EXPECT_EQ(p.input(2), nullptr);
  EXPECT_EQ(p.outputs().size(), 3u);
  EXPECT_EQ(p.output(0), nullptr);
  EXPECT_EQ(parsed.graph->nodes().back()->domain(), "com.example");
}

TEST(PrinterParser, RoundTripsTypesAndSymbolicDims) {
  Model model = modelWithOpset(15);
  Graph &g = *model.graph;
  Value *a = g.addInput("a", Type::tensor(DType::Float32, Shape({Dim::symbolic("batch"), Dim(), Dim(3)})));
  Value *b = g.addInput("b", Type::tensor(DType::Int64, Shape()));
  Value *c = g.addInput("c", Type::sequence(Type::tensor(DType::BFloat16, Shape::scalar())));
  Value *d = g.addInput("d", Type::optional(Type::sequence(Type())));
  Value *e = g.addInput("e", Type::tensor(DType::String, Shape({Dim::symbolic("2*seq len"), Dim(0)})));
  Node *n = g.addNode("com.x.Multi", {a, b, c, d, e}, {"o1", "o2"});
  n->output(0)->setType(Type::tensor(DType::Float32, Shape({Dim::symbolic("batch")})));
  g.addOutput(n->output(0));
  g.addOutput(n->output(1));
  EXPECT_EQ(printType(e->type()), "string[\"2*seq len\",0]");
  EXPECT_EQ(printType(d->type()), "opt<seq<?>>");
  std::string text = printModel(model);
  EXPECT_NE(text.find("  %o1, %o2 = \"com.x.Multi\"(%a, %b, %c, %d, %e) : f32[batch], ?\n"), std::string::npos) << text;
  Model parsed = expectRoundTrip(model);
  EXPECT_EQ(parsed.graph->inputs()[0]->type(), a->type());
  EXPECT_EQ(parsed.graph->inputs()[4]->type(), e->type());
  EXPECT_EQ(parsed.graph->nodes().front()->output(1)->type().kind(), Type::Kind::Unknown);
  for (const char *text : {"f32[1,?,batch]", "i64[*]", "seq<opt<bf16[]>>", "?", "f8e4m3fn[2,\"a b\"]"}) {
    auto type = parseType(text);
    ASSERT_TRUE(type.ok()) << text << ": " << type.diag().str();
    EXPECT_EQ(printType(*type), text);
  }
}

/// Tensors of every dtype, with the float edge cases that naive printing loses.
TEST(PrinterParser, RoundTripsTensorsOfEveryDtypeBitExactly) {
  Model model = modelWithOpset(17);
  Graph &g = *model.graph;
  std::vector<Tensor> tensors;
  float payloadNan = std::bit_cast<float>(0x7fc00001u);
  tensors.push_back(Tensor::fromVector<float>(
      {9}, {0.1f, -0.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
            std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(), payloadNan,
            std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max()}));
  tensors.push_back(Tensor::fromVector<double>({3}, {0.1, std::numeric_limits<double>::denorm_min(), 1e300}));
  tensors.push_back(Tensor::fromVector<Float16>({3}, {Float16(0.1f), Float16(65504.0f), Float16::fromBits(0x7e01)}));
  tensors.push_back(
      Tensor::fromVector<BFloat16>({3}, {BFloat16(0.1f), BFloat16(-3.0e38f), BFloat16::fromBits(0x0001)}));
  tensors.push_back(Tensor::fromVector<Float8E4M3FN>(
      {3}, {Float8E4M3FN(448.0f), Float8E4M3FN::fromBits(0x7f), Float8E4M3FN::fromBits(0x80)}));
  tensors.push_back(
      Tensor::fromVector<Float8E5M2>({3}, {Float8E5M2(0.5f), Float8E5M2::fromBits(0x7c), Float8E5M2::fromBits(0x7d)}));
  tensors.push_back(Tensor::fromVector<int8_t>({2}, {-128, 127}));
  tensors.push_back(Tensor::fromVector<int16_t>({2}, {-32768, 32767}));
  tensors.push_back(Tensor::fromVector<int32_t>({2}, {std::numeric_limits<int32_t>::min(), 7}));
  tensors.push_back(
      Tensor::fromVector<int64_t>({2}, {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}));
  tensors.push_back(Tensor::fromVector<uint8_t>({2}, {0, 255}));
  tensors.push_back(Tensor::fromVector<uint16_t>({1}, {65535}));
  tensors.push_back(Tensor::fromVector<uint32_t>({1}, {4294967295u}));
  tensors.push_back(Tensor::fromVector<uint64_t>({1}, {std::numeric_limits<uint64_t>::max()}));
  tensors.push_back(Tensor::fromVector<bool>({2, 1}, {true, false}));
  tensors.push_back(Tensor::fromVector<std::string>({3}, {"plain", "esc\"\\\t\x01\x7f", std::string("nul\0byte", 8)}));
  tensors.push_back(Tensor::fromVector<std::complex<float>>({1}, {{1.5f, -0.1f}}));
  tensors.push_back(Tensor::fromVector<std::complex<double>>({1}, {{0.1, 1e-300}}));
  Tensor fnuz(DType::Float8E4M3FNUZ, {2});
  static_cast<uint8_t *>(fnuz.rawData())[0] = 0x80;
  static_cast<uint8_t *>(fnuz.rawData())[1] = 0x3f;
  tensors.push_back(fnuz);
  tensors.push_back(Tensor(DType::Float32, {0, 3}));
  tensors.push_back(Tensor::scalar<int64_t>(42));
  tensors.push_back(Tensor::fromVector<float>({20}, std::vector<float>(20, 1.25f)));  // Above the elision limit.
  for (size_t i = 0; i < tensors.size(); ++i) g.addInitializer("t" + std::to_string(i), tensors[i]);
  Node *n = g.addNode("Constant", {}, {"c"});
  n->setAttr("value", tensors[2]);
  g.addOutput(n->output(0));

  Model parsed = expectRoundTrip(model);
  ASSERT_EQ(parsed.graph->initializers().size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor &got = parsed.graph->initializers()[i]->initializer();
    const Tensor &want = tensors[i];
    ASSERT_EQ(got.dtype(), want.dtype()) << i;
    ASSERT_EQ(got.sizes(), want.sizes()) << i;
    if (want.dtype() == DType::String) {
      for (int64_t k = 0; k < want.numel(); ++k) EXPECT_EQ(got.data<std::string>()[k], want.data<std::string>()[k]);
    } else {
      EXPECT_EQ(std::memcmp(got.rawData(), want.rawData(), want.numBytes()), 0)
          << "tensor " << i << " of " << dtypeName(want.dtype());
    }
  }
  std::string text = printModel(model);
  EXPECT_NE(text.find("nan(0x7fc00001)"), std::string::npos);
  EXPECT_NE(text.find("-nan"), std::string::npos);
  EXPECT_NE(text.find("dense<f8e4m3fnuz[2]: 0x80, 0x3f>"), std::string::npos) << text;
  EXPECT_NE(text.find("dense<f32[0,3]>"), std::string::npos);
  EXPECT_NE(text.find("dense<f32[20] ... hash=0x"), std::string::npos);
}

TEST(PrinterParser, ElidedTensorsHashContentsAndDoNotParse) {
  PrintOptions options;
  options.maxInlineElements = 4;
  Tensor a = Tensor::fromVector<float>({5}, {1, 2, 3, 4, 5});
  Tensor b = Tensor::fromVector<float>({5}, {1, 2, 3, 4, 6});
  EXPECT_EQ(printTensor(a, options), printTensor(a.clone(), options));
  EXPECT_NE(printTensor(a, options), printTensor(b, options));
  EXPECT_EQ(printTensor(a, fullTensors()), "dense<f32[5]: 1, 2, 3, 4, 5>");

  Model model = modelWithOpset(13);
  model.graph->addInitializer("w", a);
  std::string text = printModel(model, options);
  auto parsed = parseModel(text, "elided.tsl.txt");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.diag().str().find("elided.tsl.txt:3:27: this tensor was printed elided"), std::string::npos)
      << parsed.diag().str() << "\n"
      << text;
}

TEST(PrinterParser, RoundTripsNamesThatNeedQuotesAndModelMetadata) {
  Model model = modelWithOpset(12);
  model.opsetImports["ai.onnx.ml"] = 3;
  model.opsetImports["my domain"] = 1;
  model.irVersion = 7;
  model.producerName = "tf2onnx";
  model.producerVersion = "1.9.3";
  model.domain = "org.example";
  model.modelVersion = 5;
  model.docString = "line one\nline \"two\"";
  model.metadata = {{"author", "me"}, {"k=v", "{}"}};
  Graph &g = *model.graph;
  g.setName("main graph");
  Value *x = g.addInput("input.1", f32({2}));
  Node *a = g.addNode("Relu", {x}, {"onnx::Relu_0"}, "node \"a\"");
  Node *b = g.addNode("return", {a->output(0)}, {"0"});
  Node *c = g.addNode("LabelEncoder", {b->output(0)}, {"1"}, "", "ai.onnx.ml");
  Node *d = g.addNode("Op With Space", {c->output(0)}, {"2"}, "", "my domain");
  Node *e = g.addNode("name", {d->output(0)}, {"3"});
  g.addOutput(e->output(0));
  std::string text = printModel(model);
  EXPECT_NE(text.find("%\"onnx::Relu_0\" = Relu(%input.1) name=\"node \\\"a\\\"\""), std::string::npos) << text;
  EXPECT_NE(text.find("%0 = \"return\"(%\"onnx::Relu_0\")"), std::string::npos) << text;
  EXPECT_NE(text.find("%1 = ai.onnx.ml.LabelEncoder(%0)"), std::string::npos) << text;
  EXPECT_NE(text.find("%2 = \"my domain\":\"Op With Space\"(%1)"), std::string::npos) << text;
  EXPECT_NE(text.find("func @\"main graph\"("), std::string::npos) << text;
  Model parsed = expectRoundTrip(model);
  EXPECT_EQ(parsed.docString, model.docString);
  EXPECT_EQ(parsed.metadata, model.metadata);
  EXPECT_EQ(parsed.opsetImports, model.opsetImports);
  EXPECT_EQ(parsed.modelVersion, 5);
  EXPECT_EQ(parsed.graph->nodes().back()->opType(), "name");
  EXPECT_EQ(parsed.graph->findValue("onnx::Relu_0")->producer()->name(), "node \"a\"");
}

TEST(PrinterParser, KeepsInitializerInputsAndConstTypes) {
  Model model = modelWithOpset(13);
  Graph &g = *model.graph;
  Value *w = g.addInput("w", Type::tensor(DType::Float32, Shape({Dim::symbolic("n")})));
  g.addInitializer("w", Tensor::fromVector<float>({2}, {1, 2}));
  w->setType(Type::tensor(DType::Float32, Shape({Dim::symbolic("n")})));  // Declared type kept over the default's.
  Value *k = g.addInitializer("k", Tensor::scalar<int64_t>(3));
  k->setType(Type::tensor(DType::Int64, Shape()));
  Node *n = g.addNode("Add", {w, k}, {"y"});
  g.addOutput(n->output(0));
  std::string text = printModel(model);
  EXPECT_NE(text.find("%w: f32[n] = dense<f32[2]: 1, 2>"), std::string::npos) << text;
  EXPECT_NE(text.find("const %k = dense<i64[]: 3> : i64[*]"), std::string::npos) << text;
  Model parsed = expectRoundTrip(model);
  EXPECT_TRUE(parsed.graph->inputs()[0]->hasInitializer());
  EXPECT_EQ(parsed.graph->initializers().size(), 2u);
}

TEST(PrinterParser, ValueTypesCanBeLeftOut) {
  Model model = modelWithOpset(13);
  Graph &g = *model.graph;
  Value *x = g.addInput("x", f32({2}));
  Node *n = g.addNode("Relu", {x}, {"y"});
  n->output(0)->setType(f32({2}));
  Node *m = g.addNode("Neg", {n->output(0)}, {"z"});
  m->output(0)->setType(f32({2}));
  g.addOutput(m->output(0));
  PrintOptions options;
  options.printValueTypes = false;
  std::string text = printModel(model, options);
  EXPECT_NE(text.find("  %y = Relu(%x)\n"), std::string::npos) << text;
  auto parsed = parseModel(text, "untyped.tsl.txt");
  ASSERT_TRUE(parsed.ok()) << parsed.diag().str();
  EXPECT_EQ(printModel(*parsed, options), text);
  EXPECT_EQ(parsed->graph->findValue("y")->type().kind(), Type::Kind::Unknown);
  EXPECT_EQ(parsed->graph->findValue("z")->type(), f32({2}));  // Graph outputs keep their declared type.
}

/// Each malformed input yields one ParseError naming file:line:col and what was expected.
TEST(Parser, ReportsErrorsWithLineAndColumn) {
  const std::string header = "model opset(ai.onnx=13) ir_version=8 {\n";
  struct Case {
    std::string body;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"func @main(%x: f32[2]) -> (%y: f32[2]) {\n  %y = Relu(%x\n  return %y\n}\n}\n",
       "bad.tsl.txt:4:3: expected ',' between the inputs of node Relu, got 'return'"},
      {"func @main(%x: f32[2]) -> (%y: f32[2]) {\n  %y = Relu(%q)\n  return %y\n}\n}\n",
       "bad.tsl.txt:3:13: use of undefined value '%q'"},
      {"func @main(%x: f32[2]) -> (%x: f32[2]) {\n  %x = Relu(%x)\n  return %x\n}\n}\n",
       "bad.tsl.txt:3:3: value '%x' is defined twice in graph '@main'"},
      {"func @main(%x: f99[2]) -> () {\n  return\n}\n}\n", "bad.tsl.txt:2:16: unknown element type 'f99'"},
      {"func @main() -> () {\n  const %c = dense<u8[2]: 1, 300>\n  return\n}\n}\n",
       "bad.tsl.txt:3:30: 300 is out of range for u8"},
      {"func @main() -> () {\n  const %c = dense<f32[3]: 1, 2>\n  return\n}\n}\n",
       "bad.tsl.txt:3:32: tensor f32[3] has 3 elements; got 2 before '>'"},
      {"func @main(%x: f32[2]) -> (%y: f32[2]) {\n  %y = Relu(%x) name=\"oops\n  return %y\n}\n}\n",
       "bad.tsl.txt:3:22: unterminated string"},
      {"func @main(%x: f32[2]) -> (%y: f32[2]) {\n  %z = Relu(%x)\n  return %z\n}\n}\n",
       "bad.tsl.txt:4:10: 'return' lists '%z' where the signature of '@main' declares '%y'"},
      {"func @main(%x: f32[2]) -> (%y: f32[2]) {\n  %y = Relu(%x) {axes = []}\n  return %y\n}\n}\n",
       "bad.tsl.txt:3:25: an empty list needs its kind, e.g. 'ints[]' or 'floats[]'"},
      {"func @main(%x: f32[2]) -> (%y: f32[2]) {\n  %y = Relu(%x) {a = [1, \"s\"]}\n  return %y\n}\n}\n",
       "bad.tsl.txt:3:26: list element is a string but the list holds ints"},
      {"func @main(%x: f32[2]) -> (%y: f32[2]) {\n  %y = Relu(%x) $\n  return %y\n}\n}\n",
       "bad.tsl.txt:3:17: unexpected character '$'"},
      {"func @main(%x: f32[2]) -> (%y: f32[2]) {\n  %t = Neg(%y)\n  %y = Relu(%x)\n  return %y\n}\n}\n",
       "bad.tsl.txt:3:12: use of undefined value '%y'"},
      {"func @main() -> () {\n  return\n}\n}\ntrailing\n",
       "bad.tsl.txt:6:1: expected end of file after the model, got 'trailing'"},
      {"func @main() -> () {\n  return\n", "bad.tsl.txt:4:1: expected '}' to close graph '@main', got end of file"},
  };
  for (const Case &c : cases) {
    auto parsed = parseModel(header + c.body, "bad.tsl.txt");
    ASSERT_FALSE(parsed.ok()) << c.body;
    EXPECT_EQ(parsed.diag().code, ErrorCode::ParseError);
    EXPECT_EQ(parsed.diag().str(), c.expected) << c.body;
  }
  auto noHeader = parseModel("func @main() -> () { return }", "x.tsl.txt");
  ASSERT_FALSE(noHeader.ok());
  EXPECT_EQ(noHeader.diag().str(), "x.tsl.txt:1:1: expected 'model' at the start of the file, got 'func'");
}

TEST(Parser, AcceptsCommentsAndFreeLayout) {
  const char *text = R"(# RUN: tessel opt %s
model opset(ai.onnx=13) ir_version=8 {  # header
func @main(%x: f32[2]) -> (%y: f32[2]) {
  %y = Relu(
    %x)   # spread over lines
  return %y
}
}
)";
  auto parsed = parseModel(text, "c.tsl.txt");
  ASSERT_TRUE(parsed.ok()) << parsed.diag().str();
  EXPECT_EQ(parsed->graph->numNodes(), 1u);
  EXPECT_EQ(parsed->sourcePath, "c.tsl.txt");
  EXPECT_EQ(parsed->graph->nodes().front()->sourceIndex(), 0);
}

/// Nothing a user feeds in may crash: truncated and mutated text parses or fails with a diagnostic.
TEST(Parser, SurvivesMutatedInput) {
  Model model = modelWithOpset(13);
  Graph &g = *model.graph;
  Value *x = g.addInput("x", Type::tensor(DType::Float32, Shape({Dim::symbolic("n"), Dim(2)})));
  Value *k = g.addInitializer("k", Tensor::fromVector<int64_t>({2}, {1, -1}));
  Node *n = g.addNode("If", {x, k, nullptr}, {"y", ""}, "n");
  auto branch = std::make_shared<Graph>("b");
  branch->setParentNode(n);
  branch->addOutput(branch->addNode("Neg", {x}, {"t"})->output(0));
  n->setAttr("g", branch);
  n->setAttr("f", std::vector<float>{0.5f, -1e-3f});
  n->setAttr("s", std::string("s"));
  n->setAttr("t", Tensor::fromVector<Float16>({1}, {Float16(1.0f)}));
  g.addOutput(n->output(0));
  const std::string text = printModel(model, fullTensors());
  const std::string alphabet = "%@\"()[]{}<>,:=?*-_.#x0129aenf\n ";
  std::mt19937 rng(1234);
  int parsedOk = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string mutated = text;
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !mutated.empty(); ++e) {
      size_t at = rng() % mutated.size();
      switch (rng() % 4) {
        case 0: mutated.erase(at, 1 + rng() % 4); break;
        case 1: mutated.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
        case 2: mutated[at] = alphabet[rng() % alphabet.size()]; break;
        default: mutated.resize(at); break;
      }
    }
    auto parsed = parseModel(mutated, "fuzz.tsl.txt");
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.diag().str().rfind("fuzz.tsl.txt:", 0), 0u) << parsed.diag().str();
      continue;
    }
    ++parsedOk;
    // Whatever parses is well formed: names resolved in scope means the verifier agrees.
    Status verified = verifyModel(*parsed);
    EXPECT_TRUE(verified.ok()) << verified.str() << "\n" << mutated;
    (void)printModel(*parsed);
  }
  EXPECT_GT(parsedOk, 0);
}

}  // namespace
}  // namespace tessel
