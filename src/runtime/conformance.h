// The ONNX backend-test runner behind `tessel conformance`: each case is a folder with model.onnx
// and test_data_set_*/{input,output}_*.pb; outputs are compared the way ONNX's own backend test
// compares them (numpy assert_allclose with rtol 1e-3, atol 1e-7, NaN equal to NaN, exact dtype and
// shape).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/runtime_value.h"
#include "support/diagnostic.h"

namespace tessel {

struct ConformanceOptions {
  std::string target = "ref";
  double rtol = 1e-3;
  double atol = 1e-7;
};

enum class CaseOutcome { Passed, Failed, Unsupported };

struct CaseResult {
  std::string name;     // "<suite>/<case>", e.g. "node/test_abs".
  std::string dir;
  CaseOutcome outcome = CaseOutcome::Failed;
  std::string reason;   // Empty when passed.
  double seconds = 0;
  // Accelerator targets: nodes that ran in device and host stages, and why each host node is there.
  int deviceNodes = 0, hostNodes = 0;
  std::vector<std::string> fallbacks;
};

/// The default suite: Debian's libonnx-testdata folders node, pytorch-converted, pytorch-operator, simple.
std::vector<std::string> defaultConformanceDirs();
/// Case folders under each path: the path itself when it holds model.onnx, else its sub-folders
/// that do (searched two levels deep), sorted by name.
Expected<std::vector<std::string>> findConformanceCases(const std::vector<std::string> &paths);
/// Runs one case: every test_data_set_* folder in it.
CaseResult runConformanceCase(const std::string &dir, const ConformanceOptions &options);
/// Compares one output the way the backend test does; fills `why` on mismatch.
bool valuesMatch(const RuntimeValue &expected, const RuntimeValue &actual, double rtol, double atol, std::string &why);

/// Reads an expected-failures file: "<case name> <reason...>" per line, '#' comments.
Expected<std::map<std::string, std::string>> readExpectedFailures(const std::string &path);

}  // namespace tessel
