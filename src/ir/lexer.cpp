// Tokenizer of the text IR. Every malformed input becomes an Error token carrying a message; the
// parser adds the file, line and column.
#include "ir/lexer.h"

#include <fmt/format.h>

namespace tessel::text {

namespace {

bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c); }
bool isBareNameChar(char c) { return isIdentChar(c) || c == '.'; }
bool isHexDigit(char c) { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

int hexValue(char c) {
  if (isDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

}  // namespace

const char *tokenKindName(TokenKind kind) {
  switch (kind) {
    case TokenKind::Eof: return "end of file";
    case TokenKind::Error: return "invalid token";
    case TokenKind::Ident: return "identifier";
    case TokenKind::ValueName: return "value name";
    case TokenKind::GraphName: return "graph name";
    case TokenKind::String: return "string";
    case TokenKind::Integer: return "integer";
    case TokenKind::Float: return "float";
    case TokenKind::LParen: return "'('";
    case TokenKind::RParen: return "')'";
    case TokenKind::LBracket: return "'['";
    case TokenKind::RBracket: return "']'";
    case TokenKind::LBrace: return "'{'";
    case TokenKind::RBrace: return "'}'";
    case TokenKind::Less: return "'<'";
    case TokenKind::Greater: return "'>'";
    case TokenKind::Comma: return "','";
    case TokenKind::Colon: return "':'";
    case TokenKind::Equal: return "'='";
    case TokenKind::Question: return "'?'";
    case TokenKind::Star: return "'*'";
    case TokenKind::Minus: return "'-'";
    case TokenKind::Arrow: return "'->'";
    case TokenKind::Ellipsis: return "'...'";
  }
  return "token";
}

void Lexer::advance() {
  if (pos_ >= text_.size()) return;
  if (text_[pos_] == '\n') {
    ++line_;
    col_ = 1;
  } else {
    ++col_;
  }
  ++pos_;
}

void Lexer::skipSpaceAndComments() {
  while (pos_ < text_.size()) {
    char c = peek();
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      advance();
    } else if (c == '#') {
      while (pos_ < text_.size() && peek() != '\n') advance();
    } else {
      return;
    }
  }
}

Token Lexer::next() {
  skipSpaceAndComments();
  Token token;
  token.line = line_;
  token.col = col_;
  if (pos_ >= text_.size()) return token;
  char c = peek();
  auto single = [&](TokenKind kind) {
    advance();
    token.kind = kind;
    token.text = std::string(1, c);
    return token;
  };
  switch (c) {
    case '(': return single(TokenKind::LParen);
    case ')': return single(TokenKind::RParen);
    case '[': return single(TokenKind::LBracket);
    case ']': return single(TokenKind::RBracket);
    case '{': return single(TokenKind::LBrace);
    case '}': return single(TokenKind::RBrace);
    case '<': return single(TokenKind::Less);
    case '>': return single(TokenKind::Greater);
    case ',': return single(TokenKind::Comma);
    case ':': return single(TokenKind::Colon);
    case '=': return single(TokenKind::Equal);
    case '?': return single(TokenKind::Question);
    case '*': return single(TokenKind::Star);
    case '"': return lexString(token);
    case '%': return lexSigilName(token, TokenKind::ValueName);
    case '@': return lexSigilName(token, TokenKind::GraphName);
    default: break;
  }
  if (c == '-' && peek(1) == '>') {
    advance();
    advance();
    token.kind = TokenKind::Arrow;
    token.text = "->";
    return token;
  }
  if (c == '.' && peek(1) == '.' && peek(2) == '.') {
    for (int i = 0; i < 3; ++i) advance();
    token.kind = TokenKind::Ellipsis;
    token.text = "...";
    return token;
  }
  if (isDigit(c) || (c == '-' && isDigit(peek(1)))) return lexNumber(token);
  if (c == '-') return single(TokenKind::Minus);
  if (isIdentStart(c)) return lexIdentifier(token);
  advance();
  token.kind = TokenKind::Error;
  token.text = (c >= 0x20 && c < 0x7f) ? fmt::format("unexpected character '{}'", c)
                                       : fmt::format("unexpected byte 0x{:02x}", static_cast<unsigned char>(c));
  return token;
}

Token Lexer::lexNumber(Token token) {
  size_t start = pos_;
  if (peek() == '-') advance();
  token.kind = TokenKind::Integer;
  if (peek() == '0' && (peek(1) == 'x' || peek(1) == 'X')) {
    advance();
    advance();
    if (!isHexDigit(peek())) {
      token.kind = TokenKind::Error;
      token.text = "expected hex digits after '0x'";
      return token;
    }
    while (isHexDigit(peek())) advance();
  } else {
    while (isDigit(peek())) advance();
    if (peek() == '.' && isDigit(peek(1))) {
      token.kind = TokenKind::Float;
      advance();
      while (isDigit(peek())) advance();
    }
    if ((peek() == 'e' || peek() == 'E') &&
        (isDigit(peek(1)) || ((peek(1) == '+' || peek(1) == '-') && isDigit(peek(2))))) {
      token.kind = TokenKind::Float;
      advance();
      if (peek() == '+' || peek() == '-') advance();
      while (isDigit(peek())) advance();
    }
  }
  if (isIdentChar(peek())) {
    token.kind = TokenKind::Error;
    token.text = fmt::format("malformed number '{}{}'", text_.substr(start, pos_ - start), peek());
    return token;
  }
  token.text = std::string(text_.substr(start, pos_ - start));
  return token;
}

Token Lexer::lexIdentifier(Token token) {
  size_t start = pos_;
  while (isIdentChar(peek())) advance();
  while (peek() == '.' && isIdentStart(peek(1))) {
    advance();
    while (isIdentChar(peek())) advance();
  }
  token.kind = TokenKind::Ident;
  token.text = std::string(text_.substr(start, pos_ - start));
  return token;
}

Token Lexer::lexString(Token token) {
  advance();  // The opening quote.
  std::string value;
  while (true) {
    if (pos_ >= text_.size() || peek() == '\n') {
      token.kind = TokenKind::Error;
      token.text = "unterminated string";
      return token;
    }
    char c = peek();
    advance();
    if (c == '"') break;
    if (c != '\\') {
      value += c;
      continue;
    }
    char escape = peek();
    advance();
    switch (escape) {
      case '"': value += '"'; break;
      case '\\': value += '\\'; break;
      case 'n': value += '\n'; break;
      case 't': value += '\t'; break;
      case 'r': value += '\r'; break;
      case 'x':
        if (isHexDigit(peek()) && isHexDigit(peek(1))) {
          value += static_cast<char>(hexValue(peek()) * 16 + hexValue(peek(1)));
          advance();
          advance();
          break;
        }
        [[fallthrough]];
      default:
        token.kind = TokenKind::Error;
        token.text = "invalid escape in string (expected \\\" \\\\ \\n \\t \\r or \\xNN)";
        return token;
    }
  }
  token.kind = TokenKind::String;
  token.text = std::move(value);
  return token;
}

Token Lexer::lexSigilName(Token token, TokenKind kind) {
  char sigil = peek();
  advance();
  if (peek() == '"') {
    token = lexString(token);
    if (token.kind == TokenKind::String) token.kind = kind;
    return token;
  }
  size_t start = pos_;
  while (isBareNameChar(peek())) advance();
  if (pos_ == start) {
    token.kind = TokenKind::Error;
    token.text = fmt::format("expected a name after '{}'", sigil);
    return token;
  }
  token.kind = kind;
  token.text = std::string(text_.substr(start, pos_ - start));
  return token;
}

bool isIdentifier(std::string_view name) {
  if (name.empty() || !isIdentStart(name[0])) return false;
  for (char c : name) {
    if (!isIdentChar(c)) return false;
  }
  return true;
}

bool isDottedIdentifier(std::string_view name) {
  size_t start = 0;
  while (true) {
    size_t dot = name.find('.', start);
    if (!isIdentifier(name.substr(start, dot == std::string_view::npos ? dot : dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool isBareName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!isBareNameChar(c)) return false;
  }
  return true;
}

std::string quoteString(std::string_view value) {
  std::string out = "\"";
  for (char c : value) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace tessel::text
