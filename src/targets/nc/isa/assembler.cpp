// Text assembly parser (syntax in assembler.h). A small cursor over one line at a time; every
// error names the 1-based line and column where the offending token starts.
#include "targets/nc/isa/assembler.h"

#include <bit>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include <fmt/format.h>

namespace tessel::nc {
namespace {

/// Parses one line; errors carry the column, the caller adds file and line.
class LineParser {
 public:
  explicit LineParser(std::string_view line) : line_(line) {}

  struct Error {
    size_t column;
    std::string message;
  };

  /// Returns the instruction, nothing for a blank/comment line, or an error.
  std::variant<std::monostate, Instruction, Error> parse();

 private:
  bool atEnd() {
    skipSpaces();
    return pos_ >= line_.size() || line_[pos_] == '#';
  }
  void skipSpaces() {
    while (pos_ < line_.size() && (line_[pos_] == ' ' || line_[pos_] == '\t' || line_[pos_] == '\r')) ++pos_;
  }
  std::string_view word() {
    size_t start = pos_;
    while (pos_ < line_.size() && (std::isalnum(static_cast<unsigned char>(line_[pos_])) || line_[pos_] == '_'))
      ++pos_;
    return line_.substr(start, pos_ - start);
  }
  bool expect(std::string_view text) {
    if (line_.substr(pos_, text.size()) != text) {
      fail(pos_, fmt::format("expected '{}'", text));
      return false;
    }
    pos_ += text.size();
    return true;
  }
  void fail(size_t at, std::string message) {
    if (!error_) error_ = Error{at + 1, std::move(message)};
  }
  /// An unsigned decimal integer no larger than `max`.
  std::optional<uint64_t> integer(uint64_t max, const char *what);
  std::optional<int64_t> signedInteger(int64_t min, int64_t max, const char *what);
  std::optional<float> scalar();
  std::optional<AccessPattern> accessPattern();
  void field(Instruction &insn, std::string_view key, size_t keyAt);

  std::string_view line_;
  size_t pos_ = 0;
  std::optional<Error> error_;
  std::vector<std::string_view> seen_;
};

std::optional<uint64_t> LineParser::integer(uint64_t max, const char *what) {
  size_t start = pos_;
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(line_.data() + pos_, line_.data() + line_.size(), value);
  if (ec != std::errc() || value > max) {
    fail(start, fmt::format("expected {} in 0..{}", what, max));
    return std::nullopt;
  }
  pos_ = end - line_.data();
  return value;
}

std::optional<int64_t> LineParser::signedInteger(int64_t min, int64_t max, const char *what) {
  size_t start = pos_;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(line_.data() + pos_, line_.data() + line_.size(), value);
  if (ec != std::errc() || value < min || value > max) {
    fail(start, fmt::format("expected {} in {}..{}", what, min, max));
    return std::nullopt;
  }
  pos_ = end - line_.data();
  return value;
}

std::optional<float> LineParser::scalar() {
  size_t start = pos_;
  while (pos_ < line_.size() && line_[pos_] != ',' && line_[pos_] != ' ' && line_[pos_] != '\t' &&
         line_[pos_] != '#')
    ++pos_;
  std::string token(line_.substr(start, pos_ - start));
  if (token.starts_with("bits:0x") && token.size() == 15) {
    uint32_t bits = 0;
    auto [end, ec] = std::from_chars(token.data() + 7, token.data() + token.size(), bits, 16);
    if (ec == std::errc() && end == token.data() + token.size()) return std::bit_cast<float>(bits);
  } else if (!token.empty()) {
    char *end = nullptr;
    float value = std::strtof(token.c_str(), &end);
    if (end == token.c_str() + token.size() && std::isfinite(value)) return value;
  }
  fail(start, fmt::format("bad immediate '{}'; expected a finite float or bits:0x<8 hex digits>", token));
  return std::nullopt;
}

std::optional<AccessPattern> LineParser::accessPattern() {
  AccessPattern ap;
  size_t at = pos_;
  std::string_view space = word();
  auto parsedSpace = parseMemSpace(space);
  if (!parsedSpace) {
    fail(at, fmt::format("unknown memory space '{}'; expected sbuf, psum or hbm", space));
    return std::nullopt;
  }
  ap.space = *parsedSpace;
  if (!expect("[p")) return std::nullopt;
  auto start = integer(255, "start partition");
  if (!start || !expect(":")) return std::nullopt;
  auto count = integer(255, "partition count");
  if (!count || !expect(", off ")) return std::nullopt;
  auto offset = integer(UINT64_MAX, "byte offset");
  if (!offset) return std::nullopt;
  ap.startPartition = static_cast<uint8_t>(*start);
  ap.partitionCount = static_cast<uint8_t>(*count);
  ap.offsetBytes = *offset;
  while (pos_ < line_.size() && line_[pos_] == ',') {
    if (ap.dims.size() == kMaxFreeDims) {
      fail(pos_, fmt::format("more than {} free dims", kMaxFreeDims));
      return std::nullopt;
    }
    if (!expect(", [")) return std::nullopt;
    auto stride = signedInteger(INT64_MIN, INT64_MAX, "stride");
    if (!stride || !expect(",")) return std::nullopt;
    auto dimCount = integer(UINT32_MAX, "dim count");
    if (!dimCount || !expect("]")) return std::nullopt;
    ap.dims.push_back({*stride, static_cast<uint32_t>(*dimCount)});
  }
  if (!expect("]:")) return std::nullopt;
  at = pos_;
  std::string_view dtype = word();
  auto parsedDType = parseDType(dtype);
  if (!parsedDType) {
    fail(at, fmt::format("unknown dtype '{}'", dtype));
    return std::nullopt;
  }
  ap.dtype = *parsedDType;
  return ap;
}

void LineParser::field(Instruction &insn, std::string_view key, size_t keyAt) {
  for (std::string_view seen : seen_)
    if (seen == key) return fail(keyAt, fmt::format("duplicate field '{}'", key));
  seen_.push_back(key);
  const std::vector<OperandSlot> &slots = operandSlots(insn.opcode);
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i].name == key) {
      insn.operands[i] = accessPattern();
      return;
    }
  size_t at = pos_;
  if (key == "op0" || key == "op1") {
    std::string_view name = word();
    auto op = parseAluOp(name);
    if (!op || *op == AluOp::None) return fail(at, fmt::format("unknown ALU op '{}'", name));
    (key == "op0" ? insn.op0 : insn.op1) = *op;
  } else if (key == "func") {
    std::string_view name = word();
    auto func = parseActFunc(name);
    if (!func || *func == ActFunc::None) return fail(at, fmt::format("unknown ACT function '{}'", name));
    insn.func = *func;
  } else if (key == "imm") {
    do {
      if (insn.scalars.size() == kMaxScalars) return fail(pos_, fmt::format("more than {} immediates", kMaxScalars));
      auto value = scalar();
      if (!value) return;
      insn.scalars.push_back(*value);
    } while (pos_ < line_.size() && line_[pos_] == ',' && ++pos_);
  } else if (key == "acc") {
    if (expect("1")) insn.accumulate = true;
  } else if (key == "wait") {
    do {
      if (insn.waits.size() == kMaxWaits) return fail(pos_, fmt::format("more than {} semaphore waits", kMaxWaits));
      if (!expect("s")) return;
      auto id = integer(UINT16_MAX, "semaphore id");
      if (!id || !expect(">=")) return;
      auto value = integer(UINT32_MAX, "semaphore value");
      if (!value) return;
      insn.waits.push_back(SemaphoreWait{static_cast<uint16_t>(*id), static_cast<uint32_t>(*value)});
    } while (pos_ < line_.size() && line_[pos_] == ',' && ++pos_);
  } else if (key == "queue") {
    if (!expect("q")) return;
    auto queue = integer(UINT8_MAX, "queue");
    if (queue) insn.queue = static_cast<uint8_t>(*queue);
  } else if (key == "cores") {
    auto cores = integer(UINT8_MAX, "core count");
    if (cores) insn.cores = static_cast<uint8_t>(*cores);
  } else if (key == "dyn") {  // dyn=SLOT+rR*STRIDE<=MAX
    const size_t slotAt = pos_;
    const std::string_view slot = word();
    DynamicOffset dynamic;
    while (dynamic.operand < slots.size() && slots[dynamic.operand].name != slot) ++dynamic.operand;
    if (dynamic.operand == slots.size())
      return fail(slotAt, fmt::format("'{}' is not an operand of {}", slot, mnemonic(insn.opcode)));
    if (!expect("+r")) return;
    auto reg = integer(UINT8_MAX, "launch register");
    if (!reg || !expect("*")) return;
    auto stride = integer(UINT64_MAX, "dynamic offset stride");
    if (!stride || !expect("<=")) return;
    auto bound = integer(UINT32_MAX, "dynamic offset bound");
    if (!bound) return;
    dynamic.reg = static_cast<uint8_t>(*reg);
    dynamic.strideBytes = *stride;
    dynamic.maxValue = static_cast<uint32_t>(*bound);
    insn.dynamicOffset = dynamic;
  } else if (key == "inc") {
    if (!expect("s")) return;
    auto id = integer(UINT16_MAX, "semaphore id");
    if (id) insn.increment = static_cast<uint16_t>(*id);
  } else {
    fail(keyAt, fmt::format("unknown field '{}' for {}", key, mnemonic(insn.opcode)));
  }
}

std::variant<std::monostate, Instruction, LineParser::Error> LineParser::parse() {
  if (atEnd()) return std::monostate();
  Instruction insn;
  size_t at = pos_;
  std::string_view name = word();
  auto opcode = parseOpcode(name);
  if (!opcode) return Error{at + 1, fmt::format("unknown instruction '{}'", name)};
  insn.opcode = *opcode;
  if (!expect(".")) return *error_;
  at = pos_;
  std::string_view engineText = word();
  auto engine = parseEngine(engineText);
  if (!engine) return Error{at + 1, fmt::format("unknown engine '{}'; expected PE, DVE, ACT, POOL, SP or DMA", engineText)};
  insn.engine = *engine;
  while (!error_) {
    size_t before = pos_;
    if (atEnd()) break;
    if (pos_ == before) return Error{pos_ + 1, "expected a space before the next field"};
    size_t keyAt = pos_;
    std::string_view key = word();
    if (key.empty()) return Error{keyAt + 1, "expected a field name"};
    if (!expect("=")) break;
    field(insn, key, keyAt);
  }
  if (error_) return *error_;
  const std::vector<OperandSlot> &slots = operandSlots(insn.opcode);
  for (size_t i = 0; i < slots.size(); ++i)
    if (!slots[i].optional && !insn.operands[i])
      return Error{pos_ + 1, fmt::format("{} needs operand '{}'", mnemonic(insn.opcode), slots[i].name)};
  return insn;
}

}  // namespace

Expected<std::vector<Instruction>> assemble(std::string_view text, const std::string &fileName) {
  TESSEL_ASSIGN_OR_RETURN(AssembledProgram program, assembleWithLines(text, fileName));
  return std::move(program.instructions);
}

Expected<AssembledProgram> assembleWithLines(std::string_view text, const std::string &fileName) {
  AssembledProgram program;
  size_t lineNumber = 0;
  while (!text.empty()) {
    ++lineNumber;
    size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    auto result = LineParser(line).parse();
    if (auto *error = std::get_if<LineParser::Error>(&result))
      return makeError(ErrorCode::ParseError, "{}:{}:{}: {}", fileName, lineNumber, error->column, error->message);
    if (auto *insn = std::get_if<Instruction>(&result)) {
      program.instructions.push_back(std::move(*insn));
      program.lines.push_back(lineNumber);
    }
  }
  return program;
}

}  // namespace tessel::nc
