// The lower half of the text IR parser (parser.h): a token stream with one token of lookahead,
// error reporting at "file:line:col", and the literals that carry no names: integers, strings,
// floats, types and tensor literals. parser.cpp builds graphs on top of it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ir/lexer.h"
#include "ir/tensor.h"
#include "ir/type.h"
#include "support/diagnostic.h"

namespace tessel::text {

class LiteralParser {
 public:
  LiteralParser(std::string_view text, std::string fileName);

  /// The current (not yet consumed) token.
  const Token &peek() const { return token_; }
  /// Consumes and returns the current token.
  Token take();
  bool at(TokenKind kind) const { return token_.kind == kind; }
  /// True when the current token is the identifier `word`.
  bool atWord(std::string_view word) const { return token_.kind == TokenKind::Ident && token_.text == word; }
  /// Consumes a token of `kind`, or fails with "expected <kind> <context>, got <token>".
  Expected<Token> expect(TokenKind kind, std::string_view context);
  /// Consumes the identifier `word`, or fails like expect().
  Status expectWord(std::string_view word, std::string_view context);
  /// A ParseError at `token`'s position. Lexer errors report their own message.
  Diagnostic errorAt(const Token &token, std::string message) const;
  /// "expected <what> <context>, got <current token>" at the current token.
  Diagnostic unexpected(std::string_view what, std::string_view context) const;

  /// An integer that fits int64 (decimal or 0x hex).
  Expected<int64_t> parseInt(std::string_view context);
  Expected<std::string> parseString(std::string_view context);
  /// A float in any of the forms the printer writes: 1.5, -2, inf, -nan, nan(0x7fc00001).
  Expected<float> parseFloat(std::string_view context);
  Expected<Type> parseType();
  /// `dense<dtype[sizes]: elements>`.
  Expected<Tensor> parseTensor();

 private:
  Expected<Shape> parseShape();
  template <class T>
  Status parseElement(T &out);
  template <class T>
  Status parseFloating(T &out, std::string_view context);
  template <class T>
  Status parseInteger(T &out);
  Status parseRawBits(uint8_t *out, size_t widthBytes);

  Lexer lexer_;
  std::string fileName_;
  size_t textSize_;
  Token token_;
};

/// A short description of a token for messages: "'foo'", "'%x'", "end of file".
std::string describeToken(const Token &token);

}  // namespace tessel::text
