// A model compiled for the accelerator: the optimized graph, its partition into host and device
// stages, and per device stage one program (instructions, HBM layout, the constant image). run()
// executes the host stages on the reference interpreter and simulates the device stages, passing the
// values that cross between them through HBM; it returns the outputs with the simulated timelines.
// save() writes it as a .tsl artifact that `tessel run` and `tessel profile` load; the same input
// gives a byte-identical file.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "support/diagnostic.h"
#include <nlohmann/json_fwd.hpp>

#include "targets/nc/compiler/lowering.h"
#include "targets/nc/compiler/partition.h"
#include "targets/nc/machine/profile.h"
#include "targets/nc/sim/timeline.h"
#include "targets/nc/tile/compile.h"
#include "targets/ref/cast_check.h"
#include "targets/ref/interpreter.h"
#include "targets/target.h"

namespace tessel::nc::compiler {

class ArtifactWriter;
class ArtifactReader;

struct NcCompileOptions {
  std::string target = "nc-v2";  // A bundled profile name or a profile file.
  LoweringOptions lowering;
  int optLevel = 3;
  bool timePasses = false;        // Record the time of every pass and compiler stage.
  // Per program (in programs() order): where its constants go in HBM, from another bucket.
  std::vector<tile::ConstantLayout> constantLayouts;
};

/// One device stage's program.
struct DeviceProgram {
  std::vector<Instruction> program;
  std::vector<tile::HbmPlacement> hbmTensors;  // Every HBM tensor: inputs, constants, outputs, scratch.
  uint64_t hbmBytes = 0;
  // (offset, bytes) of constants; programs of other buckets may share the bytes.
  std::vector<std::pair<uint64_t, std::shared_ptr<const std::vector<uint8_t>>>> constantImage;
  std::vector<std::string> inputs, outputs;    // Value names bound to hbmTensors of the same name.
  std::vector<std::string> launchRegisters;    // Value names the host passes as launch registers 0, 1, ...
  // (output, input): outputs that are an input's HBM buffer, updated in place (a KV cache).
  std::vector<std::pair<std::string, std::string>> inPlaceOutputs;
  std::vector<int32_t> instructionNode;        // Per instruction: index into NcExecutable::nodeNames(), -1 = transfer.
  uint64_t peakSbufBytesPerPartition = 0, peakPsumBytesPerPartition = 0;
  uint64_t constantBytes = 0;                  // Weights and other constants in HBM.
  int spilledActivations = 0;                  // Activations moved to HBM between their uses.
  double estimatedNs = 0;                      // The list scheduler's estimate.
  double modelFlops = 0;                       // The stage's matmul, convolution and attention FLOPs.
  std::vector<LayoutNote> layout;              // Where lowering placed each activation (--emit=layout).

  /// The HBM tensor holding value `name` (an input, an output, or the input an output is written
  /// into in place), or null.
  const tile::HbmPlacement *placement(const std::string &name) const;

  /// Where its constants are in HBM, by name (for the same program of another bucket).
  tile::ConstantLayout constantLayout() const;
};

struct PassTime {
  std::string name;
  double ms = 0;
};

struct NcRunResult {
  NamedValues outputs;
  std::vector<Timeline> timelines;  // One per program (device stage x core), as programs() lists them.
  double deviceNs = 0;              // Sum over device stages of their slowest core's simulated time.
  double hostNs = 0;                // The host stages' time, measured on this host (not with timingOnly).
  double transferNs = 0;            // Device stages' inputs and outputs over the host link (profile hostLink),
                                    // but those a Residency keeps on the device.
};

class NcExecutable {
 public:
  /// Runs the model: host stages on the cpu target (timed), device stages in the simulator
  /// (timingOnly skips the numerics and the host stages, and returns no outputs). Values `residency`
  /// names do not cross the host link, and its moved bytes count as device time (HBM read and
  /// write). Not re-entrant: the host stages' plans have one arena each.
  Expected<NcRunResult> run(const NamedValues &feeds, bool timingOnly = false, const Residency &residency = {}) const;

  const Model &model() const { return model_; }
  const MachineProfile &profile() const { return profile_; }
  const NcCompileOptions &options() const { return options_; }
  /// Per device stage, one program per core (core 0 first).
  const std::vector<DeviceProgram> &programs() const { return programs_; }
  /// The FLOPs of the device stages' nodes as the model states them (MFU's numerator).
  double modelFlops() const;
  int cores() const { return options_.lowering.cores; }
  const std::vector<std::string> &nodeNames() const { return nodeNames_; }
  /// "device stage: N nodes; in: ...; out: ..." per stage, in order.
  const std::vector<std::string> &stageText() const { return stageText_; }
  const std::vector<Fallback> &fallbacks() const { return fallbacks_; }
  /// Whether node `index` (graph order) runs in a device stage.
  bool nodeOnDevice(size_t index) const;
  const std::vector<PassTime> &passTimes() const { return passTimes_; }
  double compileSeconds() const { return compileSeconds_; }

  /// Per host stage, in order: "cpu target (N steps)" or why it runs on the reference interpreter.
  std::vector<std::string> hostStagePlans() const;

  /// What one compiler stage decided, as text: "partition", "layout", "memory", "lowering",
  /// "schedule" or "asm" (stage_printers.cpp).
  Expected<std::string> emit(const std::string &stage) const;

  /// The compile report: stages and transfers, fallbacks, memory use per device stage.
  std::string report() const;

  Status save(const std::string &path) const;
  /// Its part of an artifact's header, with its blobs placed in `writer` (save() and buckets).
  Expected<nlohmann::json> describe(ArtifactWriter &writer) const;
  /// Reads back what describe() wrote.
  static Expected<std::unique_ptr<NcExecutable>> fromDescription(const nlohmann::json &header,
                                                                 const ArtifactReader &reader);

  friend Expected<std::unique_ptr<NcExecutable>> compileNc(Model model, const NcCompileOptions &options);
  friend Expected<std::unique_ptr<NcExecutable>> loadNcArtifact(const std::string &path);

  /// One stage in execution order.
  struct StageRef {
    bool onDevice = false;
    int program = -1;                    // Device: index into programs_ of core 0's program,
    int cores = 1;                       // followed by those of the other cores.
    std::vector<int64_t> nodes;          // Host: node indices (graph order) in execution order.
  };

 private:
  /// Plans every host stage on the cpu target (a model of its nodes, compiled by the cpu pipeline);
  /// one that does not plan (a value of unknown shape crosses into it) stays on the reference
  /// interpreter, with the reason. Made after compiling and after loading an artifact.
  void planHostStages();

  struct HostPlan {
    std::unique_ptr<CompiledModel> plan;  // Null: the reference interpreter runs the stage.
    std::vector<std::string> inputs, outputs;  // Value names, in the plan's order.
    std::string why;                      // The plan, or why there is none.
  };

  Model model_;
  MachineProfile profile_;
  NcCompileOptions options_;
  std::vector<StageRef> stages_;
  std::vector<DeviceProgram> programs_;
  std::vector<std::string> nodeNames_;
  std::vector<std::string> stageText_;
  std::vector<Fallback> fallbacks_;
  std::vector<PassTime> passTimes_;
  double compileSeconds_ = 0;
  mutable std::vector<HostPlan> hostPlans_;  // Per stage (empty for device stages); run() uses their arenas.
};

/// A byte count for people: "12.0 KiB", "3.4 MiB", "1.25 GiB".
std::string bytesText(uint64_t bytes);

/// Optimizes `model` (static input shapes) at options.optLevel, partitions it, lowers and compiles
/// every device stage (compile.cpp). A node the accelerator cannot run goes to the host, with the
/// reason as its fallback. Errors: a model whose constants exceed the core's HBM (saying by how
/// much), a profile that does not load, and (Internal) a device stage that fails to compile although
/// the partition accepted its nodes.
Expected<std::unique_ptr<NcExecutable>> compileNc(Model model, const NcCompileOptions &options);

/// Loads an artifact written by NcExecutable::save.
Expected<std::unique_ptr<NcExecutable>> loadNcArtifact(const std::string &path);
/// True when `path` starts with the nc artifact magic.
bool isNcArtifact(const std::string &path);

/// The allowed error of a model output computed with `options`' casts, against the f32 reference.
ref::Tolerance toleranceFor(const LoweringOptions &options);

}  // namespace tessel::nc::compiler
