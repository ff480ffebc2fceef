// Runs headless Chromium from tests, to check that a generated HTML page (the profiler's report)
// loads, runs its script and draws. Tests skip when no browser is installed.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace tessel::testing {

/// The chromium binary on PATH, or "".
inline std::string findChromium() {
  const char *path = std::getenv("PATH");
  if (!path) return "";
  for (const char *name : {"chromium", "chromium-browser", "google-chrome"}) {
    std::stringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      std::filesystem::path candidate = std::filesystem::path(dir) / name;
      std::error_code error;
      if (!dir.empty() && std::filesystem::is_regular_file(candidate, error) && access(candidate.c_str(), X_OK) == 0)
        return candidate.string();
    }
  }
  return "";
}

/// Runs headless `chromium` on `page` (plus `fragment`, e.g. "#selftest") with extra `flags`
/// (--dump-dom, --screenshot=...); returns its stdout, its stderr goes to `workDir`/`logName`.log.
inline std::string runHeadlessBrowser(const std::string &chromium, const std::string &flags,
                                      const std::filesystem::path &page, const std::filesystem::path &workDir,
                                      const std::string &logName, const std::string &fragment = "") {
  std::string profile = (workDir / ("chrome-" + logName)).string();
  std::string command = fmt::format(
      "timeout 120 '{}' --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run "
      "--user-data-dir='{}' {} 'file://{}{}' 2>'{}'",
      chromium, profile, flags, std::filesystem::absolute(page).string(), fragment,
      (workDir / (logName + ".log")).string());
  FILE *pipe = popen(command.c_str(), "r");
  if (!pipe) return "";
  std::string output;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
  pclose(pipe);
  return output;
}

/// Width and height from a PNG's IHDR chunk, or {0, 0}.
inline std::pair<uint32_t, uint32_t> pngSize(const std::string &png) {
  if (png.size() < 24 || png.compare(1, 3, "PNG") != 0 || png.compare(12, 4, "IHDR") != 0) return {0, 0};
  auto be32 = [&](size_t at) {
    return (uint32_t(uint8_t(png[at])) << 24) | (uint32_t(uint8_t(png[at + 1])) << 16) |
           (uint32_t(uint8_t(png[at + 2])) << 8) | uint32_t(uint8_t(png[at + 3]));
  };
  return {be32(16), be32(20)};
}

/// The value of attribute `name` on the report's tracks-drawn marker in a dumped DOM, or "".
inline std::string reportMarkerAttribute(const std::string &dom, const std::string &name) {
  size_t marker = dom.find("id=\"tracks-drawn\"");
  if (marker == std::string::npos) return "";
  size_t tagStart = dom.rfind('<', marker), tagEnd = dom.find("></div>", marker);
  std::string tag = dom.substr(tagStart, tagEnd - tagStart);
  size_t at = tag.find(" " + name + "=\"");
  if (at == std::string::npos) return "";
  at += name.size() + 3;
  return tag.substr(at, tag.find('"', at) - at);
}

}  // namespace tessel::testing
