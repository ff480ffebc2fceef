// Tile IR: what a kernel written in the tile DSL records, and what the kernel compiler consumes. A
// straight-line list of tile operations over logical tiles (SBUF/PSUM buffers not yet placed) and HBM
// tensors (the kernel's arguments). Operands are views: a partition range plus an access pattern
// relative to the tile's (or tensor's) first element. printKernel() shows it as text.
#pragma once

#include <cstdint>
#include <optional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "targets/nc/isa/instruction.h"
#include "targets/nc/machine/engine.h"

namespace tessel::nc::tile {

/// An HBM argument of the kernel, row-major.
struct HbmTensorDecl {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  bool isOutput = false;
  bool isScratch = false;  // Added by the compiler to hold spilled tiles.
  bool isConstant = false;  // An input the artifact's constant image fills (weights); placed first in HBM.
};

/// A logical tile: one buffer in SBUF or PSUM, placed by the compiler.
struct TileDecl {
  std::string name;
  MemSpace space = MemSpace::SBUF;
  DType dtype = DType::F32;
  int64_t partitions = 0;
  std::vector<int64_t> freeShape;
};

/// One operand of a tile op: a view of a tile (space SBUF/PSUM) or of an HBM tensor (space HBM).
struct OperandView {
  MemSpace space = MemSpace::SBUF;
  int32_t id = -1;                    // Index into Kernel::tiles or Kernel::tensors.
  int64_t partitionStart = 0, partitionCount = 1;  // HBM: 0, 1 (all dims are free dims).
  int64_t offsetElements = 0;
  std::vector<FreeDim> dims;
  DType dtype = DType::F32;
};

enum class TileOpKind : uint8_t {
  Load, Store, Matmul, Transpose, Activation, TensorTensor, TensorScalar, Reduce, Copy, Memset, Iota,
  AffineSelect, BnStats, BnAggr, AllGather, AllReduce, TensorTensorScan, TensorScalarReduce
};

/// The DSL name of a kind ("load", "matmul", "tensorTensor", ...), as error messages and printKernel show it.
std::string_view tileOpKindName(TileOpKind kind);

/// One tile operation. `operands` follow the ISA signature of the instruction it lowers to
/// (dst first; absent optional operands are std::nullopt), so lowering is a placement of views.
struct TileOp {
  TileOpKind kind = TileOpKind::Copy;
  Opcode opcode = Opcode::TensorCopy;
  std::optional<Engine> engine;       // nullopt: the compiler chooses among allowedEngines(opcode).
  std::vector<std::optional<OperandView>> operands;
  AluOp op0 = AluOp::None, op1 = AluOp::None;
  ActFunc func = ActFunc::None;
  std::vector<float> scalars;
  bool accumulate = false;
  int cores = 0;                      // AllGather/AllReduce: the cores taking part.
  // Store: dst moves `stepElements` x launch register `reg` elements further at run time (at most
  // maxValue steps); the view given is the one at register value 0.
  struct LaunchOffset {
    int reg = 0;
    int64_t stepElements = 0;
    int64_t maxValue = 0;
  };
  std::optional<LaunchOffset> launchOffset;
};

/// Where constants go in HBM by name: (offset, bytes). Programs of one model at other input sizes
/// (buckets) place the constants they declare alike at the offsets of a first one, so one copy
/// serves them all.
using ConstantLayout = std::map<std::string, std::pair<uint64_t, uint64_t>>;

struct Kernel {
  std::string name;
  std::vector<HbmTensorDecl> tensors;
  std::vector<TileDecl> tiles;
  std::vector<TileOp> ops;
  ConstantLayout pinnedConstants;  // Constants of these names and sizes go at these offsets.
};

/// The kernel as text: tensors, tiles, then one op per line.
std::string printKernel(const Kernel &kernel);

}  // namespace tessel::nc::tile
