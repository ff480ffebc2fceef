// Loading and validating machine profiles. A profile is JSON; every key is required (optional groups
// are written as null, so a typo in a user's copy is reported rather than silently defaulted), every
// size, count and rate must be positive, and each error names the file and the key path.
#include "targets/nc/machine/profile.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "targets/nc/machine/bundled_profiles.h"

namespace tessel::nc {
namespace {

using nlohmann::json;

/// Reads typed fields out of a JSON object; keeps the first error and keeps going (later reads of a
/// failed reader return zero values, which the caller discards).
class FieldReader {
 public:
  explicit FieldReader(std::string file) : file_(std::move(file)) {}

  bool failed() const { return error_.has_value(); }
  Diagnostic takeError() { return std::move(*error_); }

  /// A required object; a reference to an empty object when missing (after recording the error).
  const json &object(const json &parent, const std::string &path, const char *key) {
    const json *value = field(parent, path, key, "an object");
    if (value && !value->is_object()) wrongType(join(path, key), "an object", *value);
    return value && value->is_object() ? *value : emptyObject();
  }

  /// A required key holding an object or null; nullptr for null.
  const json *optionalObject(const json &parent, const std::string &path, const char *key) {
    const json *value = field(parent, path, key, "an object or null");
    if (!value || value->is_null()) return nullptr;
    if (!value->is_object()) {
      wrongType(join(path, key), "an object or null", *value);
      return nullptr;
    }
    return value;
  }

  int64_t positiveInt(const json &parent, const std::string &path, const char *key) {
    const json *value = field(parent, path, key, "an integer");
    if (!value) return 0;
    if (!value->is_number_integer()) return wrongType(join(path, key), "an integer", *value), 0;
    int64_t result = value->get<int64_t>();
    if (result <= 0) fail(fmt::format("{} must be positive; got {}", join(path, key), result));
    return result;
  }

  double positiveNumber(const json &parent, const std::string &path, const char *key) {
    double result = number(parent, path, key);
    if (!failed() && !(result > 0)) fail(fmt::format("{} must be positive; got {}", join(path, key), result));
    return result;
  }

  double nonNegativeNumber(const json &parent, const std::string &path, const char *key) {
    double result = number(parent, path, key);
    if (!failed() && !(result >= 0)) fail(fmt::format("{} must not be negative; got {}", join(path, key), result));
    return result;
  }

  /// A number in (0, 1]: an efficiency or a utilization.
  double fraction(const json &parent, const std::string &path, const char *key) {
    double result = number(parent, path, key);
    if (!failed() && !(result > 0 && result <= 1)) {
      fail(fmt::format("{} must be in (0, 1]; got {}", join(path, key), result));
    }
    return result;
  }

  /// A required key holding a positive number or null.
  std::optional<double> optionalPositiveNumber(const json &parent, const std::string &path, const char *key) {
    const json *value = field(parent, path, key, "a number or null");
    if (!value || value->is_null()) return std::nullopt;
    return positiveNumber(parent, path, key);
  }

  /// A required key holding a fraction or null.
  std::optional<double> optionalFraction(const json &parent, const std::string &path, const char *key) {
    const json *value = field(parent, path, key, "a number or null");
    if (!value || value->is_null()) return std::nullopt;
    return fraction(parent, path, key);
  }

  bool boolean(const json &parent, const std::string &path, const char *key) {
    const json *value = field(parent, path, key, "a boolean");
    if (!value) return false;
    if (!value->is_boolean()) return wrongType(join(path, key), "a boolean", *value), false;
    return value->get<bool>();
  }

  std::string string(const json &parent, const std::string &path, const char *key) {
    const json *value = field(parent, path, key, "a string");
    if (!value) return "";
    if (!value->is_string()) return wrongType(join(path, key), "a string", *value), "";
    return value->get<std::string>();
  }

  std::vector<int64_t> positiveIntList(const json &parent, const std::string &path, const char *key) {
    std::vector<int64_t> result;
    const json *value = list(parent, path, key, "a non-empty list of positive integers");
    for (size_t i = 0; value && i < value->size() && !failed(); ++i) {
      const json &item = (*value)[i];
      std::string itemPath = fmt::format("{}[{}]", join(path, key), i);
      if (!item.is_number_integer()) wrongType(itemPath, "an integer", item);
      else if (item.get<int64_t>() <= 0) fail(fmt::format("{} must be positive; got {}", itemPath, item.dump()));
      else result.push_back(item.get<int64_t>());
    }
    return result;
  }

  /// A non-empty list of strings, each one of `allowed` when that is not empty.
  std::vector<std::string> stringList(const json &parent, const std::string &path, const char *key,
                                      std::initializer_list<std::string_view> allowed = {}) {
    std::vector<std::string> result;
    const json *value = list(parent, path, key, "a non-empty list of strings");
    for (size_t i = 0; value && i < value->size() && !failed(); ++i) {
      const json &item = (*value)[i];
      std::string itemPath = fmt::format("{}[{}]", join(path, key), i);
      if (!item.is_string()) wrongType(itemPath, "a string", item);
      else if (allowed.size() > 0 && std::find(allowed.begin(), allowed.end(), item.get<std::string>()) == allowed.end())
        fail(fmt::format("{} must be one of {}; got {}", itemPath, fmt::join(allowed, ", "), item.dump()));
      else result.push_back(item.get<std::string>());
    }
    return result;
  }

  /// A non-empty list of [bytes, efficiency] pairs, bytes strictly ascending and positive, each
  /// efficiency in (0, 1].
  std::vector<DmaChunkEfficiency> efficiencyCurve(const json &parent, const std::string &path, const char *key) {
    std::vector<DmaChunkEfficiency> result;
    const json *value = list(parent, path, key, "a non-empty list of [bytes, efficiency] pairs");
    for (size_t i = 0; value && i < value->size() && !failed(); ++i) {
      const json &item = (*value)[i];
      std::string itemPath = fmt::format("{}[{}]", join(path, key), i);
      if (!item.is_array() || item.size() != 2 || !item[0].is_number_integer() || !item[1].is_number()) {
        wrongType(itemPath, "[bytes, efficiency]", item);
        break;
      }
      DmaChunkEfficiency point{item[0].get<int64_t>(), item[1].get<double>()};
      if (point.bytes <= 0 || (!result.empty() && point.bytes <= result.back().bytes))
        fail(fmt::format("{} bytes must be positive and ascending; got {}", itemPath, item.dump()));
      else if (!(point.efficiency > 0 && point.efficiency <= 1))
        fail(fmt::format("{} efficiency must be in (0, 1]; got {}", itemPath, item.dump()));
      else result.push_back(point);
    }
    return result;
  }

  /// A list of [engine, engine, resource] string triples.
  std::vector<PortConflict> conflictList(const json &parent, const std::string &path, const char *key) {
    std::vector<PortConflict> result;
    const json *value = field(parent, path, key, "a list");
    if (value && !value->is_array()) wrongType(join(path, key), "a list", *value);
    for (size_t i = 0; value && value->is_array() && i < value->size() && !failed(); ++i) {
      const json &item = (*value)[i];
      std::string itemPath = fmt::format("{}[{}]", join(path, key), i);
      bool valid = item.is_array() && item.size() == 3;
      for (size_t j = 0; valid && j < 3; ++j) valid = item[j].is_string();
      if (!valid) wrongType(itemPath, "[engine, engine, resource] strings", item);
      else result.push_back({item[0].get<std::string>(), item[1].get<std::string>(), item[2].get<std::string>()});
    }
    return result;
  }

 private:
  static std::string join(const std::string &path, const char *key) {
    return path.empty() ? std::string(key) : path + "." + key;
  }

  static const json &emptyObject() {
    static const json kEmpty = json::object();
    return kEmpty;
  }

  const json *field(const json &parent, const std::string &path, const char *key, const char *expected) {
    if (failed()) return nullptr;
    auto it = parent.find(key);
    if (it == parent.end()) {
      fail(fmt::format("{} is missing; expected {}", join(path, key), expected));
      return nullptr;
    }
    return &*it;
  }

  double number(const json &parent, const std::string &path, const char *key) {
    const json *value = field(parent, path, key, "a number");
    if (!value) return 0;
    if (!value->is_number()) return wrongType(join(path, key), "a number", *value), 0;
    return value->get<double>();
  }

  const json *list(const json &parent, const std::string &path, const char *key, const char *expected) {
    const json *value = field(parent, path, key, expected);
    if (value && (!value->is_array() || value->empty())) {
      wrongType(join(path, key), expected, *value);
      return nullptr;
    }
    return value;
  }

  void wrongType(const std::string &path, const char *expected, const json &got) {
    fail(fmt::format("{} must be {}; got {}", path, expected, got.dump()));
  }

  void fail(std::string message) {
    if (!error_) error_ = makeFileError(ErrorCode::InvalidArgument, file_, "{}", message);
  }

  std::string file_;
  std::optional<Diagnostic> error_;
};

void readEngines(FieldReader &r, const json &root, MachineProfile &p) {
  const json &pe = r.object(root, "", "pe");
  p.pe.clockGHz = r.positiveNumber(pe, "pe", "clockGHz");
  p.pe.rows = r.positiveInt(pe, "pe", "rows");
  p.pe.cols = r.positiveInt(pe, "pe", "cols");
  p.pe.mmMinIiCycles = r.positiveInt(pe, "pe", "mmMinIiCycles");
  p.pe.fp32Factor = r.positiveInt(pe, "pe", "fp32Factor");
  p.pe.loadStationarySpeedup = r.positiveInt(pe, "pe", "loadStationarySpeedup");
  p.pe.tileSizes = r.positiveIntList(pe, "pe", "tileSizes");
  p.pe.fp8DoubleRow = r.boolean(pe, "pe", "fp8DoubleRow");
  p.pe.transposeMode = r.boolean(pe, "pe", "transposeMode");
  p.pe.transposeFp32Speedup = r.positiveInt(pe, "pe", "transposeFp32Speedup");
  p.pe.pipeLatencyCycles = r.positiveInt(pe, "pe", "pipeLatencyCycles");
  const json &peak = r.object(pe, "pe", "statedPeakTflops");
  p.pe.statedPeakTflops = {r.positiveNumber(peak, "pe.statedPeakTflops", "bf16"),
                           r.positiveNumber(peak, "pe.statedPeakTflops", "fp8"),
                           r.positiveNumber(peak, "pe.statedPeakTflops", "fp32")};

  const json &dve = r.object(root, "", "dve");
  p.dve.clockGHz = r.positiveNumber(dve, "dve", "clockGHz");
  p.dve.lanes = r.positiveInt(dve, "dve", "lanes");
  p.dve.minIiCycles = r.positiveInt(dve, "dve", "minIiCycles");
  p.dve.smallDependencyOverheadCycles = r.positiveInt(dve, "dve", "smallDependencyOverheadCycles");
  p.dve.pipeLatencyCycles = r.positiveInt(dve, "dve", "pipeLatencyCycles");
  const json &perf = r.object(dve, "dve", "perfModeSpeedup");
  const std::string perfPath = "dve.perfModeSpeedup";
  p.dve.perfModeSpeedup = {r.positiveNumber(perf, perfPath, "copyOrTensorScalarBf16SbufContiguous"),
                           r.positiveNumber(perf, perfPath, "copyOrTensorScalarBf16Other"),
                           r.positiveNumber(perf, perfPath, "tensorTensorBf16Sbuf")};

  const json &act = r.object(root, "", "act");
  p.act.clockGHz = r.positiveNumber(act, "act", "clockGHz");
  p.act.lanes = r.positiveInt(act, "act", "lanes");
  p.act.minIiCycles = r.positiveInt(act, "act", "minIiCycles");
  p.act.readAccumulatorCycles = r.positiveInt(act, "act", "readAccumulatorCycles");
  p.act.pipeLatencyCycles = r.positiveInt(act, "act", "pipeLatencyCycles");
  p.act.biasImmediate = r.boolean(act, "act", "biasImmediate");
  p.act.reduceOps = r.stringList(act, "act", "reduceOps", {"add", "max", "min", "mul"});

  const json &pool = r.object(root, "", "pool");
  p.pool.clockGHz = r.positiveNumber(pool, "pool", "clockGHz");
  p.pool.cores = r.positiveInt(pool, "pool", "cores");
  p.pool.partitionsPerCore = r.positiveInt(pool, "pool", "partitionsPerCore");
  p.pool.simdBits = r.positiveInt(pool, "pool", "simdBits");
  p.pool.tcmBytes = r.positiveInt(pool, "pool", "tcmBytes");
  p.pool.startCycles = r.positiveInt(pool, "pool", "startCycles");
  p.pool.psumAccess = r.boolean(pool, "pool", "psumAccess");
  p.pool.integratedDmaBytesPerNs = r.optionalPositiveNumber(pool, "pool", "integratedDmaBytesPerNs");

  p.sp.clockGHz = r.positiveNumber(r.object(root, "", "sp"), "sp", "clockGHz");
}

void readDma(FieldReader &r, const json &root, MachineProfile &p) {
  const json &dma = r.object(root, "", "dma");
  p.dma.enginesPerCore = r.positiveInt(dma, "dma", "enginesPerCore");
  p.dma.queuesPerEngine = r.positiveInt(dma, "dma", "queuesPerEngine");
  p.dma.bytesPerNsPerEngine = r.positiveNumber(dma, "dma", "bytesPerNsPerEngine");
  p.dma.peakBytesPerNsPerEngine = r.positiveNumber(dma, "dma", "peakBytesPerNsPerEngine");
  p.dma.triggerNs = r.nonNegativeNumber(dma, "dma", "triggerNs");
  p.dma.chunkMinNs = r.nonNegativeNumber(dma, "dma", "chunkMinNs");
  p.dma.chunkEfficiency = r.efficiencyCurve(dma, "dma", "chunkEfficiency");
  p.dma.transferFixedNs = r.nonNegativeNumber(dma, "dma", "transferFixedNs");
  p.dma.loadTranspose2dEfficiency = r.optionalFraction(dma, "dma", "loadTranspose2dEfficiency");
  if (const json *dge = r.optionalObject(dma, "dma", "hwDge")) {
    p.dma.hwDge = HwDgeParams{r.positiveInt(*dge, "dma.hwDge", "instances"),
                              r.positiveNumber(*dge, "dma.hwDge", "issueNs"),
                              r.stringList(*dge, "dma.hwDge", "issuers")};
  }
  if (const json *transpose = r.optionalObject(dma, "dma", "transpose")) {
    p.dma.transpose = DmaTransposeParams{r.fraction(*transpose, "dma.transpose", "hbmToSbufEfficiency"),
                                         r.fraction(*transpose, "dma.transpose", "sbufToSbufEfficiency"),
                                         r.positiveIntList(*transpose, "dma.transpose", "dtypeBytes")};
  }
}

MachineProfile readProfile(FieldReader &r, const json &root) {
  MachineProfile p;
  p.name = r.string(root, "", "name");
  const json &chip = r.object(root, "", "chip");
  p.chip.coresPerChip = r.positiveInt(chip, "chip", "coresPerChip");
  p.chip.hbmBytesPerChip = r.positiveInt(chip, "chip", "hbmBytesPerChip");
  p.chip.hbmBytesPerNsPerChip = r.positiveNumber(chip, "chip", "hbmBytesPerNsPerChip");
  p.chip.dmaEnginesPerChip = r.positiveInt(chip, "chip", "dmaEnginesPerChip");
  p.partitions = r.positiveInt(root, "", "partitions");

  const json &sbuf = r.object(root, "", "sbuf");
  p.sbuf.bytesPerPartition = r.positiveInt(sbuf, "sbuf", "bytesPerPartition");
  p.sbuf.accessOverheadCycles = r.positiveInt(sbuf, "sbuf", "accessOverheadCycles");
  p.sbuf.stridedPenaltyAboveStrideBytes = r.positiveInt(sbuf, "sbuf", "stridedPenaltyAboveStrideBytes");
  p.sbuf.stridedPenaltyFactor = r.positiveInt(sbuf, "sbuf", "stridedPenaltyFactor");

  const json &psum = r.object(root, "", "psum");
  p.psum.bytesPerPartition = r.positiveInt(psum, "psum", "bytesPerPartition");
  p.psum.banks = r.positiveInt(psum, "psum", "banks");
  p.psum.bankFp32Elements = r.positiveInt(psum, "psum", "bankFp32Elements");

  const json &hbm = r.object(root, "", "hbm");
  p.hbm.bytesPerCore = r.positiveInt(hbm, "hbm", "bytesPerCore");
  p.hbm.bytesPerNsPerCore = r.positiveNumber(hbm, "hbm", "bytesPerNsPerCore");

  readEngines(r, root, p);
  p.portConflicts = r.conflictList(r.object(root, "", "ports"), "ports", "conflicts");
  readDma(r, root, p);
  p.semLatencyCycles = r.positiveInt(r.object(root, "", "sync"), "sync", "semLatencyCycles");
  const json &hostLink = r.object(root, "", "hostLink");
  p.hostLink.bytesPerNs = r.positiveNumber(hostLink, "hostLink", "bytesPerNs");
  p.hostLink.latencyNs = r.positiveNumber(hostLink, "hostLink", "latencyNs");
  const json &collective = r.object(root, "", "collective");
  p.collective.bytesPerNs = r.positiveNumber(collective, "collective", "bytesPerNs");
  p.collective.latencyNs = r.positiveNumber(collective, "collective", "latencyNs");
  if (const json *throttle = r.optionalObject(root, "", "throttle")) {
    p.throttle = ThrottleParams{r.fraction(*throttle, "throttle", "startUtilization"),
                                r.positiveNumber(*throttle, "throttle", "rampUs"),
                                r.positiveNumber(*throttle, "throttle", "windowUs"),
                                r.fraction(*throttle, "throttle", "reengageBelowUtilization")};
  }
  if (const json *lnc = r.optionalObject(root, "", "lnc")) {
    p.lnc = LncParams{r.positiveInt(*lnc, "lnc", "defaultCoresPerLogical"),
                      r.positiveInt(*lnc, "lnc", "coresPerLogical")};
  }
  return p;
}

}  // namespace

std::vector<std::string> bundledProfileNames() {
  std::vector<std::string> names;
  for (const BundledProfile &bundled : bundledProfiles()) names.emplace_back(bundled.name);
  return names;
}

Expected<MachineProfile> parseProfile(const std::string &jsonText, const std::string &file) {
  json root = json::parse(jsonText, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    return makeFileError(ErrorCode::ParseError, file, "not valid JSON (check commas, quotes and brackets)");
  }
  if (!root.is_object()) {
    return makeFileError(ErrorCode::ParseError, file, "a machine profile must be a JSON object; got {}",
                         root.type_name());
  }
  FieldReader reader(file);
  MachineProfile profile = readProfile(reader, root);
  if (reader.failed()) return reader.takeError();
  profile.sourceFile = file;
  return profile;
}

Expected<MachineProfile> loadProfile(const std::string &pathOrName) {
  for (const BundledProfile &bundled : bundledProfiles()) {
    if (bundled.name == pathOrName) {
      return parseProfile(std::string(bundled.jsonText), fmt::format("<bundled {}.json>", bundled.name));
    }
  }
  std::error_code error;
  if (!std::filesystem::is_regular_file(pathOrName, error)) {
    bool looksLikeName = pathOrName.find('/') == std::string::npos && !pathOrName.ends_with(".json");
    if (looksLikeName) {
      std::string known;
      for (const std::string &name : bundledProfileNames()) known += (known.empty() ? "" : ", ") + name;
      return makeError(ErrorCode::InvalidArgument,
                       "unknown machine profile '{}'; expected one of {} or the path of a .json profile",
                       pathOrName, known);
    }
    return makeFileError(ErrorCode::FileNotFound, pathOrName, "machine profile file not found");
  }
  std::ifstream in(pathOrName, std::ios::binary);
  if (!in.is_open()) return makeFileError(ErrorCode::IoError, pathOrName, "cannot open machine profile");
  std::ostringstream text;
  text << in.rdbuf();
  return parseProfile(text.str(), pathOrName);
}

}  // namespace tessel::nc
