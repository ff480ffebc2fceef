// The kernel runner (runner.h): build -> compile -> random inputs into HBM -> simulate -> outputs
// back -> reference -> compare.
#include "targets/nc/kernels/runner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "targets/nc/sim/functional/dtype_convert.h"

namespace tessel::nc::kernels {

namespace {

/// Prefixes a diagnostic from building or running `kernel` with the kernel's name.
Diagnostic aboutKernel(Diagnostic diag, const KernelDef &kernel) {
  std::string prefix = fmt::format("kernel '{}'", kernel.name);
  if (diag.message.rfind(prefix, 0) != 0) diag.message = prefix + ": " + diag.message;
  return diag;
}

/// A value in [-1, 1], bell-shaped: the mean of three uniforms.
float normalish(std::mt19937_64 &rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  return (uniform(rng) + uniform(rng) + uniform(rng)) / 3.0f;
}

/// "name[i, j]" for flat index `index` of a tensor of `shape`.
std::string elementName(const HostTensor &tensor, size_t index) {
  std::vector<int64_t> coords(tensor.shape.size());
  for (size_t d = tensor.shape.size(); d-- > 0;) {
    int64_t size = std::max<int64_t>(tensor.shape[d], 1);
    coords[d] = static_cast<int64_t>(index) % size;
    index /= static_cast<size_t>(size);
  }
  return fmt::format("{}[{}]", tensor.name, fmt::join(coords, ", "));
}

/// Compares outputs with the expected values; fills the error fields of `result`.
Status compare(KernelRunResult &result) {
  if (result.expected.size() != result.outputs.size())
    return makeError(ErrorCode::Internal, "the reference returned {} output(s); the kernel has {}",
                     result.expected.size(), result.outputs.size());
  const double atol = result.absTolerance, rtol = result.relTolerance;
  for (size_t t = 0; t < result.outputs.size(); ++t) {
    const HostTensor &got = result.outputs[t], &want = result.expected[t];
    if (got.values.size() != want.values.size())
      return makeError(ErrorCode::Internal, "output '{}' has {} elements; the reference's has {}", got.name,
                       got.values.size(), want.values.size());
    for (size_t i = 0; i < got.values.size(); ++i) {
      double g = got.values[i], w = want.values[i];
      double error = std::fabs(g - w), ratio = 0;
      if (std::isnan(g) || std::isnan(w)) {
        error = std::isnan(g) && std::isnan(w) ? 0 : std::numeric_limits<double>::infinity();
        ratio = error;
      } else {
        double allowed = atol + rtol * std::fabs(w);
        ratio = allowed > 0 ? error / allowed : (error > 0 ? std::numeric_limits<double>::infinity() : 0);
      }
      result.maxAbsError = std::max(result.maxAbsError, error);
      if (result.worstElement.empty() || ratio > result.maxErrorRatio) {
        result.maxErrorRatio = ratio;
        result.worstElement = fmt::format("{}: got {:.7g}, want {:.7g}", elementName(got, i), g, w);
      }
    }
  }
  return Status::success();
}

Expected<KernelRunResult> run(const KernelDef &kernel, const KernelParams &params, const MachineProfile &profile,
                              const KernelRunOptions &options) {
  for (const std::string &name : kernel.dimNames)
    if (!params.dims.count(name)) return makeError(ErrorCode::InvalidArgument, "missing dim '{}'", name);
  if (!kernel.build) return makeError(ErrorCode::Internal, "no build function");
  KernelRunResult result;
  tile::KernelBuilder builder(kernel.name, profile);
  TESSEL_RETURN_IF_ERROR(kernel.build(builder, params));
  TESSEL_ASSIGN_OR_RETURN(result.kernel, builder.finish());
  TESSEL_ASSIGN_OR_RETURN(result.compiled, tile::compileKernel(result.kernel, profile));
  result.flops = kernel.flops ? kernel.flops(params) : 0;

  // Inputs: seeded values rounded to their dtype, written at their HBM placements. A timing-only run
  // simulates no values, so it makes none (at the tutorials' shapes they took most of the run).
  std::unique_ptr<MachineState> state;
  if (!options.timingOnly) state = std::make_unique<MachineState>(profile, result.compiled.hbmBytes);
  std::mt19937_64 rng(options.seed);
  for (const tile::HbmPlacement &placement : result.compiled.hbmTensors) {
    if (placement.isOutput || placement.isScratch || options.timingOnly) continue;
    HostTensor input{placement.name, placement.dtype, placement.shape, {}};
    int64_t count = 1;
    for (int64_t size : placement.shape) count *= size;
    input.values.resize(static_cast<size_t>(count));
    for (float &value : input.values) value = normalish(rng);
    std::vector<uint8_t> bytes = encodeValues(placement.dtype, input.values);
    input.values = decodeValues(placement.dtype, bytes);  // The exact values fed.
    if (state) TESSEL_RETURN_IF_ERROR(state->writeHbm(placement.offsetBytes, bytes));
    result.inputs.push_back(std::move(input));
  }

  SimulateOptions simulateOptions;
  simulateOptions.timingOnly = options.timingOnly;
  simulateOptions.detectRaces = options.detectRaces;
  TESSEL_ASSIGN_OR_RETURN(result.simulation, simulate(result.compiled.program, profile, state.get(), simulateOptions));
  result.passed = result.simulation.races.empty();
  if (options.timingOnly) return result;

  for (const tile::HbmPlacement &placement : result.compiled.hbmTensors) {
    if (!placement.isOutput) continue;
    int64_t count = 1;
    for (int64_t size : placement.shape) count *= size;
    std::vector<uint8_t> bytes(static_cast<size_t>(count) * static_cast<size_t>(dtypeSizeBytes(placement.dtype)));
    TESSEL_RETURN_IF_ERROR(state->readHbm(placement.offsetBytes, bytes));
    HostTensor output{placement.name, placement.dtype, placement.shape, {}};
    output.values = decodeValues(placement.dtype, bytes);
    result.outputs.push_back(std::move(output));
  }
  if (!options.check) return result;
  if (!kernel.reference) return makeError(ErrorCode::Internal, "no reference function");
  TESSEL_ASSIGN_OR_RETURN(result.expected, kernel.reference(params, result.inputs));
  result.absTolerance = kernel.absTolerance ? kernel.absTolerance(params.dtype) : 0;
  result.relTolerance = kernel.relTolerance ? kernel.relTolerance(params.dtype) : 0;
  TESSEL_RETURN_IF_ERROR(compare(result));
  result.checked = true;
  result.passed = result.passed && result.maxErrorRatio <= 1.0;
  return result;
}

}  // namespace

std::vector<uint8_t> encodeValues(DType dtype, const std::vector<float> &values) {
  const int64_t size = dtypeSizeBytes(dtype);
  std::vector<uint8_t> bytes(values.size() * static_cast<size_t>(size));
  functional::storeRun(bytes.data(), size, values.size(), dtype, values.data());
  return bytes;
}

std::vector<float> decodeValues(DType dtype, const std::vector<uint8_t> &bytes) {
  const int64_t size = dtypeSizeBytes(dtype);
  std::vector<float> values(bytes.size() / static_cast<size_t>(size));
  functional::loadRun(bytes.data(), size, values.size(), dtype, values.data());
  return values;
}

Expected<KernelRunResult> runKernel(const KernelDef &kernel, const KernelParams &params, const MachineProfile &profile,
                                    const KernelRunOptions &options) {
  auto result = run(kernel, params, profile, options);
  if (!result.ok()) return aboutKernel(std::move(result.diag()), kernel);
  return result;
}

}  // namespace tessel::nc::kernels
