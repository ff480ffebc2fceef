// Reading a kernel's --option values as numbers or 0/1 flags, with errors that name the option and the text.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "support/diagnostic.h"
#include "targets/nc/kernels/kernel_def.h"

namespace tessel::nc::kernels {

/// Option `name` as a positive integer, or `fallback` when it is not given.
inline Expected<int64_t> positiveIntOption(const KernelParams &params, const std::string &name, int64_t fallback) {
  std::string text = params.option(name);
  if (text.empty()) return fallback;
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0' || errno != 0 || value <= 0)
    return makeError(ErrorCode::InvalidArgument, "option {}={} is not a positive integer", name, text);
  return static_cast<int64_t>(value);
}

/// Option `name` as a finite number, or `fallback` when it is not given.
inline Expected<double> floatOption(const KernelParams &params, const std::string &name, double fallback) {
  std::string text = params.option(name);
  if (text.empty()) return fallback;
  char *end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (*end != '\0' || errno != 0 || !std::isfinite(value))
    return makeError(ErrorCode::InvalidArgument, "option {}={} is not a number", name, text);
  return value;
}

/// Option `name` as a 0/1 flag, or `fallback` when it is not given.
inline Expected<bool> flagOption(const KernelParams &params, const std::string &name, bool fallback) {
  const std::string text = params.option(name);
  if (text.empty()) return fallback;
  if (text == "0" || text == "1") return text == "1";
  return makeError(ErrorCode::InvalidArgument, "option {}={} is not 0 or 1", name, text);
}

}  // namespace tessel::nc::kernels
