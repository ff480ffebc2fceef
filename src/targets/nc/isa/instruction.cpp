// Tables behind instruction.h: opcode rows from isa.def, and the text names of memories,
// dtypes, ALU ops and ACT functions shared by the assembler and the disassembler.
#include "targets/nc/isa/instruction.h"

#include <string>

#include "support/diagnostic.h"

namespace tessel::nc {
namespace {

struct OpcodeRow {
  std::string_view mnemonic;
  uint8_t engines;
  std::string_view signature;
};

constexpr OpcodeRow kOpcodeRows[] = {
#define INSN(id, mnemonic, engines, signature) {mnemonic, engines, signature},
#include "targets/nc/isa/isa.def"
#undef INSN
};

constexpr std::string_view kMemSpaceNames[] = {"sbuf", "psum", "hbm"};
constexpr std::string_view kDTypeNames[] = {"u8",   "i8",       "u16",       "i16", "u32",
                                            "i32",  "f8e4m3",   "f8e5m2",    "f8e4m3fn",
                                            "f8e8m0fnu", "f16", "bf16",      "tf32", "f32", "bool"};
constexpr int kDTypeSizes[] = {1, 1, 2, 2, 4, 4, 1, 1, 1, 1, 2, 2, 4, 4, 1};
constexpr std::string_view kAluOpNames[] = {
    "none",      "invert",      "bitwise_and", "bitwise_or",    "bitwise_xor", "left_shift",
    "logical_shift_right", "add", "subtract",  "multiply",      "maximum",     "minimum",
    "equal",     "not_equal",   "greater",     "greater_equal", "less",        "less_equal",
    "logical_and", "logical_or", "logical_xor", "power",        "abs_max",     "abs_min",
    "abs",       "square",      "relu",        "rsqrt",         "reciprocal"};
constexpr std::string_view kActFuncNames[] = {
    "none",   "copy",    "square", "sigmoid",  "relu",    "prelu",    "gelu",
    "gelu_dx", "gelu_apprx_tanh", "gelu_apprx_sigmoid", "gelu_apprx_sigmoid_dx", "silu",
    "silu_dx", "tanh",   "softplus", "mish",   "erf",     "erf_dx",   "exp",
    "sign",   "abs",     "log",    "sin",      "arctan",  "sqrt",     "rsqrt",   "reciprocal"};

static_assert(std::size(kMemSpaceNames) == kNumMemSpaces);
static_assert(std::size(kDTypeNames) == kNumDTypes && std::size(kDTypeSizes) == kNumDTypes);
static_assert(std::size(kAluOpNames) == kNumAluOps);
static_assert(std::size(kActFuncNames) == kNumActFuncs);

template <class E, size_t N>
std::optional<E> findName(const std::string_view (&names)[N], std::string_view text) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == text) return static_cast<E>(i);
  return std::nullopt;
}

std::vector<std::vector<OperandSlot>> buildSlots() {
  std::vector<std::vector<OperandSlot>> all;
  for (const OpcodeRow &row : kOpcodeRows) {
    std::vector<OperandSlot> slots;
    std::string_view rest = row.signature;
    while (!rest.empty()) {
      size_t space = rest.find(' ');
      std::string_view word = rest.substr(0, space);
      rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
      bool optional = word.ends_with('?');
      if (optional) word.remove_suffix(1);
      slots.push_back({word, optional});
    }
    TESSEL_CHECK(slots.size() <= kMaxOperands, "isa.def signature '{}' has more than {} slots", row.signature,
                 kMaxOperands);
    all.push_back(std::move(slots));
  }
  return all;
}

}  // namespace

int numOpcodes() { return static_cast<int>(std::size(kOpcodeRows)); }
std::string_view mnemonic(Opcode opcode) { return kOpcodeRows[static_cast<int>(opcode)].mnemonic; }
uint8_t allowedEngines(Opcode opcode) { return kOpcodeRows[static_cast<int>(opcode)].engines; }

const std::vector<OperandSlot> &operandSlots(Opcode opcode) {
  static const std::vector<std::vector<OperandSlot>> slots = buildSlots();
  return slots[static_cast<int>(opcode)];
}

std::string_view memSpaceName(MemSpace space) { return kMemSpaceNames[static_cast<int>(space)]; }
std::string_view dtypeName(DType dtype) { return kDTypeNames[static_cast<int>(dtype)]; }
std::string_view aluOpName(AluOp op) { return kAluOpNames[static_cast<int>(op)]; }
std::string_view actFuncName(ActFunc func) { return kActFuncNames[static_cast<int>(func)]; }
int dtypeSizeBytes(DType dtype) { return kDTypeSizes[static_cast<int>(dtype)]; }

std::optional<Opcode> parseOpcode(std::string_view text) {
  for (int i = 0; i < numOpcodes(); ++i)
    if (kOpcodeRows[i].mnemonic == text) return static_cast<Opcode>(i);
  return std::nullopt;
}
std::optional<MemSpace> parseMemSpace(std::string_view text) {
  return findName<MemSpace>(kMemSpaceNames, text);
}
std::optional<DType> parseDType(std::string_view text) { return findName<DType>(kDTypeNames, text); }
std::optional<AluOp> parseAluOp(std::string_view text) { return findName<AluOp>(kAluOpNames, text); }
std::optional<ActFunc> parseActFunc(std::string_view text) {
  return findName<ActFunc>(kActFuncNames, text);
}

uint64_t freeSizeElements(const AccessPattern &ap) {
  uint64_t size = 1;
  for (const FreeDim &dim : ap.dims) size *= dim.count;
  return size;
}

}  // namespace tessel::nc
