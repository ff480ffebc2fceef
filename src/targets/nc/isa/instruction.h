// The in-memory form of one accelerator instruction (accelerator-model.md sections 3, 4, 6): an
// opcode from isa.def, the engine that runs it, operands as access patterns into SBUF/PSUM/HBM,
// immediates (ALU ops, ACT function, scalars), the DMA queue of a dma_copy, and the semaphore
// waits/increment every instruction carries. The encoder, assembler, disassembler and verifier all
// work on this struct.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "targets/nc/machine/engine.h"

namespace tessel::nc {

/// The bit of `engine` in an engine set (the engines column of isa.def, allowedEngines()).
constexpr uint8_t engineBit(Engine engine) { return static_cast<uint8_t>(1u << static_cast<int>(engine)); }

/// Engine bits used by the engines column of isa.def.
inline constexpr uint8_t kPE = engineBit(Engine::PE), kDVE = engineBit(Engine::DVE), kACT = engineBit(Engine::ACT),
                         kPOOL = engineBit(Engine::POOL), kSP = engineBit(Engine::SP), kDMA = engineBit(Engine::DMA);

/// One opcode per isa.def row.
enum class Opcode : uint8_t {
#define INSN(id, mnemonic, engines, signature) id,
#include "targets/nc/isa/isa.def"
#undef INSN
};

/// Memory an operand lives in (section 4).
enum class MemSpace : uint8_t { SBUF, PSUM, HBM };
inline constexpr int kNumMemSpaces = 3;

/// Element types of section 3 (nc-v4-only packed types left out).
enum class DType : uint8_t {
  U8, I8, U16, I16, U32, I32, F8E4M3, F8E5M2, F8E4M3FN, F8E8M0FNU, F16, BF16, TF32, F32, Bool
};
inline constexpr int kNumDTypes = 15;

/// ALU operators of section 6.2; None means "no operator".
enum class AluOp : uint8_t {
  None, Invert, BitwiseAnd, BitwiseOr, BitwiseXor, LeftShift, LogicalShiftRight, Add, Subtract,
  Multiply, Maximum, Minimum, Equal, NotEqual, Greater, GreaterEqual, Less, LessEqual, LogicalAnd,
  LogicalOr, LogicalXor, Power, AbsMax, AbsMin, Abs, Square, Relu, Rsqrt, Reciprocal
};
inline constexpr int kNumAluOps = 29;
/// The bit of `op` in a set of ALU ops (a uint32_t: kNumAluOps <= 32).
constexpr uint32_t aluOpBit(AluOp op) { return 1u << static_cast<int>(op); }

/// ACT functions of section 6.3; None means "no function".
enum class ActFunc : uint8_t {
  None, Copy, Square, Sigmoid, Relu, Prelu, Gelu, GeluDx, GeluApprxTanh, GeluApprxSigmoid,
  GeluApprxSigmoidDx, Silu, SiluDx, Tanh, Softplus, Mish, Erf, ErfDx, Exp, Sign, Abs, Log, Sin,
  Arctan, Sqrt, Rsqrt, Reciprocal
};
inline constexpr int kNumActFuncs = 27;

/// One free dimension of an access pattern: step and count, in elements (section 4.2). The verifier
/// holds SBUF/PSUM operands to the hardware's int16 stride and uint16 count; HBM operands (DMA
/// descriptors) may use the full width.
struct FreeDim {
  int64_t strideElements = 1;
  uint32_t count = 1;
  bool operator==(const FreeDim &) const = default;
};

/// Maximum number of free dims in an access pattern (section 4.2).
inline constexpr int kMaxFreeDims = 4;

/// Where an operand lives: a contiguous partition range, a byte offset (same in every partition)
/// and up to 4 free dims, outermost first. HBM operands use startPartition 0, partitionCount 1.
struct AccessPattern {
  MemSpace space = MemSpace::SBUF;
  uint8_t startPartition = 0;
  uint8_t partitionCount = 1;
  uint64_t offsetBytes = 0;
  std::vector<FreeDim> dims;
  DType dtype = DType::F32;
  bool operator==(const AccessPattern &) const = default;
};

/// "Wait until semaphore `id` >= `value`" before the instruction starts (section 2).
struct SemaphoreWait {
  uint16_t id = 0;
  uint32_t value = 0;
  bool operator==(const SemaphoreWait &) const = default;
};

/// A dma_copy operand in HBM whose address is known only when the program starts: it begins
/// `strideBytes` x (launch register `reg`) bytes after its offsetBytes. The sequencers' scalar
/// registers give data-path instructions dynamic addresses (accelerator-model.md section 2); here
/// the registers are the program's launch arguments (a KV cache's write position), set by the host
/// when it starts the program and at most `maxValue`, which bounds the bytes the operand may touch.
struct DynamicOffset {
  uint8_t operand = 0;     // The signature slot it applies to.
  uint8_t reg = 0;         // Launch register index.
  uint64_t strideBytes = 0;
  uint32_t maxValue = 0;
  bool operator==(const DynamicOffset &) const = default;
};

/// Maximum operand slots of any signature, immediates and semaphore waits of any instruction.
inline constexpr int kMaxOperands = 5;
inline constexpr int kMaxScalars = 4;
inline constexpr int kMaxWaits = 8;

/// One instruction. `operands[i]` is signature slot i of the opcode (see operandSlots()). It starts
/// only when every semaphore in `waits` has reached its value; on completion it increments
/// `increment` by 1. Semaphores (ids 0..65535) all start at 0.
struct Instruction {
  Opcode opcode = Opcode::TensorCopy;
  Engine engine = Engine::DVE;
  std::array<std::optional<AccessPattern>, kMaxOperands> operands;
  AluOp op0 = AluOp::None;        // First ALU op; for activation with accum: the reduce op.
  AluOp op1 = AluOp::None;        // Second ALU op (tensor_scalar).
  ActFunc func = ActFunc::None;   // activation only.
  std::vector<float> scalars;     // Immediates: scale, scalar operands, fill value, iota terms.
  bool accumulate = false;        // nc_matmul: add into PSUM instead of overwriting.
  uint8_t queue = 0;              // dma_copy only: the DMA queue (FIFO per queue); 0 elsewhere.
  uint8_t cores = 0;              // all_gather/all_reduce only: the cores taking part; 0 elsewhere.
  std::optional<DynamicOffset> dynamicOffset;  // dma_copy only: an HBM operand placed at launch.
  std::vector<SemaphoreWait> waits;   // At most kMaxWaits, in the order written.
  std::optional<uint16_t> increment;  // Semaphore incremented by 1 on completion.
  bool operator==(const Instruction &) const = default;
};

/// One operand slot of a signature.
struct OperandSlot {
  std::string_view name;
  bool optional = false;
};

/// The mnemonic of an opcode, exactly as in accelerator-model.md.
std::string_view mnemonic(Opcode opcode);
/// The engines (engineBit() bits kPE...) allowed to run an opcode.
uint8_t allowedEngines(Opcode opcode);
/// The operand slots of an opcode, from its isa.def signature.
const std::vector<OperandSlot> &operandSlots(Opcode opcode);
/// Number of opcodes in isa.def.
int numOpcodes();

/// Printable names (as used by the assembly); the parse functions return nullopt for unknown names.
/// engineName/parseEngine are in machine/engine.h.
std::string_view memSpaceName(MemSpace space);
std::string_view dtypeName(DType dtype);
std::string_view aluOpName(AluOp op);
std::string_view actFuncName(ActFunc func);
std::optional<Opcode> parseOpcode(std::string_view text);
std::optional<MemSpace> parseMemSpace(std::string_view text);
std::optional<DType> parseDType(std::string_view text);
std::optional<AluOp> parseAluOp(std::string_view text);
std::optional<ActFunc> parseActFunc(std::string_view text);

/// Whether `opcode` is a collective across cores (all_gather, all_reduce).
constexpr bool isCollective(Opcode opcode) { return opcode == Opcode::AllGather || opcode == Opcode::AllReduce; }

/// Size of one element in bytes.
int dtypeSizeBytes(DType dtype);
/// Product of the free dim counts (1 with no dims): elements per partition.
uint64_t freeSizeElements(const AccessPattern &ap);

}  // namespace tessel::nc
