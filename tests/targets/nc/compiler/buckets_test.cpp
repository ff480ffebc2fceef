// One accelerator artifact for every sequence length: a masked self-attention block with a symbolic
// sequence dim compiled at three buckets. Every length from 1 to the largest bucket runs padded to
// the smallest bucket that holds it and matches the reference run on the unpadded feeds; the
// buckets share their weights (one copy in HBM, one in the artifact); feeds that do not fit fail
// clearly; the artifact round-trips.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <set>

#include <fmt/format.h>

#include "ir/clone.h"
#include "ir/parser.h"
#include "ir/specialize.h"
#include "targets/nc/compiler/target.h"
#include "targets/nc/compiler/buckets.h"
#include "targets/nc/compiler/nc_model_check.h"
#include "targets/ref/cast_check.h"
#include "targets/ref/interpreter.h"

namespace tessel::nc::compiler {
namespace {

constexpr int64_t kWidth = 128;

// Attention over the valid positions only (mask 1, padding 0, as BERT's attention_mask), a residual,
// and a masked sum over the sequence: an output without the sequence dim that padding must not move.
std::string maskedAttentionModel() {
  return fmt::format(R"(model opset(ai.onnx=17) ir_version=8 {{
func @main(%x: f32[1,S,{0}], %mask: f32[1,S]) -> (%y: f32[1,S,{0}], %pooled: f32[1,{0}]) {{
  const %wq = {1}
  const %wk = {2}
  const %wv = {3}
  const %scale = dense<f32[]: 0.088>
  const %one = dense<f32[]: 1.0>
  const %neg = dense<f32[]: -1000000000.0>
  const %axis1 = dense<i64[1]: 1>
  const %axis2 = dense<i64[1]: 2>
  %q = MatMul(%x, %wq)
  %k = MatMul(%x, %wk)
  %v = MatMul(%x, %wv)
  %kt = Transpose(%k) {{perm = [0, 2, 1]}}
  %s = MatMul(%q, %kt)
  %ss = Mul(%s, %scale)
  %inv = Sub(%one, %mask)
  %bias = Mul(%inv, %neg)
  %bias3 = Unsqueeze(%bias, %axis1)
  %masked = Add(%ss, %bias3)
  %p = Softmax(%masked) {{axis = -1}}
  %a = MatMul(%p, %v)
  %y = Add(%a, %x)
  %m3 = Unsqueeze(%mask, %axis2)
  %ym = Mul(%y, %m3)
  %pooled = ReduceSum(%ym, %axis1) {{keepdims = 0}}
  return %y, %pooled
}}
}})",
                     kWidth, denseText({kWidth, kWidth}, 1, 0.1f), denseText({kWidth, kWidth}, 2, 0.1f),
                     denseText({kWidth, kWidth}, 3, 0.1f));
}

Model parsed() {
  auto model = parseModel(maskedAttentionModel(), "buckets_test.tsl.txt");
  EXPECT_TRUE(model.ok()) << model.diag().str();
  return std::move(*model);
}

NamedValues feedsOfLength(int64_t length, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Tensor x(tessel::DType::Float32, {1, length, kWidth});
  for (float &v : x.span<float>()) v = uniform(rng);
  Tensor mask(tessel::DType::Float32, {1, length});
  for (float &v : mask.span<float>()) v = 1.0f;
  return {{"x", RuntimeValue(std::move(x))}, {"mask", RuntimeValue(std::move(mask))}};
}

TargetOptions bucketOptions(const std::string &spec) {
  TargetOptions options;
  options.autoCast = "none";  // f32 on the device: the check against the reference is tight.
  auto buckets = parseBuckets(spec);
  EXPECT_TRUE(buckets.ok()) << buckets.diag().str();
  options.buckets.push_back(*buckets);
  return options;
}

std::unique_ptr<CompiledModel> compileBuckets(const std::string &spec) {
  auto target = makeTarget("nc-v2");
  EXPECT_TRUE(target.ok());
  auto compiled = (*target)->compile(parsed(), bucketOptions(spec));
  EXPECT_TRUE(compiled.ok()) << compiled.diag().str();
  return compiled.ok() ? std::move(*compiled) : nullptr;
}

TEST(Buckets, ParsesListsAndPowersOfTwo) {
  auto list = parseBuckets("S=512,128,256,128");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->dim, "S");
  EXPECT_EQ(list->sizes, (std::vector<int64_t>{128, 256, 512}));
  auto automatic = parseBuckets("S=auto:100..1000");
  ASSERT_TRUE(automatic.ok());
  EXPECT_EQ(automatic->sizes, (std::vector<int64_t>{128, 256, 512, 1000}));
  for (const char *bad : {"S", "=128", "S=", "S=0,16", "S=16,x", "S=auto:64..32", "S=auto:16"})
    EXPECT_FALSE(parseBuckets(bad).ok()) << bad;
}

TEST(Buckets, EveryLengthMatchesTheUnpaddedReference) {
  auto compiled = compileBuckets("S=16,32,64");
  ASSERT_TRUE(compiled);
  for (int64_t length = 1; length <= 64; ++length) {
    const NamedValues feeds = feedsOfLength(length, static_cast<uint32_t>(length));
    auto got = compiled->run(feeds);
    ASSERT_TRUE(got.ok()) << "length " << length << ": " << got.diag().str();
    auto want = ReferenceInterpreter(parsed()).run(feeds);
    ASSERT_TRUE(want.ok()) << want.diag().str();
    ASSERT_EQ(got->size(), 2u);
    for (size_t o = 0; o < got->size(); ++o) {
      const Tensor &g = (*got)[o].second.tensor(), &w = (*want)[o].second.tensor();
      ASSERT_EQ(g.sizes(), w.sizes()) << "length " << length << " output " << (*got)[o].first;
      const ref::OutputError error = ref::compareOutput(g, w, {1e-4, 1e-3});
      EXPECT_LE(error.ratio, 1.0) << "length " << length << " output " << (*got)[o].first << ": max abs error "
                                  << error.maxAbs;
    }
    const RunFigures figures = compiled->lastRun();
    const int64_t bucket = length <= 16 ? 16 : length <= 32 ? 32 : 64;
    EXPECT_EQ(figures.bucket, fmt::format("S={}", bucket)) << "length " << length;
    EXPECT_NEAR(figures.paddingWaste, 1.0 - static_cast<double>(length) / static_cast<double>(bucket), 1e-9);
    EXPECT_GT(figures.deviceUs, 0.0);
  }
}

TEST(Buckets, TheCheckAgainstTheReferenceCoversThePadding) {
  auto compiled = compileBuckets("S=16,32");
  ASSERT_TRUE(compiled);
  const NamedValues feeds = feedsOfLength(20, 7);
  auto outputs = compiled->run(feeds);
  ASSERT_TRUE(outputs.ok()) << outputs.diag().str();
  auto check = compiled->checkOutputs(feeds, *outputs);
  ASSERT_TRUE(check.ok()) << check.diag().str();
  EXPECT_TRUE(check->passed) << check->text;
  EXPECT_NE(check->text.find("bucket S=32"), std::string::npos) << check->text;
  EXPECT_NE(check->text.find("sliced back"), std::string::npos) << check->text;
  // Without the mask the padding reaches the real positions, and the check says so.
  NamedValues unmasked = feeds;
  Tensor zeros(tessel::DType::Float32, {1, 20});
  unmasked[1].second = RuntimeValue(std::move(zeros));
  auto wrong = compiled->run(unmasked);
  ASSERT_TRUE(wrong.ok()) << wrong.diag().str();
  auto failing = compiled->checkOutputs(unmasked, *wrong);
  ASSERT_TRUE(failing.ok()) << failing.diag().str();
  EXPECT_FALSE(failing->passed) << failing->text;
}

TEST(Buckets, ShareOneCopyOfTheWeights) {
  NcCompileOptions options;
  options.lowering.autoCast = AutoCast::Matmul;
  auto set = BucketSet::compile(parsed(), options, {*parseBuckets("S=16,32,64")});
  ASSERT_TRUE(set.ok()) << set.diag().str();
  const BucketHbm hbm = (*set)->hbm();
  // The three weight matrices in bf16, each stored once.
  EXPECT_GE(hbm.sharedConstantBytes, 3u * kWidth * kWidth * 2);
  EXPECT_EQ(hbm.ownConstantBytes, 0u);
  EXPECT_NE((*set)->report().find("HBM for all buckets"), std::string::npos);

  // The artifact stores them once too: two more buckets cost less than one copy of the f32 weights.
  const auto dir = std::filesystem::temp_directory_path() / "tessel_buckets_test";
  std::filesystem::create_directories(dir);
  const std::string bucketed = (dir / "bucketed.tsl").string(), single = (dir / "single.tsl").string();
  ASSERT_TRUE((*set)->save(bucketed).ok());
  auto one = BucketSet::compile(parsed(), options, {*parseBuckets("S=64")});
  ASSERT_TRUE(one.ok()) << one.diag().str();
  ASSERT_TRUE((*one)->save(single).ok());
  const auto weights = static_cast<std::uintmax_t>(3 * kWidth * kWidth * 4);
  EXPECT_LT(std::filesystem::file_size(bucketed), std::filesystem::file_size(single) + weights);
}

// A target compiling one shape at a time (a decoder's prefill, then its decode) shares the encoded
// weight blocks through its constant cache, which holds no bytes of its own.
TEST(Buckets, ShapesCompiledOneAtATimeShareTheWeightBytes) {
  ConstantCache cache;
  NcCompileOptions options;
  options.lowering.constantCache = &cache;
  const Model model = parsed();
  auto compileAt = [&](int64_t length) {
    Model copy = cloneModel(model);  // Shares the weights' storage, as a session's compiles do.
    EXPECT_TRUE(specializeInputs(copy, {{"x", {1, length, kWidth}}, {"mask", {1, length}}}, 0).ok());
    auto exe = compileNc(std::move(copy), options);
    EXPECT_TRUE(exe.ok()) << exe.diag().str();
    return std::move(*exe);
  };
  auto weightBlocks = [](const NcExecutable &exe) {
    std::set<const std::vector<uint8_t> *> blocks;
    for (const DeviceProgram &program : exe.programs())
      for (const auto &[offset, bytes] : program.constantImage)
        if (bytes->size() >= kWidth * kWidth * 2) blocks.insert(bytes.get());
    return blocks;
  };
  auto shorter = compileAt(16), longer = compileAt(64);
  const auto blocks = weightBlocks(*shorter);
  EXPECT_GE(blocks.size(), 3u);  // wq, wk and wv.
  EXPECT_EQ(weightBlocks(*longer), blocks);

  // Once no program holds them, the bytes are freed, not kept by the cache.
  std::weak_ptr<const std::vector<uint8_t>> held;
  for (const auto &[offset, bytes] : shorter->programs()[0].constantImage)
    if (blocks.count(bytes.get())) held = bytes;
  shorter.reset();
  EXPECT_FALSE(held.expired());
  longer.reset();
  EXPECT_TRUE(held.expired());
}

TEST(Buckets, ArtifactRoundTripsBitForBit) {
  auto compiled = compileBuckets("S=16,32");
  ASSERT_TRUE(compiled);
  const std::string path = (std::filesystem::temp_directory_path() / "tessel_buckets_roundtrip.tsl").string();
  ASSERT_TRUE(compiled->save(path).ok());
  auto target = makeTarget("nc-v2");
  ASSERT_TRUE(target.ok());
  ASSERT_TRUE((*target)->ownsArtifact(path));
  auto loaded = (*target)->loadArtifact(path, {});
  ASSERT_TRUE(loaded.ok()) << loaded.diag().str();
  for (int64_t length : {3, 16, 17, 32}) {
    const NamedValues feeds = feedsOfLength(length, 11);
    auto a = compiled->run(feeds);
    auto b = (*loaded)->run(feeds);
    ASSERT_TRUE(a.ok() && b.ok());
    for (size_t o = 0; o < a->size(); ++o) {
      const Tensor &x = (*a)[o].second.tensor(), &y = (*b)[o].second.tensor();
      ASSERT_EQ(x.sizes(), y.sizes());
      EXPECT_EQ(std::memcmp(x.rawData(), y.rawData(), x.numBytes()), 0) << "length " << length;
    }
  }
  // Saving what was loaded gives the same bytes.
  const std::string again = path + ".again";
  ASSERT_TRUE((*loaded)->save(again).ok());
  EXPECT_EQ(std::filesystem::file_size(path), std::filesystem::file_size(again));
}

TEST(Buckets, FeedsThatDoNotFitFailNamingTheInputAndDim) {
  auto compiled = compileBuckets("S=16,32");
  ASSERT_TRUE(compiled);
  auto tooLong = compiled->run(feedsOfLength(33, 1));
  ASSERT_FALSE(tooLong.ok());
  EXPECT_NE(tooLong.diag().message.find("input 'x' dim 1 (S) is 33, larger than the largest bucket S=32"),
            std::string::npos)
      << tooLong.diag().message;
  NamedValues conflicting = feedsOfLength(8, 1);
  conflicting[1].second = RuntimeValue(Tensor(tessel::DType::Float32, {1, 9}));
  auto mismatch = compiled->run(conflicting);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.diag().message.find("input 'mask' dim 1 (S) is 9, but input 'x' dim 1 gives S = 8"),
            std::string::npos)
      << mismatch.diag().message;
}

TEST(Buckets, CompileErrorsNameTheDim) {
  auto target = makeTarget("nc-v2");
  ASSERT_TRUE(target.ok());
  auto unbucketed = (*target)->compile(parsed(), bucketOptions("T=16"));
  ASSERT_FALSE(unbucketed.ok());
  EXPECT_NE(unbucketed.diag().message.find("input 'x' dim 1 (S) is symbolic and not bucketed"), std::string::npos)
      << unbucketed.diag().message;
}

}  // namespace
}  // namespace tessel::nc::compiler
