// The tile DSL: how tessel's accelerator kernels are written, in C++, in the spirit of NKI. A kernel
// is a function that calls a KernelBuilder: it declares its HBM arguments, creates tiles in SBUF and
// PSUM (partition dim first, then free dims), and issues tile operations — load/store (DMA), matmul
// and transpose (PE), activation (ACT), ALU ops, reductions and masks (DVE/POOL). C++ loops unroll
// as the kernel runs, so the builder records a straight-line Tile IR (tile_ir.h); compileKernel()
// (compile.h) then allocates SBUF/PSUM, derives dependences, schedules across engines and DMA queues
// and inserts the semaphores. Every tile is a new logical buffer: a tile created inside a loop body
// gets a fresh buffer per iteration, and the allocator's reuse policy turns that into multi-buffering.
//
// Shape errors (a view out of its tile, a partition count over the machine's, mismatched operand
// shapes) do not stop the kernel code: the first one is kept, with the op index and the offending
// values, and finish() returns it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "support/diagnostic.h"
#include "targets/nc/isa/instruction.h"
#include "targets/nc/isa/verifier.h"
#include "targets/nc/machine/engine.h"
#include "targets/nc/machine/profile.h"
#include "targets/nc/tile/tile_ir.h"

namespace tessel::nc::tile {

class KernelBuilder;

/// A rectangular window onto a tile in SBUF or PSUM: a partition range and free dims given as an
/// access pattern relative to the tile's first element (element offset plus dims, outermost first).
class TileView {
 public:
  TileView() = default;

  int32_t tile() const { return tile_; }
  MemSpace space() const { return space_; }
  DType dtype() const { return dtype_; }
  int64_t partitionStart() const { return partitionStart_; }
  int64_t partitions() const { return partitionCount_; }
  int64_t offsetElements() const { return offsetElements_; }
  const std::vector<FreeDim> &dims() const { return dims_; }
  /// Counts of the free dims, outermost first.
  std::vector<int64_t> freeShape() const;
  /// Product of the free dims: elements per partition.
  int64_t freeSize() const;

  /// Partitions [start, start + count) of this view.
  TileView partitionSlice(int64_t start, int64_t count) const;
  /// Elements [start, start + count) of free dim `dim` (0 = outermost; -1 = innermost).
  TileView slice(int dim, int64_t start, int64_t count) const;
  /// Shorthand for slice(-1, start, count).
  TileView cols(int64_t start, int64_t count) const { return slice(-1, start, count); }
  /// Splits the contiguous innermost dim into `shape` (row-major), e.g. [P, 2048] -> [P, 4, 512].
  TileView reshapeFree(const std::vector<int64_t> &shape) const;
  /// Appends an innermost stride-0 dim of `count`: a [P, 1] per-partition scalar read as [P, count].
  TileView broadcastFree(int64_t count) const;
  /// Any access pattern of the same partitions: `offset` elements past this view's first element, then
  /// `dims` (outermost first). Every element it touches must lie in the tile.
  TileView pattern(int64_t offset, const std::vector<FreeDim> &dims) const;

 private:
  friend class KernelBuilder;
  int32_t tile_ = -1;
  MemSpace space_ = MemSpace::SBUF;
  DType dtype_ = DType::F32;
  int64_t partitionStart_ = 0, partitionCount_ = 0;
  int64_t offsetElements_ = 0;
  std::vector<FreeDim> dims_;
  KernelBuilder *builder_ = nullptr;  // Where slicing errors are reported.
};

/// A window onto an HBM tensor: an element offset and dims (outermost first) over its row-major
/// layout. On load/store the outermost dim maps to the tile's partitions and the rest to its free
/// dims, in order.
class HbmView {
 public:
  HbmView() = default;

  int32_t tensor() const { return tensor_; }
  DType dtype() const { return dtype_; }
  int64_t offsetElements() const { return offsetElements_; }
  const std::vector<FreeDim> &dims() const { return dims_; }
  std::vector<int64_t> shape() const;

  /// Elements [start, start + count) of dim `dim` (-1 = innermost).
  HbmView slice(int dim, int64_t start, int64_t count) const;
  /// Shorthands for 2-D views.
  HbmView rows(int64_t start, int64_t count) const { return slice(0, start, count); }
  HbmView cols(int64_t start, int64_t count) const { return slice(-1, start, count); }
  /// Swaps dims `a` and `b` (a strided view; a DMA through it moves one element per chunk).
  HbmView transpose(int a = 0, int b = 1) const;
  /// Splits dim `dim` (contiguous in its parent) into `shape`.
  HbmView reshapeDim(int dim, const std::vector<int64_t> &shape) const;
  /// Replaces dim `dim`, which must have count 1, by a stride-0 dim of `count` (row broadcast).
  HbmView broadcast(int dim, int64_t count) const;
  /// Any access pattern: `offset` elements past this view's first element, then `dims` (outermost
  /// first; the first maps to partitions on load/store). Every element must lie in the tensor.
  HbmView pattern(int64_t offset, const std::vector<FreeDim> &dims) const;

 private:
  friend class KernelBuilder;
  int32_t tensor_ = -1;
  DType dtype_ = DType::F32;
  int64_t offsetElements_ = 0;
  std::vector<FreeDim> dims_;
  KernelBuilder *builder_ = nullptr;
};

/// Whether ACT can run tensor_scalar with these ops: multiply, add, or multiply then add (section 6.1).
bool tensorScalarRunsOnAct(AluOp op0, AluOp op1);

/// A per-partition scalar operand: an immediate or a [P, 1] tile view.
using ScalarOperand = std::variant<float, TileView>;

/// Optional parts of an activation: dst = func(src * scale + bias), accum = reduce(accumOp) of dst.
struct ActivationArgs {
  ScalarOperand scale = 1.0f;
  std::optional<ScalarOperand> bias;      // [P, 1] view or an immediate (immediate bias: nc-v3 only).
  std::optional<TileView> accum;          // [P, 1] fp32: free-axis reduction of the results.
  AluOp accumOp = AluOp::Add;
};

/// Records one kernel. Engines may be left to the compiler where more than one can run an op.
class KernelBuilder {
 public:
  KernelBuilder(std::string name, const MachineProfile &profile);
  KernelBuilder(const KernelBuilder &) = delete;
  KernelBuilder &operator=(const KernelBuilder &) = delete;

  const MachineProfile &profile() const { return profile_; }
  /// The profile's tile-rule limits (isaLimitsFor), computed once.
  const IsaLimits &limits() const { return limits_; }
  /// The kernel recorded so far (tiles, tensors, ops).
  const Kernel &kernel() const { return kernel_; }

  /// Kernel arguments in HBM, row-major.
  HbmView input(const std::string &name, DType dtype, const std::vector<int64_t> &shape);
  HbmView output(const std::string &name, DType dtype, const std::vector<int64_t> &shape);
  /// An input whose contents are fixed at compile time (weights). Constants come first in HBM, in
  /// the order they are declared, so programs of one model at other input sizes (buckets) that
  /// declare the same constants place them at the same offsets and can share one copy.
  HbmView constant(const std::string &name, DType dtype, const std::vector<int64_t> &shape);

  /// A new tile (partitions <= profile.partitions). PSUM tiles must fit one bank per partition.
  TileView sbuf(const std::string &name, DType dtype, int64_t partitions, const std::vector<int64_t> &freeShape);
  TileView psum(const std::string &name, DType dtype, int64_t partitions, const std::vector<int64_t> &freeShape);

  /// DMA: HBM -> SBUF and SBUF -> HBM (element counts must match; dtypes may differ: the DMA casts).
  void load(const TileView &dst, const HbmView &src);
  void store(const HbmView &dst, const TileView &src);
  /// A store whose HBM window is placed when the program starts: `dst` moved by `stepElements` x
  /// launch register `reg` (0..maxValue; the window at maxValue must lie in the tensor too). A KV
  /// cache written in place at the position the host passes.
  void storeAt(const HbmView &dst, const TileView &src, int reg, int64_t stepElements, int64_t maxValue);
  /// PE: dst[M, N] (PSUM fp32) = stationary[K, M]^T @ moving[K, N]; accumulate adds to dst.
  void matmul(const TileView &dst, const TileView &stationary, const TileView &moving, bool accumulate);
  /// PE transpose: src [P, F] (SBUF) -> dst [F, P] (PSUM, same dtype).
  void transpose(const TileView &dst, const TileView &src);
  /// ACT: dst = func(src * scale + bias), optionally reducing into args.accum.
  void activation(const TileView &dst, const TileView &src, ActFunc func, const ActivationArgs &args = {});
  /// dst = a op b elementwise (DVE by default; POOL allowed for SBUF-only operands).
  void tensorTensor(const TileView &dst, const TileView &a, const TileView &b, AluOp op,
                    std::optional<Engine> engine = std::nullopt);
  /// DVE scan along the free elements of each partition: r[i] = (a[i] op0 r[i-1]) op1 b[i], dst = r,
  /// r[-1] = initial (an immediate or a [P, 1] view).
  void tensorTensorScan(const TileView &dst, const TileView &a, const TileView &b, AluOp op0, AluOp op1,
                        ScalarOperand initial = 0.0f);
  /// dst = (src op0 s0) op1 s1; op1 None skips the second op.
  void tensorScalar(const TileView &dst, const TileView &src, AluOp op0, ScalarOperand s0,
                    AluOp op1 = AluOp::None, ScalarOperand s1 = 0.0f, std::optional<Engine> engine = std::nullopt);
  /// DVE, one pass: dst = src op0 s0 and accum ([P, 1]) = the reduceOp-reduction (add, subtract,
  /// multiply, maximum, minimum) of each partition's results over all its free elements.
  void tensorScalarReduce(const TileView &dst, const TileView &src, AluOp op0, ScalarOperand s0, const TileView &accum,
                          AluOp reduceOp);
  /// dst = reduce(op) of src over its innermost free dim (DVE).
  void reduce(const TileView &dst, const TileView &src, AluOp op);
  /// dst = src with a dtype cast; the compiler picks DVE, ACT or POOL unless `engine` is given.
  void copy(const TileView &dst, const TileView &src, std::optional<Engine> engine = std::nullopt);
  void memset(const TileView &dst, float value, std::optional<Engine> engine = std::nullopt);
  /// Collective across `cores` cores running this kernel together (SP triggers it; in place on dst,
  /// SBUF): dst's partitions split into `cores` equal parts, part c from core c, on every core.
  void allGather(const TileView &dst, int cores);
  /// Collective: every core's dst (SBUF, f32 or bf16) becomes the op-reduction of all cores' dst;
  /// op is add.
  void allReduce(const TileView &dst, AluOp op, int cores);
  /// POOL: dst[p][k] = offset + p * partitionMultiplier + k * step (k = flat free index).
  void iota(const TileView &dst, float offset, float partitionMultiplier, float step);
  /// POOL: dst = (partitionMultiplier * p + freeMultiplier * k + offset >= 0) ? src : fill.
  void affineSelect(const TileView &dst, const TileView &src, float partitionMultiplier, float freeMultiplier,
                    float offset, float fill);
  /// DVE batch-norm statistics: src [P, N <= 512] -> dst [P, 6]; bnAggr: [P, 6 * G] -> [P, 2] (mean, var).
  void bnStats(const TileView &dst, const TileView &src);
  void bnAggr(const TileView &dst, const TileView &src);

  /// Records a shape error (the first one wins); used by views and ops.
  void fail(std::string message);
  /// Whether an error has been recorded (callers that record many ops use it to tell which failed).
  bool failed() const { return error_.has_value(); }

  /// The recorded kernel, or the first error (InvalidArgument, "kernel 'name': op #i (matmul): ...").
  Expected<Kernel> finish();

 private:
  std::string name_;
  const MachineProfile &profile_;
  const IsaLimits limits_;  // isaLimitsFor(profile_), read by every op's checks.
  Kernel kernel_;
  std::optional<Diagnostic> error_;

  /// Declares a tile and returns a view of all of it (an empty view after a declaration error).
  TileView newTile(const TileDecl &decl);
  // Operand checks and conversion (dsl.cpp); `what` names the operand in messages.
  std::string opPrefix(TileOpKind kind) const;
  bool checkTile(TileOpKind kind, const char *what, const TileView &view);
  bool checkHbm(TileOpKind kind, const char *what, const HbmView &view);
  bool checkScalar(TileOpKind kind, const char *what, const ScalarOperand &scalar, const TileView &dst);
  /// dst, a and b of an elementwise two-input op: same partitions and free size, not both inputs in PSUM.
  bool checkElementwisePair(TileOpKind kind, const TileView &dst, const TileView &a, const TileView &b);
  bool checkCollective(TileOpKind kind, const TileView &dst, int cores);
  bool checkEngine(TileOpKind kind, Opcode opcode, std::optional<Engine> engine,
                   std::initializer_list<const TileView *> operands);
  void record(TileOp op);
};

}  // namespace tessel::nc::tile
