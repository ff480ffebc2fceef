// A model compiled for the cpu target: the optimized graph, one Step per node, packed constants,
// and a static memory plan (one arena; liveness-based reuse; in-place and aliasing where legal).
// Built by compileCpu() from a model with static input shapes, or loaded from a .tsl artifact.
// run() allocates nothing on the fast path; it takes feeds by name and returns the graph outputs.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "support/diagnostic.h"
#include "support/thread_pool.h"
#include "targets/cpu/kernels/gemm_microkernel.h"
#include "targets/ref/interpreter.h"

namespace tessel::cpu {

struct CpuCompileOptions {
  int optLevel = 3;  // The pass pipeline (passes/pipelines.h) run before lowering.
  int threads = 0;   // Thread pool size; 0 = all hardware threads.
  // Auto-cast: the type matmul and convolution products take (bf16 where the host has a variant
  // and the step's operands allow it; every sum and everything else stays float32).
  GemmOperands products = GemmOperands::F32;
  // Every product takes it, or (false) only products of at most mr rows, whose weights bound them:
  // where the host's bf16 dot product is slower than its fp32 FMA (castEverywhereOnThisHost()).
  bool castEverywhere = true;
};

/// Whether auto-cast pays on every product here: the host's bf16 dot product is at least as fast
/// as its fp32 FMA (measured once), or TESSEL_BF16_PRODUCTS=always asks for it regardless (tests).
bool castEverywhereOnThisHost();

/// Time spent in one step over the runs a profile covers.
struct StepProfile {
  std::string node;        // The (fused) node's name.
  std::string opType;      // e.g. "FusedConv".
  std::string kernel;      // Step::kernelName().
  std::string outputType;  // e.g. "f32[1,64,56,56]".
  double totalMs = 0;
  int64_t runs = 0;
};

/// What the compiler decided, for `tessel compile --report` and tests.
struct CpuPlanSummary {
  int steps = 0;               // Steps that run (aliases excluded).
  int fallbackSteps = 0;       // Steps running a reference kernel.
  std::vector<std::string> fallbacks;  // "node 'x' (Op): reason" per reference step.
  size_t arenaBytes = 0;       // The planned activation arena.
  size_t unplannedBytes = 0;   // Sum of all activation sizes had nothing been reused.
  size_t constantBytes = 0;    // Packed constants plus raw constants still read.
  bool promotedHalf = false;   // fp16/bf16 values compute in float32 (the promote-half pass).
  GemmOperands products = GemmOperands::F32;  // What auto-cast asked for.
  bool castEverywhere = true;  // CpuCompileOptions::castEverywhere.
  std::vector<std::string> bf16Nodes;  // The nodes whose products take bf16 operands.
  int castableSteps = 0;       // Steps auto-cast could put on bf16 (matmuls, convolutions).
};

class CpuExecutable {
 public:
  ~CpuExecutable();

  /// Runs the plan. Feeds must match the compiled input names, dtypes and sizes.
  Expected<NamedValues> run(const NamedValues &feeds);

  /// Turns per-step timing on or off (off by default: it costs two clock reads per step).
  void setProfiling(bool on);
  /// Per-step times since profiling was turned on, in plan order.
  std::vector<StepProfile> profile() const;

  const Model &model() const;  // The optimized graph the plan was built from.
  const CpuPlanSummary &summary() const;
  ThreadPool &pool();

  /// Writes the artifact: optimized graph, plan, packed and raw constants (one file).
  Status save(const std::string &path) const;

  struct Impl;
  explicit CpuExecutable(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

/// Optimizes `model` at options.optLevel and plans it. Every graph input must have a static shape
/// (see specializeInputs); nodes the kernel library does not cover run their reference kernel.
Expected<std::unique_ptr<CpuExecutable>> compileCpu(Model model, const CpuCompileOptions &options);

/// Loads an artifact written by CpuExecutable::save; constants are memory-mapped from the file.
/// options.threads applies; options.optLevel is ignored (the graph is already optimized).
Expected<std::unique_ptr<CpuExecutable>> loadCpuArtifact(const std::string &path, const CpuCompileOptions &options);

/// True when `path` starts with the .tsl artifact magic.
bool isCpuArtifact(const std::string &path);

}  // namespace tessel::cpu
