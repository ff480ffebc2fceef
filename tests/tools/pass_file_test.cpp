// Driver of the text pass tests in tests/passes/*.tsl.txt: a FileCheck-like runner without LLVM.
// A file holds a `# RUN: tessel opt ... %s` line and one or more cases separated by `# -----`
// lines; each case is input IR followed by directives checked against what the command prints:
//   # CHECK: text        the text occurs after the previous match (substring, within one line)
//   # CHECK-NEXT: text   the text occurs on the line right after the previous match
//   # CHECK-NOT: text    the text does not occur between the previous match and the next one
//                        (or the end of the output)
// Each case runs the RUN command on a file holding just that case; the command must succeed.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "../common/run_tool.h"
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tessel {
namespace {

namespace fs = std::filesystem;

struct Directive {
  enum class Kind { Check, Next, Not } kind;
  std::string pattern;
  int line;  // In the test file, for messages.
};

struct TestCase {
  std::string text;  // The case's lines, with blank lines in place of other cases' (line numbers stay).
  std::vector<Directive> directives;
};

std::string trim(const std::string &s) {
  size_t begin = s.find_first_not_of(" \t");
  size_t end = s.find_last_not_of(" \t\r");
  return begin == std::string::npos ? "" : s.substr(begin, end - begin + 1);
}

std::vector<fs::path> findTestFiles() {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto &entry : fs::directory_iterator(fs::path(TESSEL_SOURCE_DIR) / "tests" / "passes", ec)) {
    std::string name = entry.path().filename().string();
    if (name.size() > 8 && name.substr(name.size() - 8) == ".tsl.txt") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

/// Splits a test file into its RUN command and its cases.
std::vector<TestCase> splitCases(const std::string &contents, std::string &run) {
  std::vector<TestCase> cases(1);
  std::istringstream in(contents);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::string body = trim(line);
    if (body.rfind("# -----", 0) == 0) {
      cases.emplace_back();
      cases.back().text = std::string(static_cast<size_t>(number), '\n');
      continue;
    }
    cases.back().text += line + "\n";
    struct Prefix {
      const char *text;
      Directive::Kind kind;
    };
    for (Prefix p : {Prefix{"# CHECK-NEXT:", Directive::Kind::Next}, Prefix{"# CHECK-NOT:", Directive::Kind::Not},
                     Prefix{"# CHECK:", Directive::Kind::Check}}) {
      if (body.rfind(p.text, 0) == 0) {
        cases.back().directives.push_back({p.kind, trim(body.substr(std::strlen(p.text))), number});
        break;
      }
    }
    if (body.rfind("# RUN:", 0) == 0 && run.empty()) run = trim(body.substr(6));
  }
  return cases;
}

using testing::CommandResult;
using testing::runCommand;

/// Checks the directives against `output`; returns "" or a message naming the failing directive.
std::string checkOutput(const std::string &output, const std::vector<Directive> &directives, const std::string &file) {
  size_t pos = 0;
  std::vector<const Directive *> pendingNots;
  auto failNots = [&](size_t begin, size_t end) -> std::string {
    for (const Directive *d : pendingNots) {
      size_t found = output.find(d->pattern, begin);
      if (found != std::string::npos && found + d->pattern.size() <= end) {
        return fmt::format("{}:{}: CHECK-NOT: '{}' found", file, d->line, d->pattern);
      }
    }
    pendingNots.clear();
    return "";
  };
  for (const Directive &d : directives) {
    if (d.kind == Directive::Kind::Not) {
      pendingNots.push_back(&d);
      continue;
    }
    size_t searchBegin = pos, searchEnd = output.size();
    if (d.kind == Directive::Kind::Next) {
      size_t newline = output.find('\n', pos);
      if (newline == std::string::npos)
        return fmt::format("{}:{}: CHECK-NEXT: no line after the previous match", file, d.line);
      searchBegin = newline + 1;
      searchEnd = output.find('\n', searchBegin);
      if (searchEnd == std::string::npos) searchEnd = output.size();
    }
    size_t found = output.find(d.pattern, searchBegin);
    size_t lineEnd = found == std::string::npos ? found : output.find('\n', found);
    bool withinLine =
        found != std::string::npos && (lineEnd == std::string::npos || found + d.pattern.size() <= lineEnd);
    if (!withinLine || found + d.pattern.size() > searchEnd) {
      return fmt::format("{}:{}: {}: '{}' not found", file, d.line,
                         d.kind == Directive::Kind::Next ? "CHECK-NEXT" : "CHECK", d.pattern);
    }
    if (std::string failure = failNots(pos, found); !failure.empty()) return failure;
    pos = found + d.pattern.size();
  }
  return failNots(pos, output.size());
}

/// The matcher itself: order, same-line, next-line and not-between semantics.
TEST(PassFileDriver, ChecksFollowFileCheckSemantics) {
  using K = Directive::Kind;
  const std::string out = "a = Foo(x)\nb = Bar(a)\nreturn b\n";
  auto check = [&](std::vector<Directive> ds) { return checkOutput(out, ds, "t"); };
  EXPECT_EQ(check({{K::Check, "Foo(x)", 1}, {K::Next, "Bar(a)", 2}, {K::Next, "return b", 3}}), "");
  EXPECT_EQ(check({{K::Check, "Bar", 1}, {K::Check, "Foo", 2}}), "t:2: CHECK: 'Foo' not found");
  EXPECT_EQ(check({{K::Check, "Foo", 1}, {K::Next, "return", 2}}), "t:2: CHECK-NEXT: 'return' not found");
  EXPECT_EQ(check({{K::Check, "Foo", 1}, {K::Not, "Bar", 2}, {K::Check, "return", 3}}), "t:2: CHECK-NOT: 'Bar' found");
  EXPECT_EQ(check({{K::Check, "Bar", 1}, {K::Not, "Foo", 2}}), "");  // Foo is before the previous match.
  EXPECT_EQ(check({{K::Not, "Baz", 1}}), "");
  EXPECT_EQ(check({{K::Check, "x)\nb", 1}}), "t:1: CHECK: 'x)\nb' not found");  // Never across lines.
}

class PassFileTest : public ::testing::TestWithParam<fs::path> {};

TEST_P(PassFileTest, MatchesChecks) {
  const fs::path &path = GetParam();
  std::ifstream in(path);
  std::stringstream contents;
  contents << in.rdbuf();
  std::string run;
  std::vector<TestCase> cases = splitCases(contents.str(), run);
  ASSERT_EQ(run.rfind("tessel ", 0), 0u) << path << ": needs a '# RUN: tessel ...' line";
  fs::path dir = fs::temp_directory_path() / fmt::format("tessel-pass-tests-{}", ::getpid());
  fs::create_directories(dir);
  for (size_t i = 0; i < cases.size(); ++i) {
    const TestCase &c = cases[i];
    ASSERT_FALSE(c.directives.empty()) << path << ": case " << i + 1 << " has no CHECK lines";
    fs::path input = dir / fmt::format("{}.case{}.tsl.txt", path.stem().string(), i + 1);
    std::ofstream(input) << c.text;
    std::string command = std::string(TESSEL_BINARY_DIR) + "/bin/" + run;
    for (size_t at; (at = command.find("%s")) != std::string::npos;) command.replace(at, 2, input.string());
    CommandResult result = runCommand(command);
    ASSERT_EQ(result.exitCode, 0) << path << ": case " << i + 1 << ": " << command << "\n" << result.output;
    std::string failure = checkOutput(result.output, c.directives, path.string());
    EXPECT_EQ(failure, "") << "output of case " << i + 1 << ":\n" << result.output;
  }
  fs::remove_all(dir);
}

std::string testName(const ::testing::TestParamInfo<fs::path> &info) {
  std::string name = info.param.filename().string();
  name = name.substr(0, name.size() - 8);
  for (char &c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Passes, PassFileTest, ::testing::ValuesIn(findTestFiles()), testName);

}  // namespace
}  // namespace tessel
