// The public API's accelerator kernel tools (tessel::api::nc): the kernel library and
// `tessel kernel run` as a call.
#include "tessel/tessel.h"

#include <fmt/format.h>

#include "targets/nc/kernels/registry.h"
#include "targets/nc/kernels/runner.h"
#include "targets/nc/profile/report.h"
#include "targets/nc/profile/summary.h"

namespace tessel::api::nc {

namespace library = ::tessel::nc::kernels;

namespace {

Status toApi(const Diagnostic &diag, const std::string &kernel) {
  return Status(ErrorCode::InvalidArgument, diag.str(), diag.loc.file, kernel, "");
}

}  // namespace

std::vector<KernelInfo> kernels() {
  std::vector<KernelInfo> infos;
  for (const library::KernelDef &kernel : library::kernelLibrary()) {
    KernelInfo info{kernel.name, kernel.summary, kernel.dimNames, {}};
    for (::tessel::nc::DType dtype : kernel.dtypes) info.dtypes.emplace_back(::tessel::nc::dtypeName(dtype));
    infos.push_back(std::move(info));
  }
  return infos;
}

Result<KernelRunResult> kernelRun(const std::string &name, const KernelRunOptions &options) {
  const library::KernelDef *kernel = library::findKernel(name);
  if (!kernel) {
    return Status(ErrorCode::InvalidArgument,
                  fmt::format("unknown kernel '{}'; tessel::api::nc::kernels() lists the {} library kernels", name,
                              library::kernelLibrary().size()));
  }
  auto profile = ::tessel::nc::loadProfile(options.target);
  if (!profile.ok()) return toApi(profile.diag(), name);
  std::string shapeText;
  for (const auto &[dim, size] : options.shape) shapeText += fmt::format("{}{}={}", shapeText.empty() ? "" : ",", dim, size);
  std::vector<std::string> optionTexts;
  for (const auto &[key, value] : options.options) optionTexts.push_back(key + "=" + value);
  auto params = library::parseKernelParams(*kernel, shapeText, options.dtype, optionTexts);
  if (!params.ok()) return toApi(params.diag(), name);
  library::KernelRunOptions runOptions;
  runOptions.timingOnly = options.timingOnly;
  runOptions.seed = options.seed;
  auto ran = library::runKernel(*kernel, *params, *profile, runOptions);
  if (!ran.ok()) return toApi(ran.diag(), name);
  const ::tessel::nc::Timeline &timeline = ran->simulation.timeline;
  const ::tessel::nc::ProfileSummary summary = ::tessel::nc::summarize(timeline, ran->compiled.program);
  KernelRunResult result;
  result.latencyUs = timeline.totalNs / 1000.0;
  result.estimatedUs = ran->compiled.estimatedNs / 1000.0;
  if (ran->flops > 0 && timeline.pePeakFlopsPerSec > 0 && timeline.totalNs > 0)
    result.mfuPercent = 100.0 * ran->flops / (timeline.pePeakFlopsPerSec * timeline.totalNs * 1e-9);
  result.boundingEngine = summary.boundingEngine;
  result.instructions = static_cast<int64_t>(ran->compiled.program.size());
  result.checked = ran->checked;
  result.passed = ran->passed;
  result.maxAbsError = ran->maxAbsError;
  result.maxErrorRatio = ran->maxErrorRatio;
  result.races = static_cast<int64_t>(ran->simulation.races.size());
  result.summary = ::tessel::nc::formatSummary(summary);
  if (!options.profileDir.empty()) {
    tessel::Status written = ::tessel::nc::writeProfile(options.profileDir, timeline, ran->compiled.program);
    if (!written.ok()) return toApi(written.diag(), name);
  }
  return result;
}

}  // namespace tessel::api::nc
