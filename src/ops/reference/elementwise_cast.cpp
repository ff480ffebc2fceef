// Reference kernels of Cast and CastLike: every pair among the numeric types, bool, the narrow
// floats (f16, bf16, fp8 with the `saturate` attribute) and string. Numbers convert with one
// rounding; float -> int truncates; strings parse like Python's float()/int() and floats print
// like numpy's str() (shortest round-trip digits, scientific outside [1e-4, 1e16)).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>

#include "ops/reference/elementwise_common.h"

namespace tessel::ref {

using namespace elementwise;

namespace {

/// A float converted to an integer type: truncated toward zero; NaN gives 0. Values in int64
/// range then wrap into narrower types (as numpy on x86 does); others saturate.
template <class To>
To floatToInt(double value) {
  if constexpr (sizeof(To) < 8) {
    if (!std::isnan(value) && value > -9.2e18 && value < 9.2e18) {
      return static_cast<To>(static_cast<int64_t>(value));
    }
  }
  return roundFromDouble<To>(value);
}

/// One number converted from From to To.
template <class To, class From>
To convertNumber(From x, bool saturate) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<To, bool>) {
    return widen(x) != 0;
  } else if constexpr (std::is_same_v<From, bool>) {
    return roundFromDouble<To>(x ? 1.0 : 0.0);
  } else if constexpr (kIsInt<To>) {
    if constexpr (kIsInt<From>) {
      return static_cast<To>(x);  // Two's-complement wrap, as numpy's astype.
    } else {
      return floatToInt<To>(toDouble(x));
    }
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(widen(x));  // Exact or correctly rounded from int, float or double.
  } else if constexpr (std::is_same_v<To, Float8E4M3FN> || std::is_same_v<To, Float8E5M2>) {
    return To(roundToOddFloat(toDouble(x)), saturate);
  } else {
    return To(roundToOddFloat(toDouble(x)));
  }
}

/// True when `text` (as read back) denotes exactly `value` in T.
template <class T>
bool readsBackAs(const char *text, T value) {
  if constexpr (std::is_same_v<T, float>) {
    return std::strtof(text, nullptr) == value;
  } else if constexpr (std::is_same_v<T, double>) {
    return std::strtod(text, nullptr) == value;
  } else {
    return roundFromDouble<T>(std::strtod(text, nullptr)).bits == value.bits;
  }
}

/// A float printed as numpy's str() does: "0.1", "1.0", "1e-05", "1.5e+16", "nan", "-inf".
template <class T>
std::string formatFloat(T value) {
  const double v = toDouble(value);
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // Shortest scientific form that reads back to the same value: "-d.ddde+XX".
  char text[48];
  for (int precision = 0; precision <= 17; ++precision) {
    std::snprintf(text, sizeof text, "%.*e", precision, v);
    if (readsBackAs(text, value)) break;
  }
  std::string s(text);
  const size_t e = s.find('e');
  const int exponent = std::atoi(s.c_str() + e + 1);
  std::string sign = s[0] == '-' ? "-" : "";
  std::string digits;
  for (char c : s.substr(0, e)) {
    if (std::isdigit(static_cast<unsigned char>(c))) digits += c;
  }
  const double magnitude = std::fabs(v);
  if (magnitude != 0.0 && (magnitude < 1e-4 || magnitude >= 1e16)) {
    std::string mantissa = digits.substr(0, 1) + (digits.size() > 1 ? "." + digits.substr(1) : "");
    return sign + mantissa + (exponent < 0 ? "e-" : "e+") + (std::abs(exponent) < 10 ? "0" : "") +
           std::to_string(std::abs(exponent));
  }
  if (exponent < 0) return sign + "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  const size_t intDigits = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= intDigits) return sign + digits + std::string(intDigits - digits.size(), '0') + ".0";
  return sign + digits.substr(0, intDigits) + "." + digits.substr(intDigits);
}

template <class From>
std::string formatNumber(From x) {
  if constexpr (std::is_same_v<From, bool>) {
    return x ? "True" : "False";
  } else if constexpr (kIsInt<From>) {
    return std::to_string(x);
  } else {
    return formatFloat(x);
  }
}

/// A string parsed as To: integers as decimal integers (or floats, truncated), floats as
/// Python's float() reads them ("1.5", "NaN", "-INF"), bool also from "True"/"False".
template <class To>
Expected<To> parseNumber(const std::string &text, bool saturate) {
  const size_t first = text.find_first_not_of(" \t\n\r");
  const size_t last = text.find_last_not_of(" \t\n\r");
  const std::string s = first == std::string::npos ? "" : text.substr(first, last - first + 1);
  if constexpr (std::is_same_v<To, bool>) {
    if (s == "True" || s == "true") return true;
    if (s == "False" || s == "false") return false;
  }
  if constexpr (kIsInt<To>) {
    using Wide = std::conditional_t<std::is_signed_v<To>, int64_t, uint64_t>;
    Wide wide = 0;
    const char *begin = s.data() + (s.starts_with('+') ? 1 : 0);
    auto [end, error] = std::from_chars(begin, s.data() + s.size(), wide);
    if (error == std::errc() && end == s.data() + s.size() && begin != end) return static_cast<To>(wide);
  }
  char *end = nullptr;
  const double value = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) {
    return makeError(ErrorCode::InvalidArgument, "Cast cannot read \"{}\" as {}", text, dtypeName(dtypeOf<To>()));
  }
  return convertNumber<To>(value, saturate);
}

template <class From, class To>
Expected<Tensor> castElements(const Tensor &input, bool saturate) {
  Tensor out(dtypeOf<To>(), input.sizes());
  const From *in = input.data<From>();
  To *o = out.data<To>();
  for (int64_t i = 0; i < input.numel(); ++i) {
    if constexpr (std::is_same_v<From, To>) {
      o[i] = in[i];
    } else if constexpr (std::is_same_v<From, std::string>) {
      TESSEL_ASSIGN_OR_RETURN(o[i], parseNumber<To>(in[i], saturate));
    } else if constexpr (std::is_same_v<To, std::string>) {
      o[i] = formatNumber(in[i]);
    } else {
      o[i] = convertNumber<To>(in[i], saturate);
    }
  }
  return out;
}

/// The target type of Cast: the `to` attribute, an enum value (opset >= 6) or a name (opset 1).
Expected<DType> castTarget(const KernelContext &ctx) {
  const Attribute *to = ctx.node().findAttr("to");
  if (to != nullptr && to->is<int64_t>()) {
    const int64_t raw = to->get<int64_t>();
    if (!isValidDType(raw)) return makeError(ErrorCode::InvalidArgument, "Cast 'to' is {}, not a known data type", raw);
    return static_cast<DType>(raw);
  }
  if (to != nullptr && to->is<std::string>()) {
    std::string name = to->get<std::string>();
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    if (std::optional<DType> dtype = parseDType(name)) return *dtype;
    return makeError(ErrorCode::InvalidArgument, "Cast 'to' is \"{}\", not a known data type", to->get<std::string>());
  }
  return makeError(ErrorCode::InvalidArgument, "Cast needs an integer attribute 'to'");
}

}  // namespace

namespace elementwise {

Expected<Tensor> castTensor(const Tensor &input, DType to, bool saturate) {
  if (input.dtype() == to) return input.clone();
  Expected<Tensor> result =
      makeError(ErrorCode::TypeMismatch, "Cast from {} to {} is not supported", dtypeName(input.dtype()), dtypeName(to));
  visitDType(input.dtype(), [&]<class From>(TypeTag<From>) {
    visitDType(to, [&]<class To>(TypeTag<To>) {
      constexpr unsigned kCastable = kAnyType & ~kComplex;
      if constexpr ((typeSetOf<From>() & kCastable) && (typeSetOf<To>() & kCastable)) {
        result = castElements<From, To>(input, saturate);
      }
    });
  });
  return result;
}

}  // namespace elementwise

Status refCast(KernelContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(DType to, castTarget(ctx));
  return setResult(ctx, castTensor(ctx.tensor(0), to, ctx.node().attrInt("saturate", 1) != 0));
}

Status refCastLike(KernelContext &ctx) {
  return setResult(ctx, castTensor(ctx.tensor(0), ctx.tensor(1).dtype(), ctx.node().attrInt("saturate", 1) != 0));
}

}  // namespace tessel::ref
