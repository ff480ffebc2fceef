// Lowering of a device segment (the nodes partitioning gave the accelerator) to one tile-DSL program.
// The whole segment is recorded on a single KernelBuilder, so the kernel compiler allocates SBUF and
// PSUM over the whole program (an activation stays in SBUF from its producer to its last consumer),
// and its list scheduler orders every engine and DMA queue across op boundaries: the weights of a
// layer load while the layers before it compute.
//
// Each op family has an emitter file (emit_*.cpp) that registers OpLowerings: a check that says why
// the accelerator cannot run a node (partitioning falls back to the host with that reason), and an
// emit function that records the node's tile ops through a LoweringContext.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ops/op_support.h"
#include "support/diagnostic.h"
#include "targets/nc/compiler/device_tensor.h"
#include "targets/nc/machine/profile.h"
#include "targets/nc/tile/dsl.h"

namespace tessel::nc::compiler {

/// Columns per vector-engine instruction over one block: well under the 64K-element limit of
/// section 4.2, so that the chunks of one block pipeline across engines.
constexpr int64_t kColumnChunk = 8192;

/// --auto-cast: which ops compute in the narrow type. Matmul keeps activations in fp32 in SBUF and
/// casts the operands of matmuls and convolutions (fp32 accumulation in PSUM); All stores the
/// activations in the narrow type too; None computes everything in fp32.
enum class AutoCast { None, Matmul, All };

/// Device constants, encoded, by a key that says everything their bytes depend on: shared by the
/// compiles of one model's buckets (buckets.h) and by the shapes one nc target compiles (a decoder's
/// prefill and decode), so the weight blocks they lay out alike are made, encoded and held once.
/// It holds no bytes itself: an entry lives while a program's constant image holds it, and so while
/// that program's executable holds the weights the key names by address. Safe to use from several
/// compiles at once.
class ConstantCache {
 public:
  std::shared_ptr<const std::vector<uint8_t>> find(const std::string &key) const;
  void add(const std::string &key, const std::shared_ptr<const std::vector<uint8_t>> &bytes);

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::weak_ptr<const std::vector<uint8_t>>> bytes_;
};

struct LoweringOptions {
  AutoCast autoCast = AutoCast::Matmul;
  DType castType = DType::BF16;  // --auto-cast-type: BF16, F16 or F8E4M3.
  int cores = 1;                 // --cores: the chip's cores the program runs on (SPMD, one program each).
  int core = 0;                  // The core this lowering is for.
  // Where the program's constants go in HBM, from the same program of another bucket (buckets.h).
  const tile::ConstantLayout *pinnedConstants = nullptr;
  ConstantCache *constantCache = nullptr;  // Shared with the compiles of other buckets and shapes.
  // The machine, set by compileNc: what deviceUnsupportedReason measures tensors against (SBUF and
  // HBM sizes). Without it only the profile-independent checks run.
  const MachineProfile *profile = nullptr;
};

/// One layout decision of a device program, under the node that made it.
struct LayoutNote {
  std::string node;
  std::string text;
  bool relayout = false;  // The note is a relayout (counted by --emit=layout and --report).
};

/// What an emitter sees: the builder of the segment's program, the activations recorded so far, and
/// the constants it may place in HBM.
class LoweringContext {
 public:
  LoweringContext(tile::KernelBuilder &builder, const LoweringOptions &options);

  tile::KernelBuilder &builder() { return builder_; }
  const MachineProfile &profile() const { return builder_.profile(); }
  const LoweringOptions &options() const { return options_; }
  /// The operand dtype of PE work (matmuls, convolutions): F32 without auto-cast.
  DType matmulDtype() const;
  /// The storage dtype of activations in SBUF: the cast type with AutoCast::All, else F32.
  DType activationDtype() const;

  // --- Activations -----------------------------------------------------------------------------
  /// The activation `value` as recorded (possibly a view). Segment inputs load on first use, in
  /// standard form with their last axis on partitions (the axis rank-4 NCHW tensors use is 1).
  Expected<DeviceTensor> activation(const Value *value);
  /// `value` in standard form with `axis` on partitions, relaid out (and cached) when it is not. A
  /// segment input not loaded yet loads straight into that form.
  Expected<DeviceTensor> standard(const Value *value, int64_t axis);
  /// `axis`, unless it leaves a partition more than a quarter of SBUF while another axis spreads a
  /// tensor of `shape` over more partitions (a [1, 1, H, W] map: H rather than the one channel). What
  /// segment inputs and spilled activations load in when their reader takes any layout.
  int64_t roomyAxis(const std::vector<int64_t> &shape, int64_t axis) const;
  /// Bytes per partition of an activation of `shape` in standard form with `axis` on partitions.
  int64_t bytesPerPartition(const std::vector<int64_t> &shape, int64_t axis) const;
  /// Whether that takes more than a quarter of SBUF per partition.
  bool crowdsSbuf(const std::vector<int64_t> &shape, int64_t axis) const;
  /// Whether `value` is a segment input that no node has read yet (its layout is still open).
  bool isUnloadedInput(const Value *value) const;
  /// `value` in standard form with `axis` on partitions, in `dtype` (a cast copy, cached).
  Expected<DeviceTensor> standardAs(const Value *value, int64_t axis, DType dtype);
  /// Records the device form of a node output.
  void define(const Value *value, DeviceTensor tensor);
  /// A new standard-form tensor for `value`'s shape (activationDtype() unless given); not defined.
  DeviceTensor allocate(const Value *value, int64_t partitionAxis, std::optional<DType> dtype = std::nullopt);
  /// The row-major HBM form of an activation (segment inputs as fed; others stored once to scratch).
  Expected<tile::HbmView> hbmOf(const Value *value);
  /// `value` whole on every core: when it is split over the cores (DeviceTensor::shardedCores), each
  /// core zeroes the blocks it does not own and an all_reduce per block completes them (the storage
  /// is shared with the views of the same producer, which stay correct). For a reader that cannot take
  /// it split.
  Expected<DeviceTensor> unsplit(const Value *value);
  /// Spills an activation: stores it to HBM once and forgets its SBUF form, so that the allocator can
  /// reuse its space; the next reader reloads it. A split (sharded) tensor is not spilled.
  Status spill(const Value *value);
  /// Bytes per partition of the SBUF tiles holding `value`'s activation (0 when it has none).
  std::map<int32_t, int64_t> sbufTilesOf(const Value *value) const;
  /// Whether the node being lowered may write its output over the tiles of input `value`'s device
  /// form `tensor`: nothing read after this node (`value` itself, a view or a relayout sharing a
  /// tile) needs them. False until the driver says what is read later (setReadAfter).
  bool canOverwrite(const Value *value, const DeviceTensor &tensor) const;
  /// Loads row-major `src` (of `shape`) into a new standard-form tensor with `axis` on partitions.
  DeviceTensor loadStandard(const std::string &name, const tile::HbmView &src, const std::vector<int64_t> &shape,
                            int64_t axis, DType dtype);

  // --- Constants -------------------------------------------------------------------------------
  /// The initializer of `value`, or null when it is not a constant.
  const Tensor *constant(const Value *value) const;
  /// A constant's elements as floats (any numeric dtype).
  std::vector<float> constantFloats(const Value *value) const;
  /// Places `values` (row-major, laid out as the emitter wants them) in HBM as `dtype`; the data goes
  /// into the program's HBM image. `name` must be unique in the segment (prefix it with the node's).
  tile::HbmView constantHbm(const std::string &name, DType dtype, const std::vector<int64_t> &shape,
                            std::vector<float> values);
  /// The same for a constant whose bytes depend only on `recipe` (with its dtype and shape): made by
  /// `values` unless the options' constant cache has it already.
  tile::HbmView constantHbm(const std::string &name, DType dtype, const std::vector<int64_t> &shape,
                            const std::string &recipe, const std::function<std::vector<float>()> &values);
  /// Per-partition scalars: values[i] at global partition i, as [P, 1] f32 SBUF views (one per block
  /// of 128). They are columns of shared pool tiles, so one DMA brings many vectors (a [P, 1] load
  /// alone would spend a DMA's fixed costs on 4 bytes per partition).
  std::vector<tile::TileView> channelVector(const std::vector<float> &values);
  /// A [partitions, partitions] tile of `value` in `dtype` (e.g. all ones for PE reductions), cached.
  tile::TileView constantTile(float value, DType dtype);
  /// `row` ([1, n] f32 on one partition, n <= a PSUM bank) on every partition, as a new [P, n] f32 SBUF
  /// tile: an all-ones matmul of one contraction row. What a value computed at run time (a scale)
  /// becomes to act as per-partition scalars.
  tile::TileView broadcastRow(const tile::TileView &row, const std::string &name);
  /// The [partitions, partitions] identity in `dtype`, made once per program (makeIdentity) for the
  /// depthwise diagonals. Attention makes its own per node: one tile live across a whole transformer
  /// moved its allocation and cost BERT-base 2% on nc-v2 and GPT-2 3% on nc-v3.
  tile::TileView identity(DType dtype);

  /// The error an emitter returns for a node it cannot lower after all (names the node and op).
  Status unsupported(const Node &node, const std::string &reason) const;

  // --- Launch registers and buffers written in place -----------------------------------------
  /// The launch register holding `value` (OpLowering::launchInput), or -1.
  int launchRegister(const Value *value) const;
  /// Says that segment output `output` is segment input `input`'s HBM buffer, updated in place: the
  /// driver stores nothing for it.
  void writeInPlace(const Value *output, const Value *input) { inPlace_[output] = input; }
  /// The input whose buffer `output` is (writeInPlace), or null.
  const Value *inPlaceInputOf(const Value *output) const;

  // --- Used by the driver ----------------------------------------------------------------------
  /// The node whose emit comes next, as `--emit=layout` names it ("stage outputs" for the final stores).
  void beginNode(std::string label) { currentNode_ = std::move(label); }
  /// Where each activation went, in the order lowering decided it: the loads of stage inputs with
  /// the axis on partitions, each node output's placement, and every relayout, cast copy and reload
  /// with how it is done (`--emit=layout`).
  const std::vector<LayoutNote> &layoutNotes() const { return layoutNotes_; }
  /// A segment input, fed in HBM row-major as `dtype`.
  void bindInput(const Value *value, DType dtype);
  /// A segment input the program receives as launch register `index`.
  void bindLaunchRegister(const Value *value, int index) { launchRegisters_[value] = index; }
  /// Whether a value is read after the node being lowered (by a later node, or as a segment output).
  void setReadAfter(std::function<bool(const Value *)> readAfter) { readAfter_ = std::move(readAfter); }
  /// The values the stage stores for the host or a later stage: whole ones (a split tensor stays inside).
  void setStageOutputs(std::set<const Value *> outputs) { stageOutputs_ = std::move(outputs); }
  bool isStageOutput(const Value *value) const { return stageOutputs_.count(value) > 0; }
  struct ConstantData {
    int32_t tensor = -1;          // HBM tensor id in the kernel.
    DType dtype = DType::F32;
    std::vector<float> values;
    std::shared_ptr<const std::vector<uint8_t>> encoded;  // The bytes, when made already (cached).
  };
  const std::vector<ConstantData> &constants() const { return constants_; }
  const std::map<const Value *, tile::HbmView> &inputs() const { return inputs_; }

 private:
  std::optional<DeviceTensor> standardByCopy(const DeviceTensor &tensor, int64_t axis);
  void noteLayout(std::string text, bool relayout = false) {
    layoutNotes_.push_back(LayoutNote{currentNode_, std::move(text), relayout});
  }
  Expected<DeviceTensor> relayout(const DeviceTensor &tensor, int64_t axis, const std::string &name);

  tile::KernelBuilder &builder_;
  LoweringOptions options_;
  std::map<const Value *, DeviceTensor> activations_;
  std::map<std::pair<const Value *, int64_t>, DeviceTensor> standardCache_;
  std::map<std::tuple<const Value *, int64_t, DType>, DeviceTensor> castCache_;
  std::map<const Value *, tile::HbmView> inputs_;
  std::map<const Value *, int> launchRegisters_;
  std::map<const Value *, const Value *> inPlace_;  // Output -> the input whose buffer it is.
  std::map<const Value *, tile::HbmView> hbmCache_;
  std::map<const Value *, tile::HbmView> spilled_;
  std::map<std::pair<float, DType>, tile::TileView> constantTiles_;
  std::map<DType, tile::TileView> identities_;
  std::vector<ConstantData> constants_;
  std::function<bool(const Value *)> readAfter_;
  std::set<const Value *> stageOutputs_;
  int scratchCount_ = 0;
  std::string currentNode_;
  std::vector<LayoutNote> layoutNotes_;
  struct VectorPool {
    tile::TileView tile;
    size_t constant = 0;   // Index into constants_ of its HBM data.
    int64_t used = 0;      // Columns handed out.
  };
  std::optional<VectorPool> vectorPool_;
};

/// The sizes of a value of static shape (partitioning admits no other on the device).
std::vector<int64_t> staticShape(const Value *value);

/// Bytes per partition of one partition block of a tensor of `sizes` with `partitionAxis` on the
/// partitions, in f32 (the widest dtype an activation is stored in): every other axis is on the free
/// dim. What the partition's SBUF checks add up.
int64_t f32BlockBytes(const std::vector<int64_t> &sizes, int64_t partitionAxis);
/// The shape of a value's HBM tensor: its own, [1] for a 0-d value, leading dims merged for one of
/// more than 4 dims (an HBM tensor has 1..4 dims; in SBUF a 0-d value is one element on one partition).
std::vector<int64_t> hbmShape(const std::vector<int64_t> &shape);

/// Stores `tensor` (any placement) to row-major `dst` in HBM.
Status storeToHbm(LoweringContext &ctx, const DeviceTensor &tensor, const tile::HbmView &dst);

/// How the accelerator runs one op.
struct OpLowering {
  std::string domain;  // "" for ai.onnx, "tessel" for fused ops.
  std::string opType;
  /// Why the accelerator cannot run `node`; empty when it can. The driver has already checked that
  /// every input and output is a float32 tensor of static shape.
  std::function<std::string(const Node &node, const LoweringOptions &options)> check;
  std::function<Status(LoweringContext &ctx, const Node &node)> emit;
  /// The input the op reads as a launch register (an int64 graph input of one element the host sets
  /// when it starts the program, e.g. a KV cache's write position), not as a tensor; -1 for none.
  int launchInput = -1;
  /// The input whose HBM buffer output 0 is, written in place (LoweringContext::writeInPlace): the
  /// partition runs the node after every other reader of that input, so none reads it overwritten.
  int inPlaceInput = -1;
};

/// The lowering of `node`'s op, or null.
const OpLowering *findOpLowering(const Node &node);
const OpLowering *findOpLowering(std::string_view domain, std::string_view opType);

/// The ops the accelerator never runs, and why (host_ops.def).
std::span<const OpReason> hostOnlyOps();
/// Why `opType` never runs on the accelerator, or "" when it has a lowering (or is unknown).
std::string_view hostOnlyReason(std::string_view domain, std::string_view opType);

/// Whether `value` can be a launch register: a graph input of one int64 element.
bool isLaunchValue(const Value &value);

/// Whether tessel Attention `node` can compute only the heads of each core when its Q arrives split
/// over `cores` cores by 128-feature tiles, tile t on core t % cores (tensor parallelism by heads): its
/// heads form packs the heads' outputs into tiles (D = Dv dividing the partitions), each on the core
/// of its Q head, so the output stays split for a row-parallel matmul after it (emit_attention.cpp).
/// With `input` (0, 1 or 2: Q, K or V) at feature `offset` of a split producer's output, also whether
/// that input's heads lie on the cores of the query heads that read them.
bool attentionSplitsByHeads(const MachineProfile &profile, const Node &node, int cores, int input = 0,
                            int64_t offset = 0);

/// Why `node` must run on the host ("" when the accelerator can run it).
std::string deviceUnsupportedReason(const Node &node, const LoweringOptions &options);

// Registration: emit_<family>.cpp defines <family>Lowerings() (e.g. emit_matmul.cpp: matmulLowerings()
// for MatMul, Gemm and FusedMatMul); the build lists the families from the files.
#define TESSEL_NC_EMITTER_FAMILY(family) std::vector<OpLowering> family##Lowerings();
#include "emitter_families.inc"
#undef TESSEL_NC_EMITTER_FAMILY

}  // namespace tessel::nc::compiler
