// JSON string quoting and fixed-resolution decimals for the profiler's streamed JSON.
#include "targets/nc/profile/json_text.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>

#include <fmt/format.h>

namespace tessel::nc {

std::string jsonQuote(std::string_view text) {
  std::string quoted;
  quoted.reserve(text.size() + 2);
  quoted += '"';
  for (char c : text) {
    switch (c) {
      case '"': quoted += "\\\""; break;
      case '\\': quoted += "\\\\"; break;
      case '\n': quoted += "\\n"; break;
      case '\r': quoted += "\\r"; break;
      case '\t': quoted += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) quoted += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
        else quoted += c;
    }
  }
  quoted += '"';
  return quoted;
}

std::string decimalText(double value, int decimals) {
  if (!std::isfinite(value)) return "0";
  int64_t scale = 1;
  for (int i = 0; i < decimals; ++i) scale *= 10;
  int64_t scaled = std::llround(value * static_cast<double>(scale));
  if (scaled == 0) return "0";
  bool negative = scaled < 0;
  uint64_t magnitude = negative ? static_cast<uint64_t>(-scaled) : static_cast<uint64_t>(scaled);
  std::string text = fmt::format("{}{}", negative ? "-" : "", magnitude / static_cast<uint64_t>(scale));
  uint64_t fraction = magnitude % static_cast<uint64_t>(scale);
  if (fraction != 0) {
    std::string digits = fmt::format("{:0{}}", fraction, decimals);
    while (digits.back() == '0') digits.pop_back();
    text += '.' + digits;
  }
  return text;
}

}  // namespace tessel::nc
