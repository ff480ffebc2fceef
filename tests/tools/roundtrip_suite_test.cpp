// Every model of the ONNX test data that the importer accepts survives print -> parse -> print
// byte for byte (tensors in full), and both the imported and the parsed model pass the verifier.
// One test per folder; failures list the models with the first differing line.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "frontend/onnx/importer.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace tessel {
namespace {

namespace fs = std::filesystem;

const char *const kDataRoot = "/usr/share/libonnx-testdata/data";

std::vector<std::string> findModels(const std::string &folder) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(fs::path(kDataRoot) / folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename() == "model.onnx") paths.push_back(it->path().string());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

/// The first line where a and b differ, for the failure message.
std::string firstDifference(const std::string &a, const std::string &b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  for (int line = 1;; ++line) {
    bool hasA = static_cast<bool>(std::getline(sa, la));
    bool hasB = static_cast<bool>(std::getline(sb, lb));
    if (!hasA && !hasB) return "identical";
    if (!hasA || !hasB || la != lb) {
      return "line " + std::to_string(line) + ":\n  first:  " + la.substr(0, 300) + "\n  second: " + lb.substr(0, 300);
    }
  }
}

/// Round-trips one model; "" on success or when the importer rejects it, else what went wrong.
std::string roundTrip(const std::string &path, int &imported) {
  auto model = importOnnxFile(path);
  if (!model.ok()) return "";
  ++imported;
  if (Status verified = verifyModel(*model); !verified.ok()) return "imported model fails to verify: " + verified.str();
  PrintOptions options;
  options.elideLargeTensors = false;
  std::string first = printModel(*model, options);
  auto parsed = parseModel(first, path + ".tsl.txt");
  if (!parsed.ok()) return "parse failed: " + parsed.diag().str();
  if (Status verified = verifyModel(*parsed); !verified.ok()) return "parsed model fails to verify: " + verified.str();
  std::string second = printModel(*parsed, options);
  if (first != second) return "print differs after parse at " + firstDifference(first, second);
  return "";
}

void checkFolder(const std::string &folder) {
  std::vector<std::string> models = findModels(folder);
  if (models.empty()) GTEST_SKIP() << "no ONNX test data under " << kDataRoot << "/" << folder;
  int imported = 0;
  std::vector<std::string> failures;
  for (const std::string &path : models) {
    std::string problem = roundTrip(path, imported);
    if (!problem.empty()) failures.push_back(path + ": " + problem);
  }
  std::string report;
  for (size_t i = 0; i < failures.size() && i < 20; ++i) report += failures[i] + "\n";
  EXPECT_TRUE(failures.empty()) << failures.size() << " of " << imported << " imported models failed:\n" << report;
  EXPECT_GT(imported, 0) << "the importer rejected every model under " << folder;
  std::printf("%s: %d of %zu models imported and round-tripped\n", folder.c_str(), imported, models.size());
}

TEST(RoundTripSuite, Node) { checkFolder("node"); }
TEST(RoundTripSuite, PytorchConverted) { checkFolder("pytorch-converted"); }
TEST(RoundTripSuite, PytorchOperator) { checkFolder("pytorch-operator"); }
TEST(RoundTripSuite, Simple) { checkFolder("simple"); }

}  // namespace
}  // namespace tessel
