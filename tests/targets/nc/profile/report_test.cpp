// The HTML report and the profile directory: the page is self-contained (no external reference),
// names every track, carries parseable event data (merged past the cap, with a note), survives
// hostile strings, and writeProfile writes and reports errors. When chromium is installed, a
// headless browser loads the page, runs its script (which marks the DOM once it has drawn) and takes
// a screenshot that must not be blank.
#include "targets/nc/profile/report.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../../../common/headless_browser.h"
#include "targets/nc/profile/summary.h"
#include "targets/nc/profile/tracks.h"
#include "test_timeline.h"

namespace tessel::nc {
namespace {

namespace fs = std::filesystem;

const std::string kDataOpen = R"(<script type="application/json" id="profile-data">)";

/// The JSON blob embedded in a report.
nlohmann::json reportData(const std::string &html) {
  size_t open = html.find(kDataOpen);
  EXPECT_NE(open, std::string::npos);
  if (open == std::string::npos) return {};
  size_t begin = open + kDataOpen.size();
  size_t close = html.find("</script>", begin);
  return nlohmann::json::parse(html.substr(begin, close - begin));
}

size_t countOf(const std::string &text, const std::string &needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

std::string readFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// A fresh empty directory under the test temp dir.
fs::path freshDir(const std::string &name) {
  fs::path dir = fs::path(::testing::TempDir()) / ("tessel_profile_" + name);
  fs::remove_all(dir);
  return dir;
}

class ReportTest : public ::testing::Test {
 protected:
  std::vector<Instruction> program_ = testing::smallProgram();
  Timeline timeline_ = testing::smallTimeline();
  std::string html_ = renderReport(timeline_, program_);
};

TEST_F(ReportTest, IsSelfContained) {
  EXPECT_EQ(html_.find("http://"), std::string::npos);
  EXPECT_EQ(html_.find("https://"), std::string::npos);
  EXPECT_EQ(html_.find("//cdn"), std::string::npos);
  EXPECT_EQ(html_.find("@import"), std::string::npos);
  EXPECT_EQ(html_.find("url("), std::string::npos);
  EXPECT_FALSE(std::regex_search(html_, std::regex(R"(<[a-zA-Z][^>]*\s(src|href)\s*=)", std::regex::icase)));
  EXPECT_EQ(html_.find("<link"), std::string::npos);
  EXPECT_EQ(html_.find("<iframe"), std::string::npos);
  EXPECT_EQ(html_.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html_.find("<canvas id=\"timeline-canvas\">"), std::string::npos);
  EXPECT_EQ(countOf(html_, "<script"), 2u);
  EXPECT_EQ(countOf(html_, "</script>"), 2u);
}

TEST_F(ReportTest, NamesEveryTrackAndHasTheSummary) {
  for (const char *track : {"PE.LoadStationary", "PE.Matmul", "ACT", "DVE", "POOL", "SP", "DMA.q0", "DMA.q1"})
    EXPECT_NE(html_.find(std::string(">") + track + "<"), std::string::npos) << track;  // Summary table cell.
  EXPECT_NE(html_.find("<td>MFU</td><td>30.00 %</td>"), std::string::npos);
  EXPECT_NE(html_.find("<td>bounding engine</td><td>DMA (80.00 %)</td>"), std::string::npos);
}

TEST_F(ReportTest, EmbedsTheEventsAsArrays) {
  nlohmann::json data = reportData(html_);
  ASSERT_TRUE(data.is_object());
  EXPECT_EQ(data["profile"], "nc-v2");
  EXPECT_EQ(data["totalNs"], 1000);
  std::vector<std::string> tracks;
  for (const nlohmann::json &track : data["tracks"]) tracks.push_back(track["name"]);
  EXPECT_EQ(tracks, (std::vector<std::string>{"PE.LoadStationary", "PE.Matmul", "ACT", "DVE", "POOL", "SP", "DMA.q0",
                                              "DMA.q1"}));
  EXPECT_EQ(data["tracks"][6]["lanes"], 2);  // DMA.q0's overlapping transfers.
  EXPECT_EQ(data["tracks"][6]["engine"], "DMA");
  EXPECT_EQ(data["note"], "");
  const nlohmann::json &events = data["events"];
  ASSERT_EQ(events["start"].size(), timeline_.events.size());
  for (const char *column : {"track", "lane", "dur", "name", "text", "insn", "stall", "stallNs", "wait"})
    EXPECT_EQ(events[column].size(), timeline_.events.size()) << column;
  // The ACT event that waited on s3>=2: find it by instruction index.
  const std::vector<std::string> strings = data["strings"];
  bool found = false;
  for (size_t i = 0; i < events["insn"].size(); ++i) {
    if (events["insn"][i] != 2) continue;
    found = true;
    EXPECT_EQ(strings[events["name"][i].get<size_t>()], "activation");
    EXPECT_EQ(strings[events["wait"][i].get<size_t>()], "s3>=2");
    EXPECT_EQ(strings[events["text"][i].get<size_t>()], instructionText(program_, 2));
    EXPECT_EQ(data["stallReasons"][events["stall"][i].get<size_t>()], "semaphore");
    EXPECT_EQ(events["start"][i], 450);
    EXPECT_EQ(events["dur"][i], 100);
    EXPECT_EQ(events["stallNs"][i], 250);
  }
  EXPECT_TRUE(found);
}

TEST_F(ReportTest, HostileStringsCannotBreakThePage) {
  Timeline timeline = timeline_;
  timeline.profileName = "x</script><img src=y>";
  timeline.events[0].name = "</script><script>alert(1)</script>";
  std::string html = renderReport(timeline, program_);
  EXPECT_EQ(countOf(html, "</script>"), 2u);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  nlohmann::json data = reportData(html);
  EXPECT_EQ(data["profile"], timeline.profileName);
}

TEST(Report, MergesEventsPastTheCap) {
  Timeline timeline = testing::largeTimeline(4000);
  std::string html = renderReport(timeline, {}, ReportOptions{/*maxEvents=*/400});
  nlohmann::json data = reportData(html);
  size_t boxes = data["events"]["start"].size();
  EXPECT_LE(boxes, 400u + 8u);  // At most the cap plus one per lane.
  EXPECT_GT(boxes, 100u);
  EXPECT_NE(data["note"].get<std::string>().find("merged"), std::string::npos);
  // Merged boxes still cover the whole run.
  double lastEnd = 0;
  for (size_t i = 0; i < boxes; ++i)
    lastEnd = std::max(lastEnd, data["events"]["start"][i].get<double>() + data["events"]["dur"][i].get<double>());
  EXPECT_NEAR(lastEnd, timeline.totalNs - 10, 1e-6);  // The last event ends 10 ns before it completes.
}

TEST(Report, LargeTimelineKeepsEveryEventUnderTheCap) {
  Timeline timeline = testing::largeTimeline(150000);
  std::string html = renderReport(timeline, {});
  nlohmann::json data = reportData(html);
  EXPECT_EQ(data["events"]["start"].size(), timeline.events.size());
  EXPECT_LT(html.size(), 150000u * 80u);  // Compact: well under a hundred bytes per event.
}

TEST_F(ReportTest, WriteProfileWritesAllOutputs) {
  fs::path dir = freshDir("write") / "nested" / "out";
  Status status = writeProfile(dir.string(), timeline_, program_);
  ASSERT_TRUE(status.ok()) << status.str();
  for (const char *name : {"trace.json", "summary.txt", "summary.json", "report.html"})
    EXPECT_TRUE(fs::is_regular_file(dir / name)) << name;
  nlohmann::json summary = nlohmann::json::parse(readFile(dir / "summary.json"));
  EXPECT_EQ(summary["bounding_engine"], "DMA");
  nlohmann::json trace = nlohmann::json::parse(readFile(dir / "trace.json"));
  EXPECT_TRUE(trace["traceEvents"].is_array());
  EXPECT_EQ(readFile(dir / "summary.txt"), formatSummary(summarize(timeline_, program_)));
  EXPECT_EQ(readFile(dir / "report.html"), html_);
}

TEST_F(ReportTest, WriteProfileReportsThePathItCannotCreate) {
  fs::path dir = freshDir("blocked");
  fs::create_directories(dir);
  std::ofstream(dir / "file") << "not a directory";
  std::string target = (dir / "file" / "out").string();
  Status status = writeProfile(target, timeline_, program_);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.diag().code, ErrorCode::IoError);
  EXPECT_NE(status.str().find(target), std::string::npos) << status.str();
}

// ---- Headless browser ----

class BrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = tessel::testing::findChromium();
    if (chromium_.empty()) GTEST_SKIP() << "chromium is not installed (apt-get install chromium); browser test skipped";
    // One directory per test: ctest runs them in parallel processes.
    dir_ = freshDir(std::string("browser_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }

  /// Runs headless chromium on `page` (plus `fragment`, e.g. "#selftest") and returns its stdout.
  std::string browser(const std::string &flags, const fs::path &page, const std::string &logName,
                      const std::string &fragment = "") {
    return tessel::testing::runHeadlessBrowser(chromium_, flags, page, dir_, logName, fragment);
  }

  static std::string markerAttribute(const std::string &dom, const std::string &name) {
    return tessel::testing::reportMarkerAttribute(dom, name);
  }

  std::string chromium_;
  fs::path dir_;
};

TEST_F(BrowserTest, ScriptDrawsEveryTrack) {
  Timeline timeline = testing::smallTimeline();
  std::vector<Instruction> program = testing::smallProgram();
  ASSERT_TRUE(writeProfile(dir_.string(), timeline, program).ok());
  std::string dom = browser("--dump-dom", dir_ / "report.html", "dom", "#selftest");
  ASSERT_NE(dom.find("id=\"tracks-drawn\""), std::string::npos)
      << "the page's script did not finish drawing; see " << (dir_ / "dom.log") << "\n" << dom.substr(0, 2000);
  EXPECT_EQ(markerAttribute(dom, "data-tracks"), "8");
  EXPECT_EQ(markerAttribute(dom, "data-events"), "9");
  // The self test hovered the first event (PE.LoadStationary of the matmul), zoomed in and panned.
  std::string hover = markerAttribute(dom, "data-hover");
  EXPECT_NE(hover.find("LoadStationary"), std::string::npos) << hover;
  EXPECT_NE(hover.find("nc_matmul.PE"), std::string::npos) << hover;
  EXPECT_GT(std::atof(markerAttribute(dom, "data-zoom").c_str()), 1.5);
  EXPECT_EQ(markerAttribute(dom, "data-pan"), "true");
}

TEST_F(BrowserTest, LargeTimelineStillDraws) {
  Timeline timeline = testing::largeTimeline(120000);
  std::ofstream(dir_ / "large.html") << renderReport(timeline, {});
  std::string dom = browser("--dump-dom", dir_ / "large.html", "large", "#selftest");
  EXPECT_EQ(markerAttribute(dom, "data-events"), "120000") << "see " << (dir_ / "large.log");
  EXPECT_NE(markerAttribute(dom, "data-hover"), "");
  EXPECT_EQ(markerAttribute(dom, "data-pan"), "true");
}

TEST_F(BrowserTest, ScreenshotIsNotBlank) {
  ASSERT_TRUE(writeProfile(dir_.string(), testing::smallTimeline(), testing::smallProgram()).ok());
  std::ofstream(dir_ / "blank.html") << "<!DOCTYPE html><html><body></body></html>\n";
  fs::path shot = dir_ / "report.png", blankShot = dir_ / "blank.png";
  const std::string window = " --window-size=1400,900 --hide-scrollbars";
  browser("--screenshot='" + shot.string() + "'" + window, dir_ / "report.html", "shot");
  browser("--screenshot='" + blankShot.string() + "'" + window, dir_ / "blank.html", "blankshot");
  ASSERT_TRUE(fs::is_regular_file(shot)) << "no screenshot; see " << (dir_ / "shot.log");
  ASSERT_TRUE(fs::is_regular_file(blankShot)) << "no screenshot; see " << (dir_ / "blankshot.log");
  std::string png = readFile(shot);
  EXPECT_EQ(tessel::testing::pngSize(png), (std::pair<uint32_t, uint32_t>{1400, 900}));
  // A single-color page compresses to almost nothing; tables, text and colored boxes do not.
  size_t blankBytes = fs::file_size(blankShot);
  EXPECT_GT(png.size(), 5 * blankBytes) << "report " << png.size() << " B, blank page " << blankBytes << " B";
}

}  // namespace
}  // namespace tessel::nc
