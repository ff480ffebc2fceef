// Small writers for the JSON the profiler streams out (the Perfetto trace and the data blob of the
// HTML report). Both can hold hundreds of thousands of events, so they are written as text rather
// than built as a JSON tree first; numbers are printed as exact decimals of a fixed resolution so
// that the files do not carry binary floating-point noise.
#pragma once

#include <string>
#include <string_view>

namespace tessel::nc {

/// `text` as a JSON string literal, quotes included. Control characters are escaped; other bytes
/// are copied (the profiler's strings are ASCII).
std::string jsonQuote(std::string_view text);

/// `value` rounded to `decimals` places (0..9), printed without trailing zeros or a trailing point:
/// decimalText(1.5, 3) is "1.5", decimalText(2, 3) is "2", decimalText(-0.0004, 3) is "0".
std::string decimalText(double value, int decimals);

}  // namespace tessel::nc
