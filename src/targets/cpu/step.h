// The unit of a cpu plan: a Step runs one (possibly fused) graph node with a kernel of the kernel
// library. Steps are built at compile time by the op's lowering function (ops/<family>.cpp), which
// sees static shapes and constant inputs, validates the node, packs weights, and captures
// everything the kernel needs; at run time a step only receives pointers into the planned memory.
//
// Contract for every fast step:
//   - run() never allocates: buffers come from the plan (inputs, outputs, scratch);
//   - run() may split its work over io.pool (ThreadPool::parallelFor), never over its own threads;
//   - results match the op's reference kernel (ops/reference) within 1e-4 relative for f32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ops/op_support.h"
#include "support/diagnostic.h"
#include "support/thread_pool.h"
#include "targets/cpu/kernels/gemm_microkernel.h"

namespace tessel::cpu {

/// What a step gets when it runs. Pointers follow the node's input/output slots; an omitted
/// optional input is null. Memory is dense, row-major, in the dtype and static sizes the lowering
/// saw; planned buffers are 64-byte aligned, constant inputs (initializers) may not be.
struct StepIo {
  std::span<const void *const> inputs;
  std::span<void *const> outputs;
  void *scratch = nullptr;  // scratchBytes() bytes, 64-byte aligned, private to this run.
  ThreadPool *pool = nullptr;
};

/// Scratch is handed out in 64-byte (cache line) aligned pieces: `bytes` rounded up to whole lines.
inline size_t alignScratchBytes(size_t bytes) { return (bytes + 63) / 64 * 64; }

class Step {
 public:
  virtual ~Step() = default;

  /// Runs the step. Fast steps cannot fail (lowering checked everything) and return success;
  /// the reference fallback can, with a located Diagnostic.
  virtual Status run(const StepIo &io) const = 0;

  /// Bytes of scratch the step needs while it runs (im2col columns, packed panels, ...).
  virtual size_t scratchBytes() const { return 0; }

  /// The input whose buffer output 0 may overwrite in place (each element is read before the same
  /// element is written, and the shapes and dtypes match), or -1. The planner uses it only when
  /// that input dies at this step.
  virtual int inPlaceInput() const { return -1; }

  /// The input whose memory output 0 *is* (Reshape, Flatten, Squeeze, Unsqueeze, Identity):
  /// run() is never called and the output aliases the input. -1 for a step that computes.
  virtual int aliasInput() const { return -1; }

  /// An aliasing step whose run() must still be called, to check operands known only at run time
  /// (a Reshape whose shape is computed): it moves no data, but fails when they disagree with the
  /// planned output.
  virtual bool checksAtRunTime() const { return false; }

  /// The kernel's name for reports and profiles, e.g. "conv2d_im2col_gemm f32_gemm_6x32__avx512".
  virtual std::string kernelName() const = 0;
};

/// Constant bytes a step derives from the node's constant inputs (packed weights, folded scales).
/// At compile time `fill` writes them once; in an artifact they are stored under (node, key), and
/// a plan loaded from an artifact gets them from the file (memory-mapped) without calling fill.
class ConstantStore {
 public:
  virtual ~ConstantStore() = default;
  /// Returns 64-byte aligned, read-only memory of `bytes` bytes that lives as long as the plan.
  virtual Expected<const std::byte *> packed(const std::string &node, std::string_view key, size_t bytes,
                                             const std::function<void(std::byte *)> &fill) = 0;
};

struct GemmKernel;

/// What a lowering function sees: the node with static input and output types.
class LowerContext {
 public:
  LowerContext(const Node &node, int64_t opset, ConstantStore &constants, int threads,
               GemmOperands products = GemmOperands::F32, bool castEverywhere = true)
      : node_(node),
        opset_(opset),
        constants_(constants),
        threads_(threads),
        products_(products),
        castEverywhere_(castEverywhere) {}

  const Node &node() const { return node_; }
  /// Opset version the model imports for the node's domain.
  int64_t opset() const { return opset_; }
  /// Threads the plan will run with (a lowering may pick its partition from it).
  int threads() const { return threads_; }

  /// The GEMM variant for this step's products (of `rows` rows of C): the auto-cast type's when the
  /// plan asks for one, the host has it, `fits` accepts it (the step's operands suit it) and the
  /// plan casts everywhere or rows <= its mr (CpuCompileOptions::castEverywhere), else the f32 one. Records which, for the plan's precision report.
  const GemmKernel &gemmKernel(int64_t rows, const std::function<bool(const GemmKernel &)> &fits = {});
  /// Whether this step was offered a cast, and whether it took it.
  bool offeredCast() const { return offeredCast_; }
  bool castProducts() const { return castProducts_; }

  size_t numInputs() const { return node_.inputs().size(); }
  bool hasInput(size_t i) const { return node_.input(i) != nullptr; }
  /// Precondition: hasInput(i). Types are static (every dim known) when lowering runs.
  DType inputDType(size_t i) const { return node_.input(i)->type().dtype(); }
  std::vector<int64_t> inputSizes(size_t i) const { return staticSizes(*node_.input(i)); }
  DType outputDType(size_t i) const { return node_.output(i)->type().dtype(); }
  std::vector<int64_t> outputSizes(size_t i) const { return staticSizes(*node_.output(i)); }

  /// Input i's value when it is a constant (an initializer), else null.
  const Tensor *constantInput(size_t i) const {
    const Value *v = node_.input(i);
    return v && v->hasInitializer() ? &v->initializer() : nullptr;
  }
  /// Tells the planner this step never reads constant input i at run time (it packed it), so an
  /// artifact need not store the raw tensor unless another step reads it. The pointer in
  /// StepIo::inputs for that slot may be null.
  void releaseConstantInput(size_t i) { released_.push_back(i); }
  const std::vector<size_t> &releasedInputs() const { return released_; }

  /// See ConstantStore::packed; the key is scoped to this node.
  Expected<const std::byte *> packed(std::string_view key, size_t bytes, const std::function<void(std::byte *)> &fill) {
    return constants_.packed(node_.name(), key, bytes, fill);
  }

 private:
  static std::vector<int64_t> staticSizes(const Value &value);

  const Node &node_;
  int64_t opset_;
  ConstantStore &constants_;
  int threads_;
  GemmOperands products_;
  bool castEverywhere_;
  bool offeredCast_ = false, castProducts_ = false;
  std::vector<size_t> released_;
};

/// A lowering function: returns the step for ctx.node(), or nullptr (no error) when the family's
/// kernels do not cover this node (an unsupported dtype, attribute or layout), in which case the
/// planner runs the op's reference kernel instead. An error is only for a node that is invalid.
using LowerFn = Expected<std::unique_ptr<Step>> (*)(LowerContext &ctx);

/// The lowering registered for (domain, opType), or null. Rows live in ops/defs/<family>.def.
LowerFn findLowering(std::string_view domain, std::string_view opType);

/// The ops the cpu target runs on their reference kernels, and why (ops/reference_ops.def).
std::span<const OpReason> referenceOps();
/// Why `opType` runs on the reference kernel, or "" when it has a cpu lowering (or is unknown).
std::string_view referenceReason(std::string_view domain, std::string_view opType);

}  // namespace tessel::cpu
