// The kernel library table and the parsing of kernel parameters (registry.h).
#include "targets/nc/kernels/registry.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "targets/nc/kernels/attention/kernel.h"
#include "targets/nc/kernels/elementwise.h"
#include "targets/nc/kernels/mamba.h"
#include "targets/nc/kernels/matmul/kernel.h"
#include "targets/nc/kernels/norm.h"
#include "targets/nc/kernels/reduction.h"
#include "targets/nc/kernels/softmax.h"
#include "targets/nc/kernels/transpose.h"

namespace tessel::nc::kernels {

namespace {

const KernelDef *findKernelIn(const std::vector<KernelDef> &kernels, std::string_view name) {
  for (const KernelDef &kernel : kernels)
    if (kernel.name == name) return &kernel;
  return nullptr;
}

std::vector<KernelDef> buildLibrary() {
  std::vector<KernelDef> library;
  auto append = [&](std::vector<KernelDef> family) {
    for (KernelDef &kernel : family) {
      TESSEL_CHECK(findKernelIn(library, kernel.name) == nullptr, "kernel '{}' registered twice", kernel.name);
      library.push_back(std::move(kernel));
    }
  };
  append(elementwiseKernels());
  append(softmaxKernels());
  append(normKernels());
  append(reductionKernels());
  append(transposeKernels());
  append(matmulKernels());
  append(attentionKernels());
  append(mambaKernels());
  return library;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

/// Splits "a=1,b=2" at commas (empty pieces dropped).
std::vector<std::string_view> splitList(std::string_view text) {
  std::vector<std::string_view> pieces;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view piece = trim(text.substr(0, comma));
    if (!piece.empty()) pieces.push_back(piece);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return pieces;
}

std::string acceptedDtypes(const KernelDef &kernel) {
  std::vector<std::string_view> names;
  for (DType dtype : kernel.dtypes) names.push_back(dtypeName(dtype));
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

const std::vector<KernelDef> &kernelLibrary() {
  static const std::vector<KernelDef> library = buildLibrary();
  return library;
}

const KernelDef *findKernel(std::string_view name) { return findKernelIn(kernelLibrary(), name); }

Expected<KernelParams> parseKernelParams(const KernelDef &kernel, std::string_view shapeText,
                                         std::string_view dtypeText, const std::vector<std::string> &optionTexts,
                                         std::string_view variantText) {
  KernelParams params;
  const std::string dimList = fmt::format("{}", fmt::join(kernel.dimNames, ", "));
  for (std::string_view piece : splitList(shapeText)) {
    size_t eq = piece.find('=');
    if (eq == std::string_view::npos)
      return makeError(ErrorCode::InvalidArgument, "kernel '{}': --shape entry '{}' is not NAME=SIZE", kernel.name, piece);
    std::string name(trim(piece.substr(0, eq)));
    std::string value(trim(piece.substr(eq + 1)));
    if (std::find(kernel.dimNames.begin(), kernel.dimNames.end(), name) == kernel.dimNames.end())
      return makeError(ErrorCode::InvalidArgument, "kernel '{}': unknown dim '{}' in --shape; its dims are {}",
                       kernel.name, name, dimList);
    if (params.dims.count(name))
      return makeError(ErrorCode::InvalidArgument, "kernel '{}': dim '{}' given twice in --shape", kernel.name, name);
    char *end = nullptr;
    errno = 0;
    long long size = value.empty() ? 0 : std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || errno != 0 || size <= 0)
      return makeError(ErrorCode::InvalidArgument, "kernel '{}': dim {}={} is not a positive integer", kernel.name,
                       name, value);
    params.dims[name] = size;
  }
  for (const std::string &name : kernel.dimNames) {
    if (params.dims.count(name)) continue;
    auto fallback = kernel.defaultDims.find(name);
    if (fallback == kernel.defaultDims.end())
      return makeError(ErrorCode::InvalidArgument, "kernel '{}': missing dim '{}' in --shape (its dims are {})",
                       kernel.name, name, dimList);
    params.dims[name] = fallback->second;
  }
  TESSEL_CHECK(!kernel.dtypes.empty(), "kernel '{}' accepts no dtype", kernel.name);
  params.dtype = kernel.dtypes.front();
  if (!dtypeText.empty()) {
    std::optional<DType> dtype = parseDType(dtypeText);
    if (!dtype || std::find(kernel.dtypes.begin(), kernel.dtypes.end(), *dtype) == kernel.dtypes.end())
      return makeError(ErrorCode::InvalidArgument, "kernel '{}': dtype '{}' is not accepted; use one of {}",
                       kernel.name, dtypeText, acceptedDtypes(kernel));
    params.dtype = *dtype;
  }
  for (const std::string &option : optionTexts) {
    size_t eq = option.find('=');
    if (eq == std::string::npos || eq == 0)
      return makeError(ErrorCode::InvalidArgument, "kernel '{}': --option '{}' is not KEY=VALUE", kernel.name, option);
    params.options[option.substr(0, eq)] = option.substr(eq + 1);
  }
  if (!kernel.variants.empty()) params.variant = kernel.variants.front();
  if (!variantText.empty()) {
    if (std::find(kernel.variants.begin(), kernel.variants.end(), variantText) == kernel.variants.end()) {
      if (kernel.variants.empty())
        return makeError(ErrorCode::InvalidArgument, "kernel '{}' has no variants; got --variant {}", kernel.name,
                         variantText);
      return makeError(ErrorCode::InvalidArgument, "kernel '{}': unknown variant '{}'; use one of {}", kernel.name,
                       variantText, fmt::join(kernel.variants, ", "));
    }
    params.variant = std::string(variantText);
  }
  return params;
}

std::string formatDims(const KernelDef &kernel, const KernelParams &params) {
  std::vector<std::string> pieces;
  for (const std::string &name : kernel.dimNames) {
    auto it = params.dims.find(name);
    pieces.push_back(fmt::format("{}={}", name, it == params.dims.end() ? 0 : it->second));
  }
  return fmt::format("{}", fmt::join(pieces, ","));
}

}  // namespace tessel::nc::kernels
