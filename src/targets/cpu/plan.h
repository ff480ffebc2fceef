// Inside a CpuExecutable: where every value lives at run time, the steps in order, and the
// constant store. Shared by executable.cpp (planning and running) and artifact.cpp (save/load).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/specialize.h"
#include "targets/cpu/executable.h"
#include "targets/cpu/step.h"

namespace tessel::cpu {

/// Where a value is at run time.
struct Slot {
  enum class Kind {
    Arena,     // A planned buffer in the arena (activations and fed inputs).
    Constant,  // An initializer, read in place.
    Dynamic,   // No static shape or no fixed-size dtype: a RuntimeValue held by the executor.
  };
  Kind kind = Kind::Arena;
  const Value *value = nullptr;
  DType dtype = DType::Undefined;
  std::vector<int64_t> sizes;
  size_t bytes = 0;
  int buffer = -1;                 // Arena: the buffer (several values share one through aliasing).
  size_t offset = 0;               // Arena: byte offset, filled in by the memory plan.
  const void *constant = nullptr;  // Constant: the data.
  int dynamic = -1;                // Dynamic: index into the executor's dynamic values.
};

struct PlannedStep {
  const Node *node = nullptr;
  std::unique_ptr<Step> step;      // Null for a node run by its reference kernel.
  std::vector<int> inputs;         // Slot per input (-1 = omitted).
  std::vector<int> outputs;        // Slot per output (-1 = omitted).
  std::vector<int> captured;       // Reference steps: outer-scope values read by subgraphs.
  std::vector<size_t> released;    // Constant inputs the step packed and never reads raw.
  std::vector<const void *> inputPointers;  // Fast steps: resolved once the arena exists.
  std::vector<void *> outputPointers;
  double totalMs = 0;
  int64_t runs = 0;
};

/// Packed constants: made at compile time, or mapped from an artifact.
class PackedConstants final : public ConstantStore {
 public:
  struct Entry {
    std::string node;
    std::string key;
    size_t bytes = 0;
    const std::byte *data = nullptr;
    size_t fileOffset = 0;  // Where it lies in the artifact it was loaded from.
  };

  Expected<const std::byte *> packed(const std::string &node, std::string_view key, size_t bytes,
                                     const std::function<void(std::byte *)> &fill) override;

  /// Switches to reading from `entries` (an artifact's table, data already mapped). A store that
  /// `grows` still packs what the table lacks (plans made after loading, for new shapes).
  void useLoaded(std::vector<Entry> entries, std::shared_ptr<Storage> file, bool grows = false);

  const std::vector<Entry> &entries() const { return entries_; }
  size_t totalBytes() const;

 private:
  struct AlignedDelete {
    void operator()(std::byte *p) const { std::free(p); }
  };
  bool loaded_ = false;
  bool grows_ = false;
  std::vector<Entry> entries_;
  std::vector<std::unique_ptr<std::byte, AlignedDelete>> owned_;
  std::shared_ptr<Storage> file_;
};

struct CpuExecutable::Impl {
  Model model;
  CpuCompileOptions options;
  std::vector<Slot> slots;
  std::map<const Value *, int> slotOf;
  std::vector<PlannedStep> steps;
  std::vector<int> inputSlots;   // Per graph input (fed or defaulted).
  std::vector<int> outputSlots;  // Per graph output.
  PackedConstants constants;  // The top-level plan's store; nested plans reach it through `store`.
  PackedConstants *sharedConstants = nullptr;     // A plan per shape: the store all of them share.
  ConstantStore *store = nullptr;                 // Where lowering packs; &constants unless nested.
  std::unique_ptr<ConstantStore> scopedStore;     // A nested plan's view of the outer store.
  std::unique_ptr<ThreadPool> ownedPool;
  ThreadPool *pool = nullptr;                     // ownedPool, or the outer plan's for a nested one.
  std::unique_ptr<std::byte, void (*)(void *)> arena{nullptr, std::free};
  std::unique_ptr<std::byte, void (*)(void *)> scratch{nullptr, std::free};
  size_t scratchBytes = 0;
  std::vector<RuntimeValue> dynamicValues;
  CpuPlanSummary summary;
  bool profiling = false;

  /// Lowers every node, plans memory, allocates the arena. Runs on a model whose passes ran. A
  /// nested plan (an If branch) has `pool` and `store` set before.
  Status plan();
  /// Runs the steps in order over the arena (inputs already in place).
  Status execute();
  Status runReferenceStep(PlannedStep &step);
};

/// Optimizes a model whose inputs have static shapes and plans it; `pool` and `shared` (either may
/// be null) are the thread pool and the packed-constant store the plan uses instead of its own.
Expected<std::unique_ptr<CpuExecutable>> planStaticModel(Model model, const CpuCompileOptions &options, ThreadPool *pool,
                                                         PackedConstants *shared);

/// What a .tsl artifact holds (artifact.cpp).
struct CpuArtifact {
  Model model;
  std::vector<PackedConstants::Entry> packed;  // Data in the mapped file.
  std::shared_ptr<Storage> file;
  int optLevel = 3;
  GemmOperands products = GemmOperands::F32;  // The auto-cast it was compiled with.
  bool castEverywhere = true;
  bool dynamic = false;  // Written by DynamicCpuExecutable: the graph keeps symbolic dims.
  DimRanges ranges;
};
Expected<CpuArtifact> readCpuArtifact(const std::string &path);
/// The plan of a static artifact read from `path`.
Expected<std::unique_ptr<CpuExecutable>> planArtifact(CpuArtifact artifact, const std::string &path,
                                                      const CpuCompileOptions &options);
/// `ranges` non-null marks a dynamic artifact. Records options.optLevel and options.products.
Status writeCpuArtifact(const std::string &path, const Model &model, const PackedConstants &constants,
                        const CpuCompileOptions &options, const DimRanges *ranges);

}  // namespace tessel::cpu
