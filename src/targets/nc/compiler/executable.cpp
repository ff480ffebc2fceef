// Running a compiled model (compile.cpp makes it) and its artifact; see executable.h. The artifact is an
// artifact_io.h container with magic "TSLNC002" whose header names the profile, the stages, and per
// program its HBM layout and its blobs (encoded instructions, constant image entries), and holds the
// optimized graph (with its f32 weights, which `tessel run` checks against). Compiling twice gives
// the same bytes.
#include "targets/nc/compiler/executable.h"

#include "targets/nc/compiler/artifact_io.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"
#include "targets/cpu/subgraph.h"
#include "targets/cpu/target.h"
#include "targets/nc/isa/encoding.h"
#include "targets/nc/kernels/runner.h"
#include "targets/nc/sim/simulator.h"
#include "targets/nc/tile/emit.h"

namespace tessel::nc::compiler {
namespace {

// 002: large initializers of the graph are blobs of their own (artifact_io.h).
constexpr ArtifactMagic kMagic = {'T', 'S', 'L', 'N', 'C', '0', '0', '2'};

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

std::string bytesText(uint64_t bytes) {
  if (bytes >= (1ull << 30)) return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1ull << 30));
  if (bytes >= (1ull << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1ull << 20));
  return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024);
}

const tile::HbmPlacement *DeviceProgram::placement(const std::string &name) const {
  std::string buffer = name;
  for (const auto &[output, input] : inPlaceOutputs)
    if (output == name) buffer = input;
  for (const tile::HbmPlacement &p : hbmTensors)
    if (p.name == buffer) return &p;
  return nullptr;
}

tile::ConstantLayout DeviceProgram::constantLayout() const {
  std::set<uint64_t> constantOffsets;
  for (const auto &[offset, bytes] : constantImage) constantOffsets.insert(offset);
  tile::ConstantLayout layout;
  for (const tile::HbmPlacement &t : hbmTensors) {
    if (!constantOffsets.count(t.offsetBytes) || t.isOutput) continue;
    layout[t.name] = {t.offsetBytes, tile::hbmFootprint(t.dtype, t.shape)};
  }
  return layout;
}

ref::Tolerance toleranceFor(const LoweringOptions &options) {
  if (options.autoCast == AutoCast::None) return {1e-4, 1e-3};
  switch (options.castType) {
    case DType::F8E4M3: return {1e-1, 1.5e-1};
    case DType::F16: return {5e-3, 1e-2};
    default: return {2e-2, 5e-2};  // bf16: 8 bits of mantissa over chains of K-long dot products.
  }
}

void NcExecutable::planHostStages() {
  const Graph &graph = *model_.graph;
  std::vector<const Node *> nodes;
  for (const auto &node : graph.nodes()) nodes.push_back(node.get());
  // The stage each node runs in, to find the values a host stage hands to later stages.
  std::map<const Node *, size_t> stageOf;
  for (size_t s = 0; s < stages_.size(); ++s)
    for (int64_t index : stages_[s].nodes)
      if (index >= 0 && index < static_cast<int64_t>(nodes.size())) stageOf[nodes[static_cast<size_t>(index)]] = s;
  hostPlans_.clear();
  hostPlans_.resize(stages_.size());
  const std::unique_ptr<Target> cpu = cpu::makeTarget();
  for (size_t s = 0; s < stages_.size(); ++s) {
    if (stages_[s].onDevice) continue;
    HostPlan &host = hostPlans_[s];
    std::vector<const Node *> stageNodes;
    for (int64_t index : stages_[s].nodes)
      if (index >= 0 && index < static_cast<int64_t>(nodes.size())) stageNodes.push_back(nodes[static_cast<size_t>(index)]);
    std::vector<const Value *> outputs;
    for (const Node *node : stageNodes)
      for (const Value *out : node->outputs()) {
        if (!out) continue;
        bool needed = std::find(graph.outputs().begin(), graph.outputs().end(), out) != graph.outputs().end();
        for (const Node *user : nodes)
          if (!needed && (!stageOf.count(user) || stageOf.at(user) != s)) {
            const std::vector<const Value *> reads = valuesRead(*user, graph);
            needed = std::find(reads.begin(), reads.end(), out) != reads.end();
          }
        if (needed) outputs.push_back(out);
      }
    std::vector<const Value *> inputsFrom;
    Model stage = cpu::nodesModel(model_, stageNodes, outputs, inputsFrom);
    const Value *unsized = nullptr;
    for (const Value *in : stage.graph->inputs())
      if (!unsized && (!in->type().isTensor() || !in->type().shape().isStatic())) unsized = in;
    if (unsized) {
      host.why = fmt::format("the reference interpreter: '{}' has no static shape ({})", unsized->name(), unsized->type().str());
      continue;
    }
    TargetOptions options;
    options.optLevel = options_.optLevel;
    auto plan = cpu->compile(std::move(stage), options);
    if (!plan.ok()) {
      host.why = fmt::format("the reference interpreter: the cpu target did not plan it: {}", plan.diag().message);
      continue;
    }
    host.why = fmt::format("the cpu target ({} steps)", (*plan)->planStats().steps);
    host.plan = std::move(*plan);
    for (const Value *in : inputsFrom) host.inputs.push_back(in->name());
    for (const Value *out : outputs) host.outputs.push_back(out->name());
  }
}

std::vector<std::string> NcExecutable::hostStagePlans() const {
  std::vector<std::string> plans;
  for (size_t s = 0; s < stages_.size() && s < hostPlans_.size(); ++s)
    if (!stages_[s].onDevice) plans.push_back(hostPlans_[s].why);
  return plans;
}

double NcExecutable::modelFlops() const {
  double total = 0;
  for (const StageRef &stage : stages_)
    if (stage.onDevice) total += programs_[static_cast<size_t>(stage.program)].modelFlops;
  return total;
}

bool NcExecutable::nodeOnDevice(size_t index) const {
  const int64_t node = static_cast<int64_t>(index);
  for (const StageRef &stage : stages_)
    if (!stage.onDevice && std::find(stage.nodes.begin(), stage.nodes.end(), node) != stage.nodes.end()) return false;
  return true;
}

Expected<NcRunResult> NcExecutable::run(const NamedValues &feeds, bool timingOnly, const Residency &residency) const {
  const Graph &graph = *model_.graph;
  std::map<std::string, RuntimeValue> env;
  for (const auto &[name, value] : feeds) env[name] = value;
  std::vector<const Node *> nodes;
  for (const auto &node : graph.nodes()) nodes.push_back(node.get());
  ReferenceInterpreter interpreter(model_);
  NcRunResult result;
  const auto resident = [&](const std::string &name) {
    return std::find(residency.values.begin(), residency.values.end(), name) != residency.values.end();
  };
  // Buffer-to-buffer copies on the device before the run: each byte read and written once over HBM.
  if (residency.movedBytes > 0)
    result.deviceNs += profile_.dma.triggerNs + 2.0 * static_cast<double>(residency.movedBytes) / profile_.hbm.bytesPerNsPerCore;

  auto valueOf = [&](const Value *v) -> Expected<RuntimeValue> {
    if (auto it = env.find(v->name()); it != env.end()) return it->second;
    if (v->hasInitializer()) return RuntimeValue(v->initializer());
    return makeError(ErrorCode::InvalidArgument, "value '{}' was not fed or computed", v->name());
  };

  for (size_t stageIndex = 0; stageIndex < stages_.size(); ++stageIndex) {
    const StageRef &stage = stages_[stageIndex];
    if (!stage.onDevice) {
      if (timingOnly) continue;  // Only device time is simulated.
      const Clock::time_point hostStart = Clock::now();
      if (stageIndex < hostPlans_.size() && hostPlans_[stageIndex].plan) {
        HostPlan &host = hostPlans_[stageIndex];
        NamedValues stageFeeds;
        for (const std::string &name : host.inputs) {
          TESSEL_ASSIGN_OR_RETURN(RuntimeValue v, valueOf(graph.findValue(name)));
          stageFeeds.emplace_back(name, std::move(v));
        }
        TESSEL_ASSIGN_OR_RETURN(NamedValues outs, host.plan->run(stageFeeds));
        for (size_t i = 0; i < outs.size() && i < host.outputs.size(); ++i) env[host.outputs[i]] = std::move(outs[i].second);
        result.hostNs += msSince(hostStart) * 1e6;
        continue;
      }
      for (int64_t index : stage.nodes) {
        if (index < 0 || index >= static_cast<int64_t>(nodes.size()))
          return makeError(ErrorCode::InvalidModel, "host stage names node #{}; the graph has {}", index, nodes.size());
        const Node *node = nodes[static_cast<size_t>(index)];
        std::vector<std::pair<const Value *, RuntimeValue>> values;
        for (const Value *in : valuesRead(*node, graph)) {  // A subgraph's captures too.
          TESSEL_ASSIGN_OR_RETURN(RuntimeValue v, valueOf(in));
          values.emplace_back(in, std::move(v));
        }
        TESSEL_ASSIGN_OR_RETURN(std::vector<RuntimeValue> outs, interpreter.runSingleNode(*node, std::move(values)));
        for (size_t i = 0; i < outs.size() && i < node->outputs().size(); ++i)
          if (node->output(i)) env[node->output(i)->name()] = std::move(outs[i]);
      }
      result.hostNs += msSince(hostStart) * 1e6;
      continue;
    }
    // Every core gets the stage's inputs and its own constants; the outputs come from core 0 (a
    // sharded program leaves them complete on every core).
    std::vector<std::vector<Instruction>> programs;
    std::vector<std::unique_ptr<MachineState>> states;
    std::vector<MachineState *> statePointers;
    for (int core = 0; core < stage.cores; ++core) {
      const DeviceProgram &prog = programs_[static_cast<size_t>(stage.program + core)];
      programs.push_back(prog.program);
      if (timingOnly) continue;
      auto state = std::make_unique<MachineState>(profile_, prog.hbmBytes);
      for (const auto &[offset, bytes] : prog.constantImage) TESSEL_RETURN_IF_ERROR(state->writeHbm(offset, *bytes));
      for (const std::string &name : prog.inputs) {
        TESSEL_ASSIGN_OR_RETURN(RuntimeValue value, valueOf(graph.findValue(name)));
        const Tensor &t = value.tensor();
        std::vector<float> floats(t.span<float>().begin(), t.span<float>().end());
        const tile::HbmPlacement *placement = nullptr;
        for (const tile::HbmPlacement &p : prog.hbmTensors)
          if (p.name == name) placement = &p;
        TESSEL_RETURN_IF_ERROR(state->writeHbm(placement->offsetBytes, kernels::encodeValues(DType::F32, floats)));
      }
      std::vector<int64_t> registers;
      for (const std::string &name : prog.launchRegisters) {
        TESSEL_ASSIGN_OR_RETURN(RuntimeValue value, valueOf(graph.findValue(name)));
        registers.push_back(value.tensor().data<int64_t>()[0]);
      }
      state->setLaunchRegisters(std::move(registers));
      statePointers.push_back(state.get());
      states.push_back(std::move(state));
    }
    SimulateOptions simOptions;
    simOptions.timingOnly = timingOnly;
    simOptions.detectRaces = false;
    std::vector<MachineState *> noStates(programs.size(), nullptr);
    TESSEL_ASSIGN_OR_RETURN(std::vector<SimulationResult> sims,
                            simulateCores(programs, profile_, timingOnly ? noStates : statePointers, simOptions));
    // Each of the stage's inputs comes from the host and each output goes back: one transfer each
    // over the link, whose bandwidth and latency the profile states; not those that stay on the
    // device between runs. An output written in place into an input is that input's buffer.
    const DeviceProgram &stageProgram = programs_[static_cast<size_t>(stage.program)];
    auto transfer = [&](const std::string &name) {
      const tile::HbmPlacement *p = stageProgram.placement(name);
      if (!p || resident(name)) return;
      const int64_t numel = std::accumulate(p->shape.begin(), p->shape.end(), int64_t{1}, std::multiplies<>());
      result.transferNs += profile_.hostLink.latencyNs + static_cast<double>(numel) * dtypeSizeBytes(p->dtype) / profile_.hostLink.bytesPerNs;
    };
    for (const std::string &name : stageProgram.inputs) transfer(name);
    for (const std::string &name : stageProgram.outputs) transfer(name);
    double stageNs = 0;
    for (int core = 0; core < stage.cores; ++core) {
      const DeviceProgram &prog = programs_[static_cast<size_t>(stage.program + core)];
      Timeline &timeline = sims[static_cast<size_t>(core)].timeline;
      for (TimelineEvent &event : timeline.events) {
        const int32_t node =
            event.instruction < prog.instructionNode.size() ? prog.instructionNode[event.instruction] : -1;
        event.origin = node >= 0 ? nodeNames_[static_cast<size_t>(node)] : "(host <-> device transfer)";
      }
      stageNs = std::max(stageNs, timeline.totalNs);
      result.timelines.push_back(std::move(timeline));
    }
    result.deviceNs += stageNs;
    if (timingOnly) continue;
    const DeviceProgram &first = programs_[static_cast<size_t>(stage.program)];
    for (const std::string &name : first.outputs) {
      const tile::HbmPlacement *p = first.placement(name);
      int64_t numel = 1;
      for (int64_t d : p->shape) numel *= d;
      std::vector<uint8_t> bytes(static_cast<size_t>(numel) * 4);
      TESSEL_RETURN_IF_ERROR(states[0]->readHbm(p->offsetBytes, bytes));
      // The HBM shape may differ from the value's (hbmShape: 0-d, more than 4 dims); the host sees its own.
      const Value *value = graph.findValue(name);
      std::vector<int64_t> shape = p->shape;
      if (auto sizes = value && value->type().isTensor() ? value->type().shape().sizes() : std::nullopt;
          sizes && std::accumulate(sizes->begin(), sizes->end(), int64_t{1}, std::multiplies<>()) == numel)
        shape = *sizes;
      env[name] = RuntimeValue(Tensor::fromVector<float>(shape, kernels::decodeValues(DType::F32, bytes)));
    }
  }
  if (timingOnly) return result;
  for (const Value *out : graph.outputs()) {
    TESSEL_ASSIGN_OR_RETURN(RuntimeValue v, valueOf(out));
    result.outputs.emplace_back(out->name(), std::move(v));
  }
  return result;
}

// ---- Artifact -------------------------------------------------------------------------------------

bool isNcArtifact(const std::string &path) { return hasMagic(path, kMagic); }

namespace {

const char *autoCastName(AutoCast a) { return a == AutoCast::None ? "none" : a == AutoCast::All ? "all" : "matmul"; }

}  // namespace

Expected<nlohmann::json> NcExecutable::describe(ArtifactWriter &writer) const {
  nlohmann::json header;
  TESSEL_ASSIGN_OR_RETURN(header["graph"], writer.placeModel(model_));
  header["target"] = options_.target;
  header["optLevel"] = options_.optLevel;
  header["cores"] = options_.lowering.cores;
  header["autoCast"] = autoCastName(options_.lowering.autoCast);
  header["castType"] = std::string(dtypeName(options_.lowering.castType));
  header["nodeNames"] = nodeNames_;
  header["stageText"] = stageText_;
  nlohmann::json stages = nlohmann::json::array();
  for (const StageRef &s : stages_)
    stages.push_back({{"device", s.onDevice}, {"program", s.program}, {"cores", s.cores}, {"nodes", s.nodes}});
  header["stages"] = stages;
  nlohmann::json fallbacks = nlohmann::json::array();
  for (const Fallback &f : fallbacks_) fallbacks.push_back({f.node, f.opType, f.reason});
  header["fallbacks"] = fallbacks;
  nlohmann::json programs = nlohmann::json::array();
  for (const DeviceProgram &prog : programs_) {
    nlohmann::json p;
    const std::vector<uint8_t> code = encodeProgram(prog.program);
    p["code"] = writer.place(std::string(code.begin(), code.end()));
    nlohmann::json tensors = nlohmann::json::array();
    for (const tile::HbmPlacement &t : prog.hbmTensors)
      tensors.push_back({{"name", t.name}, {"dtype", std::string(dtypeName(t.dtype))}, {"shape", t.shape},
                         {"offset", t.offsetBytes}, {"output", t.isOutput}});
    p["hbmTensors"] = tensors;
    p["hbmBytes"] = prog.hbmBytes;
    nlohmann::json image = nlohmann::json::array();
    for (const auto &[offset, bytes] : prog.constantImage) {
      nlohmann::json entry = writer.place(bytes->data(), bytes->size());
      entry["hbmOffset"] = offset;
      image.push_back(entry);
    }
    p["constants"] = image;
    p["inputs"] = prog.inputs;
    p["outputs"] = prog.outputs;
    if (!prog.launchRegisters.empty()) p["launch_registers"] = prog.launchRegisters;
    if (!prog.inPlaceOutputs.empty()) p["in_place_outputs"] = prog.inPlaceOutputs;
    p["instructionNode"] = prog.instructionNode;
    p["peakSbuf"] = prog.peakSbufBytesPerPartition;
    p["peakPsum"] = prog.peakPsumBytesPerPartition;
    p["constantBytes"] = prog.constantBytes;
    p["spilled"] = prog.spilledActivations;
    p["estimatedNs"] = prog.estimatedNs;
    p["modelFlops"] = prog.modelFlops;
    nlohmann::json layout = nlohmann::json::array();
    for (const LayoutNote &note : prog.layout) layout.push_back({note.node, note.text, note.relayout});
    p["layout"] = layout;
    programs.push_back(p);
  }
  header["programs"] = programs;
  return header;
}

Status NcExecutable::save(const std::string &path) const {
  ArtifactWriter writer;
  TESSEL_ASSIGN_OR_RETURN(nlohmann::json header, describe(writer));
  return writer.write(path, kMagic, header);
}

Expected<std::unique_ptr<NcExecutable>> NcExecutable::fromDescription(const nlohmann::json &header,
                                                                      const ArtifactReader &reader) {
  const std::string &path = reader.path();
  try {
    auto exe = std::make_unique<NcExecutable>();
    NcCompileOptions &options = exe->options_;
    options.target = header.at("target").get<std::string>();
    options.optLevel = header.at("optLevel").get<int>();
    options.lowering.cores = header.at("cores").get<int>();
    const std::string autoCast = header.at("autoCast").get<std::string>();
    options.lowering.autoCast = autoCast == "none" ? AutoCast::None : autoCast == "all" ? AutoCast::All : AutoCast::Matmul;
    const std::string castType = header.at("castType").get<std::string>();
    for (DType t : {DType::BF16, DType::F16, DType::F8E4M3})
      if (dtypeName(t) == castType) options.lowering.castType = t;
    TESSEL_ASSIGN_OR_RETURN(exe->profile_, loadProfile(options.target));
    TESSEL_ASSIGN_OR_RETURN(exe->model_, reader.model(header.at("graph")));
    exe->nodeNames_ = header.at("nodeNames").get<std::vector<std::string>>();
    exe->stageText_ = header.at("stageText").get<std::vector<std::string>>();
    for (const nlohmann::json &s : header.at("stages")) {
      NcExecutable::StageRef ref;
      ref.onDevice = s.at("device").get<bool>();
      ref.program = s.at("program").get<int>();
      ref.cores = s.at("cores").get<int>();
      ref.nodes = s.at("nodes").get<std::vector<int64_t>>();
      exe->stages_.push_back(std::move(ref));
    }
    for (const nlohmann::json &f : header.at("fallbacks"))
      exe->fallbacks_.push_back(Fallback{f.at(0).get<std::string>(), f.at(1).get<std::string>(), f.at(2).get<std::string>()});
    for (const nlohmann::json &p : header.at("programs")) {
      DeviceProgram prog;
      TESSEL_ASSIGN_OR_RETURN(std::string_view code, reader.blob(p.at("code")));
      TESSEL_ASSIGN_OR_RETURN(prog.program, decodeProgram(std::vector<uint8_t>(code.begin(), code.end())));
      for (const nlohmann::json &t : p.at("hbmTensors")) {
        tile::HbmPlacement placement;
        placement.name = t.at("name").get<std::string>();
        const std::string dtype = t.at("dtype").get<std::string>();
        for (int d = 0; d < kNumDTypes; ++d)
          if (dtypeName(static_cast<DType>(d)) == dtype) placement.dtype = static_cast<DType>(d);
        placement.shape = t.at("shape").get<std::vector<int64_t>>();
        placement.offsetBytes = t.at("offset").get<uint64_t>();
        placement.isOutput = t.at("output").get<bool>();
        prog.hbmTensors.push_back(std::move(placement));
      }
      prog.hbmBytes = p.at("hbmBytes").get<uint64_t>();
      for (const nlohmann::json &c : p.at("constants")) {
        TESSEL_ASSIGN_OR_RETURN(std::string_view bytes, reader.blob(c));
        prog.constantImage.emplace_back(c.at("hbmOffset").get<uint64_t>(), reader.sharedBytes(c, bytes));
      }
      prog.inputs = p.at("inputs").get<std::vector<std::string>>();
      prog.outputs = p.at("outputs").get<std::vector<std::string>>();
      prog.launchRegisters = p.value("launch_registers", std::vector<std::string>{});
      prog.inPlaceOutputs = p.value("in_place_outputs", std::vector<std::pair<std::string, std::string>>{});
      prog.instructionNode = p.at("instructionNode").get<std::vector<int32_t>>();
      prog.peakSbufBytesPerPartition = p.at("peakSbuf").get<uint64_t>();
      prog.peakPsumBytesPerPartition = p.at("peakPsum").get<uint64_t>();
      prog.constantBytes = p.at("constantBytes").get<uint64_t>();
      prog.spilledActivations = p.at("spilled").get<int>();
      prog.estimatedNs = p.at("estimatedNs").get<double>();
      prog.modelFlops = p.at("modelFlops").get<double>();
      for (const nlohmann::json &note : p.at("layout"))
        prog.layout.push_back(LayoutNote{note.at(0).get<std::string>(), note.at(1).get<std::string>(), note.at(2).get<bool>()});
      exe->programs_.push_back(std::move(prog));
    }
    exe->planHostStages();
    return exe;
  } catch (const nlohmann::json::exception &e) {
    return makeFileError(ErrorCode::ParseError, path, "malformed header: {}", e.what());
  }
}

Expected<std::unique_ptr<NcExecutable>> loadNcArtifact(const std::string &path) {
  TESSEL_ASSIGN_OR_RETURN(ArtifactReader reader, ArtifactReader::open(path, kMagic, "an nc artifact"));
  return NcExecutable::fromDescription(reader.header(), reader);
}

}  // namespace tessel::nc::compiler
