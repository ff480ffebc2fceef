// The profile of a real kernel run opens in a browser: `tessel kernel run matmul --profile DIR` writes
// report.html, headless Chromium loads it, its script draws the engine and DMA tracks (the page marks
// the DOM when done) and a screenshot of it is not blank. Skips when chromium is not installed.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "../common/headless_browser.h"
#include "../common/run_tool.h"

namespace tessel {
namespace {

namespace fs = std::filesystem;

std::string readFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

TEST(KernelReport, MatmulReportShowsEngineTracksInBrowser) {
  std::string chromium = testing::findChromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (apt-get install chromium); browser test skipped";
  fs::path dir = fs::path(TESSEL_BINARY_DIR) / "test-output" / "kernel_report";
  fs::remove_all(dir);
  fs::create_directories(dir);
  testing::CommandResult run = testing::runTool("kernel run matmul --target nc-v2 --shape M=256,N=1024,K=512 --profile " +
                                                (dir / "profile").string());
  ASSERT_EQ(run.exitCode, 0) << run.output;
  fs::path page = dir / "profile" / "report.html";
  ASSERT_TRUE(fs::is_regular_file(page)) << run.output;

  std::string dom = testing::runHeadlessBrowser(chromium, "--dump-dom", page, dir, "dom", "#selftest");
  ASSERT_NE(dom.find("id=\"tracks-drawn\""), std::string::npos)
      << "the report's script did not finish drawing; see " << (dir / "dom.log");
  // PE (LoadStationary, Matmul), ACT, DVE, POOL, SP and at least one DMA queue.
  EXPECT_GE(std::stoi(testing::reportMarkerAttribute(dom, "data-tracks")), 7);
  EXPECT_GT(std::stoi(testing::reportMarkerAttribute(dom, "data-events")), 10);
  for (const char *track : {"PE.Matmul", "PE.LoadStationary", "ACT", "DVE", "DMA.q0"})
    EXPECT_NE(dom.find(track), std::string::npos) << "track " << track << " missing from the page";

  fs::path shot = dir / "report.png", blankShot = dir / "blank.png";
  std::ofstream(dir / "blank.html") << "<!DOCTYPE html><html><body></body></html>\n";
  const std::string window = " --window-size=1400,900 --hide-scrollbars";
  testing::runHeadlessBrowser(chromium, "--screenshot='" + shot.string() + "'" + window, page, dir, "shot");
  testing::runHeadlessBrowser(chromium, "--screenshot='" + blankShot.string() + "'" + window, dir / "blank.html", dir,
                              "blankshot");
  ASSERT_TRUE(fs::is_regular_file(shot)) << "no screenshot; see " << (dir / "shot.log");
  ASSERT_TRUE(fs::is_regular_file(blankShot)) << "no screenshot; see " << (dir / "blankshot.log");
  std::string png = readFile(shot);
  EXPECT_EQ(testing::pngSize(png), (std::pair<uint32_t, uint32_t>{1400, 900}));
  EXPECT_GT(png.size(), 5 * fs::file_size(blankShot)) << "the screenshot looks blank";
}

}  // namespace
}  // namespace tessel
