// A cpu model whose inputs keep symbolic dims (batch, sequence, image size): one artifact for every
// shape. The passes that fold weights run once on the symbolic graph; each new set of input sizes
// gets its own plan on first use — an in-memory copy of that graph with the sizes fixed, the whole
// pipeline (so shape computations fold, fusions see static types, kernels are chosen for the
// concrete shape), lowering, a memory plan — cached by shape. Every plan packs its weights into one
// store, so each weight is packed once.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "ir/specialize.h"
#include "targets/cpu/executable.h"

namespace tessel::cpu {

class PackedConstants;
struct CpuArtifact;

class DynamicCpuExecutable {
 public:
  ~DynamicCpuExecutable();

  /// Folds the weights of `model` (symbolic dims kept); plans nothing yet. `ranges`
  /// bound the symbolic dims, checked at every run.
  static Expected<std::unique_ptr<DynamicCpuExecutable>> compile(Model model, const CpuCompileOptions &options,
                                                                 DimRanges ranges);
  /// Takes a dynamic artifact (one save() wrote) read from `path`; the packed weights it holds stay
  /// memory-mapped, and plans for new shapes pack what it lacks.
  static Expected<std::unique_ptr<DynamicCpuExecutable>> load(CpuArtifact artifact, const std::string &path,
                                                              const CpuCompileOptions &options);

  /// Checks the feeds' shapes (ranges, dims shared between inputs), takes or makes their plan, runs it.
  Expected<NamedValues> run(const NamedValues &feeds);
  /// The plan for feeds of these shapes, made now if there is none yet.
  Expected<CpuExecutable *> planFor(const NamedValues &feeds);

  /// Writes one artifact: the symbolic graph, the ranges and every weight packed so far.
  Status save(const std::string &path) const;

  const Model &model() const { return model_; }  // The optimized graph, symbolic dims kept.
  const DimRanges &ranges() const { return ranges_; }
  CpuExecutable *lastPlan() const { return last_; }
  int planCount() const { return static_cast<int>(plans_.size()); }
  int64_t planHits() const { return hits_; }
  double lastPlanMs() const { return lastPlanMs_; }
  size_t packedBytes() const;
  ThreadPool &pool() { return *pool_; }
  void setProfiling(bool on);

 private:
  DynamicCpuExecutable(Model model, const CpuCompileOptions &options, DimRanges ranges);

  Model model_;
  CpuCompileOptions options_;
  DimRanges ranges_;
  std::unique_ptr<ThreadPool> pool_;              // Shared by every plan.
  std::unique_ptr<PackedConstants> constants_;    // Shared by every plan.
  std::map<std::string, std::unique_ptr<CpuExecutable>> plans_;  // By input sizes.
  CpuExecutable *last_ = nullptr;
  int64_t hits_ = 0;
  double lastPlanMs_ = 0;
  bool profiling_ = false;
};

}  // namespace tessel::cpu
