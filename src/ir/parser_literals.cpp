// Token stream, error reporting and literal parsing for the text IR (types, scalars, tensors).
// Floats are read straight into their own width (never through double), so the shortest decimal
// the printer wrote gives back the same bits.
#include "ir/parser_literals.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <limits>

namespace tessel::text {

namespace {

/// Parses an integer token's text ("12", "-3", "0x1f") into T; false when it does not fit.
template <class T>
bool integerFromText(const std::string &text, T &out) {
  std::string_view digits = text;
  bool negative = !digits.empty() && digits[0] == '-';
  if (negative) digits.remove_prefix(1);
  int base = 10;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    digits.remove_prefix(2);
    base = 16;
  }
  uint64_t magnitude = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude, base);
  if (ec != std::errc() || end != digits.data() + digits.size()) return false;
  if (negative) {
    if (!std::is_signed_v<T> || magnitude > static_cast<uint64_t>(std::numeric_limits<T>::max()) + 1) return false;
    out = static_cast<T>(-static_cast<int64_t>(magnitude - 1) - 1);
    return true;
  }
  if (magnitude > static_cast<uint64_t>(std::numeric_limits<T>::max())) return false;
  out = static_cast<T>(magnitude);
  return true;
}

template <class T>
T floatFromBits(uint64_t bits) {
  if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<float>(static_cast<uint32_t>(bits));
  } else if constexpr (std::is_same_v<T, double>) {
    return std::bit_cast<double>(bits);
  } else {
    return T::fromBits(static_cast<decltype(T{}.bits)>(bits));
  }
}

template <class T>
constexpr int floatWidthBits() {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return static_cast<int>(sizeof(T) * 8);
  } else {
    return static_cast<int>(sizeof(T{}.bits) * 8);
  }
}

template <class T>
T fromFloatOrDouble(std::conditional_t<std::is_same_v<T, double>, double, float> value) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return value;
  } else if constexpr (std::is_constructible_v<T, float, bool>) {
    return T(value, /*saturate=*/false);  // fp8: inf stays inf (e5m2) rather than clamping.
  } else {
    return T(value);
  }
}

template <class T>
constexpr bool isComplex = std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

}  // namespace

std::string describeToken(const Token &token) {
  switch (token.kind) {
    case TokenKind::Eof: return "end of file";
    case TokenKind::ValueName: return "'%" + token.text + "'";
    case TokenKind::GraphName: return "'@" + token.text + "'";
    case TokenKind::String: return "string " + quoteString(token.text);
    default: return "'" + token.text + "'";
  }
}

LiteralParser::LiteralParser(std::string_view text, std::string fileName)
    : lexer_(text), fileName_(std::move(fileName)), textSize_(text.size()) {
  token_ = lexer_.next();
}

Token LiteralParser::take() {
  Token current = std::move(token_);
  token_ = lexer_.next();
  return current;
}

Diagnostic LiteralParser::errorAt(const Token &token, std::string message) const {
  Diagnostic diag{ErrorCode::ParseError, std::move(message), {}};
  if (token.kind == TokenKind::Error) diag.message = token.text;
  diag.loc.file = fmt::format("{}:{}:{}", fileName_, token.line, token.col);
  return diag;
}

Diagnostic LiteralParser::unexpected(std::string_view what, std::string_view context) const {
  return errorAt(
      token_, fmt::format("expected {}{}{}, got {}", what, context.empty() ? "" : " ", context, describeToken(token_)));
}

Expected<Token> LiteralParser::expect(TokenKind kind, std::string_view context) {
  if (!at(kind)) return unexpected(tokenKindName(kind), context);
  return take();
}

Status LiteralParser::expectWord(std::string_view word, std::string_view context) {
  if (!atWord(word)) return unexpected(fmt::format("'{}'", word), context);
  take();
  return Status::success();
}

Expected<int64_t> LiteralParser::parseInt(std::string_view context) {
  if (!at(TokenKind::Integer)) return unexpected("an integer", context);
  int64_t value = 0;
  if (!integerFromText(token_.text, value))
    return errorAt(token_, fmt::format("integer {} does not fit in 64 bits", token_.text));
  take();
  return value;
}

Expected<std::string> LiteralParser::parseString(std::string_view context) {
  TESSEL_ASSIGN_OR_RETURN(Token token, expect(TokenKind::String, context));
  return std::move(token.text);
}

Expected<float> LiteralParser::parseFloat(std::string_view context) {
  float value = 0;
  TESSEL_RETURN_IF_ERROR(parseFloating(value, context));
  return value;
}

template <class T>
Status LiteralParser::parseFloating(T &out, std::string_view context) {
  using Wide = std::conditional_t<std::is_same_v<T, double>, double, float>;
  Token start = token_;
  bool negative = false;
  if (at(TokenKind::Minus)) {
    take();
    negative = true;
    if (!atWord("inf") && !atWord("nan")) return unexpected("'inf' or 'nan' after '-'", context);
  }
  if (atWord("inf")) {
    take();
    out =
        fromFloatOrDouble<T>(negative ? -std::numeric_limits<Wide>::infinity() : std::numeric_limits<Wide>::infinity());
    return Status::success();
  }
  if (atWord("nan")) {
    take();
    Wide nan = std::numeric_limits<Wide>::quiet_NaN();
    out = fromFloatOrDouble<T>(negative ? -nan : nan);
    if (negative || !at(TokenKind::LParen)) return Status::success();
    take();
    Token bitsToken = token_;
    uint64_t bits = 0;
    if (!at(TokenKind::Integer) || !integerFromText(token_.text, bits) ||
        (floatWidthBits<T>() < 64 && bits >> (floatWidthBits<T>() % 64) != 0)) {
      return unexpected(fmt::format("the {}-bit pattern of a NaN", floatWidthBits<T>()), context);
    }
    take();
    out = floatFromBits<T>(bits);
    Wide check = static_cast<Wide>(out);
    if (!std::isnan(check)) return errorAt(bitsToken, fmt::format("nan({}) is not a NaN bit pattern", bitsToken.text));
    TESSEL_ASSIGN_OR_RETURN(Token closing, expect(TokenKind::RParen, "after the NaN bits"));
    (void)closing;
    return Status::success();
  }
  bool hex = token_.text.size() > 2 && (token_.text[1] == 'x' || token_.text[2] == 'x');
  if (!(at(TokenKind::Float) || at(TokenKind::Integer)) || hex) return unexpected("a floating-point number", context);
  Wide value = 0;
  const std::string &text = token_.text;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return errorAt(start, fmt::format("{} is out of range for {}", text, std::is_same_v<T, double> ? "f64" : "f32"));
  }
  take();
  out = fromFloatOrDouble<T>(value);
  return Status::success();
}

template <class T>
Status LiteralParser::parseInteger(T &out) {
  if (!at(TokenKind::Integer)) return unexpected("an integer", "in the tensor");
  if (!integerFromText(token_.text, out)) {
    return errorAt(token_, fmt::format("{} is out of range for {}", token_.text, dtypeName(dtypeOf<T>())));
  }
  take();
  return Status::success();
}

template <class T>
Status LiteralParser::parseElement(T &out) {
  if constexpr (std::is_same_v<T, std::string>) {
    TESSEL_ASSIGN_OR_RETURN(out, parseString("in the string tensor"));
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!atWord("true") && !atWord("false")) return unexpected("'true' or 'false'", "in the bool tensor");
    out = take().text == "true";
  } else if constexpr (std::is_integral_v<T>) {
    TESSEL_RETURN_IF_ERROR(parseInteger(out));
  } else if constexpr (isComplex<T>) {
    typename T::value_type real = 0, imag = 0;
    TESSEL_RETURN_IF_ERROR(expect(TokenKind::LParen, "to open a complex element").status());
    TESSEL_RETURN_IF_ERROR(parseFloating(real, "as the real part"));
    TESSEL_RETURN_IF_ERROR(expect(TokenKind::Comma, "between the real and imaginary parts").status());
    TESSEL_RETURN_IF_ERROR(parseFloating(imag, "as the imaginary part"));
    TESSEL_RETURN_IF_ERROR(expect(TokenKind::RParen, "to close a complex element").status());
    out = T(real, imag);
  } else {
    TESSEL_RETURN_IF_ERROR(parseFloating(out, "in the tensor"));
  }
  return Status::success();
}

Status LiteralParser::parseRawBits(uint8_t *out, size_t widthBytes) {
  uint64_t bits = 0;
  if (!at(TokenKind::Integer) || !integerFromText(token_.text, bits) || (widthBytes < 8 && bits >> (8 * widthBytes))) {
    return unexpected(fmt::format("a {}-byte bit pattern", widthBytes), "in the tensor");
  }
  take();
  for (size_t b = 0; b < widthBytes; ++b) out[b] = static_cast<uint8_t>(bits >> (8 * b));
  return Status::success();
}

Expected<Shape> LiteralParser::parseShape() {
  TESSEL_RETURN_IF_ERROR(expect(TokenKind::LBracket, "to open the shape").status());
  if (at(TokenKind::Star)) {
    take();
    TESSEL_RETURN_IF_ERROR(expect(TokenKind::RBracket, "after '*' (a shape of unknown rank)").status());
    return Shape();
  }
  std::vector<Dim> dims;
  while (!at(TokenKind::RBracket)) {
    if (!dims.empty()) TESSEL_RETURN_IF_ERROR(expect(TokenKind::Comma, "between dimensions").status());
    if (at(TokenKind::Integer)) {
      Token sizeToken = token_;
      TESSEL_ASSIGN_OR_RETURN(int64_t size, parseInt("as a dimension"));
      if (size < 0) return errorAt(sizeToken, fmt::format("dimension {} is negative", size));
      dims.emplace_back(size);
    } else if (at(TokenKind::Question)) {
      take();
      dims.emplace_back();
    } else if (at(TokenKind::Ident) || at(TokenKind::String)) {
      dims.push_back(Dim::symbolic(take().text));
    } else {
      return unexpected("a dimension (size, symbol or '?')", "in the shape");
    }
  }
  take();
  return Shape(std::move(dims));
}

Expected<Type> LiteralParser::parseType() {
  if (at(TokenKind::Question)) {
    take();
    return Type();
  }
  if (!at(TokenKind::Ident)) return unexpected("a type", "");
  Token name = take();
  if (name.text == "seq" || name.text == "opt") {
    TESSEL_RETURN_IF_ERROR(expect(TokenKind::Less, fmt::format("after '{}'", name.text)).status());
    TESSEL_ASSIGN_OR_RETURN(Type element, parseType());
    TESSEL_RETURN_IF_ERROR(expect(TokenKind::Greater, fmt::format("to close '{}<'", name.text)).status());
    return name.text == "seq" ? Type::sequence(std::move(element)) : Type::optional(std::move(element));
  }
  std::optional<DType> dtype = parseDType(name.text);
  if (!dtype) return errorAt(name, fmt::format("unknown element type '{}'", name.text));
  TESSEL_ASSIGN_OR_RETURN(Shape shape, parseShape());
  return Type::tensor(*dtype, std::move(shape));
}

Expected<Tensor> LiteralParser::parseTensor() {
  TESSEL_RETURN_IF_ERROR(expectWord("dense", "to start a tensor"));
  TESSEL_RETURN_IF_ERROR(expect(TokenKind::Less, "after 'dense'").status());
  Token typeToken = token_;
  TESSEL_ASSIGN_OR_RETURN(Type type, parseType());
  if (!type.isTensor() || !type.shape().isStatic()) {
    return errorAt(typeToken,
                   fmt::format("a tensor literal needs an element type and static sizes, got {}", type.str()));
  }
  if (at(TokenKind::Ellipsis)) {
    return errorAt(token_,
                   "this tensor was printed elided ('...'); print with elideLargeTensors=false "
                   "(tessel opt without --elide-large-tensors) to get text that parses");
  }
  std::vector<int64_t> sizes = *type.shape().sizes();
  if (type.dtype() == DType::Undefined) {
    TESSEL_RETURN_IF_ERROR(expect(TokenKind::Greater, "to close the tensor").status());
    return Tensor();
  }
  // Every element takes at least two bytes of text, which bounds what a bad size can allocate.
  auto bytes = checkedNumBytes(type.dtype(), sizes, /*limitBytes=*/size_t{1} << 40);
  if (!bytes.ok() || static_cast<size_t>(numElements(sizes)) > textSize_) {
    return errorAt(typeToken, fmt::format("tensor of {} {} is larger than the text that could hold it",
                                          dtypeName(type.dtype()), formatSizes(sizes)));
  }
  Tensor tensor(type.dtype(), sizes);
  int64_t count = tensor.numel();
  if (count > 0) TESSEL_RETURN_IF_ERROR(expect(TokenKind::Colon, "before the tensor elements").status());
  Status status;
  for (int64_t i = 0; i < count && status.ok(); ++i) {
    if (i > 0) {
      if (!at(TokenKind::Comma)) {
        return errorAt(token_, fmt::format("tensor {} has {} elements; got {} before {}", type.str(), count, i,
                                           describeToken(token_)));
      }
      take();
    }
    bool handled = visitDType(type.dtype(), [&]<class T>(TypeTag<T>) { status = parseElement(tensor.data<T>()[i]); });
    if (!handled) {
      size_t width = dtypeSize(type.dtype());
      status = parseRawBits(static_cast<uint8_t *>(tensor.rawData()) + i * width, width);
    }
  }
  TESSEL_RETURN_IF_ERROR(status);
  if (at(TokenKind::Comma)) {
    return errorAt(token_, fmt::format("tensor {} has {} elements; got more", type.str(), count));
  }
  TESSEL_RETURN_IF_ERROR(expect(TokenKind::Greater, "to close the tensor").status());
  return tensor;
}

}  // namespace tessel::text
