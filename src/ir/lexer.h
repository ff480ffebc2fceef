// Lexical rules of the text IR: the tokens the parser reads, and the predicates the printer uses to
// decide when a name must be quoted so that the lexer reads it back unchanged. `#` starts a comment
// that runs to the end of the line (pass tests keep their RUN and CHECK lines there).
#pragma once

#include <string>
#include <string_view>

namespace tessel::text {

enum class TokenKind {
  Eof,
  Error,      // text holds the message.
  Ident,      // foo, ai.onnx.ml.LabelEncoder (dots allowed between identifier parts).
  ValueName,  // %x, %0, %input.1, %"onnx::Conv_12"; text holds the name without % or quotes.
  GraphName,  // @main, @"then branch"; text holds the name without @ or quotes.
  String,     // "..." with escapes resolved.
  Integer,    // 12, -3, 0x7fc00001 (text as written).
  Float,      // 1.5, -2e-08 (text as written).
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Less,
  Greater,
  Comma,
  Colon,
  Equal,
  Question,
  Star,
  Minus,  // Only before inf or nan; a minus before a digit is part of the number.
  Arrow,
  Ellipsis,
};

/// A printable name for a token kind, used in "expected X, got Y" messages.
const char *tokenKindName(TokenKind kind);

struct Token {
  TokenKind kind = TokenKind::Eof;
  std::string text;
  int line = 1;
  int col = 1;
};

/// Splits text into tokens on demand. Lines and columns are 1-based; columns count bytes.
class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}
  /// The next token; Eof at the end (and forever after), Error for malformed input.
  Token next();

 private:
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  void advance();
  void skipSpaceAndComments();
  Token lexNumber(Token token);
  Token lexIdentifier(Token token);
  /// Reads a quoted string starting at the opening quote into token.text (escapes resolved).
  Token lexString(Token token);
  /// Reads the name after % or @: bare [A-Za-z0-9_.]+ or a quoted string.
  Token lexSigilName(Token token, TokenKind kind);

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
};

/// [A-Za-z_][A-Za-z0-9_]*: attribute names, dim symbols, op types print bare when this holds.
bool isIdentifier(std::string_view name);
/// Identifiers joined by single dots: op domains and opset domains print bare when this holds.
bool isDottedIdentifier(std::string_view name);
/// [A-Za-z0-9_.]+: value and graph names print bare after % or @ when this holds.
bool isBareName(std::string_view name);
/// The string in double quotes with \" \\ \n \t \r and \xNN escapes for other control bytes.
std::string quoteString(std::string_view value);

}  // namespace tessel::text
