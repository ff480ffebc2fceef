// The .tsl artifact of the cpu target, one file:
//   [magic "TSLCPU01"][u64 header offset][u64 header bytes]
//   [64-byte aligned blobs: initializer data, then packed constants]
//   [the optimized graph as an ONNX ModelProto whose large initializers are external data
//    pointing into this same file][header: JSON with the graph's place, the packed-constant table,
//    the ISA the constants were packed for; for a dynamic artifact, "dynamic" and the dim ranges]
// Loading maps the file once; initializers and packed weights are read from the mapping, so a
// load costs little more than the graph's protobuf parse.
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"
#include "targets/cpu/kernels/gemm.h"
#include "targets/cpu/plan.h"

namespace tessel::cpu {
namespace {

/// The bf16 variant this host runs, or "" (auto-cast then computes in float32).
std::string bf16KernelName() {
  const GemmKernel *kernel = selectedGemmKernel(GemmOperands::Bf16);
  return kernel != nullptr ? kernel->name : "";
}

constexpr char kMagic[8] = {'T', 'S', 'L', 'C', 'P', 'U', '0', '1'};
constexpr size_t kPrefixBytes = 24;
// Initializers smaller than this stay inside the graph's protobuf.
constexpr size_t kExternalThreshold = 1024;

size_t alignUp(size_t n) { return (n + 63) / 64 * 64; }

void setExternal(onnx::TensorProto &tensor, const std::string &location, size_t offset, size_t length) {
  tensor.clear_raw_data();
  tensor.set_data_location(onnx::TensorProto::EXTERNAL);
  tensor.clear_external_data();
  auto add = [&](const char *key, const std::string &value) {
    auto *entry = tensor.add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  };
  add("location", location);
  add("offset", std::to_string(offset));
  add("length", std::to_string(length));
}

}  // namespace

bool isCpuArtifact(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  return in.read(magic, sizeof magic) && std::equal(magic, magic + 8, kMagic);
}

Status CpuExecutable::save(const std::string &path) const {
  return writeCpuArtifact(path, impl_->model, impl_->constants, impl_->options, nullptr);
}

Status writeCpuArtifact(const std::string &path, const Model &model, const PackedConstants &constants,
                        const CpuCompileOptions &options, const DimRanges *ranges) {
  TESSEL_ASSIGN_OR_RETURN(onnx::ModelProto proto, exportOnnxProto(model));
  const std::string location = std::filesystem::path(path).filename().string();

  std::string blobs;  // Everything between the prefix and the graph.
  auto place = [&](const void *data, size_t bytes) {
    size_t offset = kPrefixBytes + blobs.size();
    size_t aligned = alignUp(offset);
    blobs.append(aligned - offset, '\0');
    blobs.append(static_cast<const char *>(data), bytes);
    return aligned;
  };
  for (onnx::TensorProto &tensor : *proto.mutable_graph()->mutable_initializer()) {
    if (!tensor.has_raw_data() || tensor.raw_data().size() < kExternalThreshold) continue;
    size_t bytes = tensor.raw_data().size();
    size_t offset = place(tensor.raw_data().data(), bytes);
    setExternal(tensor, location, offset, bytes);
  }
  nlohmann::json packed = nlohmann::json::array();
  for (const PackedConstants::Entry &entry : constants.entries()) {
    size_t offset = place(entry.data, entry.bytes);
    packed.push_back({{"node", entry.node}, {"key", entry.key}, {"offset", offset}, {"bytes", entry.bytes}});
  }
  std::string graphBytes;
  if (!proto.SerializeToString(&graphBytes)) {
    return makeFileError(ErrorCode::IoError, path, "the optimized graph does not fit a protobuf (over 2 GiB?)");
  }
  size_t graphOffset = place(graphBytes.data(), graphBytes.size());
  nlohmann::json header = {{"format", 1},
                           {"target", "cpu"},
                           {"gemm_kernel", gemmKernelName()},
                           {"opt_level", options.optLevel},
                           {"products", operandsName(options.products)},
                           {"cast_everywhere", options.castEverywhere},
                           {"graph", {{"offset", graphOffset}, {"bytes", graphBytes.size()}}},
                           {"packed", packed}};
  if (options.products == GemmOperands::Bf16) header["bf16_gemm_kernel"] = bf16KernelName();
  if (ranges) {
    nlohmann::json dims = nlohmann::json::object();
    for (const auto &[name, range] : *ranges) dims[name] = {range.lo, range.hi};
    header["dynamic"] = true;
    header["dim_ranges"] = dims;
  }
  std::string headerText = header.dump();
  uint64_t headerOffset = kPrefixBytes + blobs.size();
  uint64_t headerBytes = headerText.size();

  // `-o out/model.tsl` creates out/ when it is missing.
  if (std::filesystem::path parent = std::filesystem::path(path).parent_path(); !parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return makeFileError(ErrorCode::IoError, path, "cannot open for writing");
  out.write(kMagic, sizeof kMagic);
  out.write(reinterpret_cast<const char *>(&headerOffset), sizeof headerOffset);
  out.write(reinterpret_cast<const char *>(&headerBytes), sizeof headerBytes);
  out.write(blobs.data(), static_cast<std::streamsize>(blobs.size()));
  out.write(headerText.data(), static_cast<std::streamsize>(headerText.size()));
  if (!out) return makeFileError(ErrorCode::IoError, path, "write failed");
  return Status::success();
}

Expected<CpuArtifact> readCpuArtifact(const std::string &path) {
  std::error_code ec;
  const size_t fileBytes = std::filesystem::file_size(path, ec);
  if (ec) return makeFileError(ErrorCode::FileNotFound, path, "cannot read: {}", ec.message());
  if (fileBytes < kPrefixBytes || !isCpuArtifact(path)) {
    return makeFileError(ErrorCode::ParseError, path, "not a tessel cpu artifact (no TSLCPU01 magic)");
  }
  TESSEL_ASSIGN_OR_RETURN(std::shared_ptr<Storage> file, mapFileStorage(path, 0, fileBytes));
  const auto *base = reinterpret_cast<const std::byte *>(file->data());
  uint64_t headerOffset = 0, headerBytes = 0;
  std::memcpy(&headerOffset, base + 8, 8);
  std::memcpy(&headerBytes, base + 16, 8);
  auto inFile = [&](uint64_t offset, uint64_t bytes) { return offset <= fileBytes && bytes <= fileBytes - offset; };
  if (!inFile(headerOffset, headerBytes)) return makeFileError(ErrorCode::ParseError, path, "truncated artifact header");

  nlohmann::json header = nlohmann::json::parse(reinterpret_cast<const char *>(base + headerOffset),
                                                reinterpret_cast<const char *>(base + headerOffset + headerBytes),
                                                nullptr, false);
  if (header.is_discarded() || !header.contains("graph") || !header.contains("packed")) {
    return makeFileError(ErrorCode::ParseError, path, "the artifact header is not valid JSON");
  }
  const std::string packedFor = header.value("gemm_kernel", "");
  if (packedFor != gemmKernelName()) {
    return makeFileError(ErrorCode::InvalidModel, path,
                         "weights were packed for {}; this host runs {}: compile the model again on this machine",
                         packedFor, gemmKernelName());
  }
  const std::string bf16PackedFor = header.value("bf16_gemm_kernel", "");
  if (header.contains("bf16_gemm_kernel") && bf16PackedFor != bf16KernelName()) {
    return makeFileError(ErrorCode::InvalidModel, path,
                         "weights were packed for {} (auto-cast bf16); this host runs {}: compile the model again "
                         "on this machine",
                         bf16PackedFor.empty() ? "float32 (no bf16 variant)" : bf16PackedFor,
                         bf16KernelName().empty() ? "no bf16 variant" : bf16KernelName());
  }
  try {
    uint64_t graphOffset = header["graph"]["offset"], graphBytes = header["graph"]["bytes"];
    if (!inFile(graphOffset, graphBytes)) return makeFileError(ErrorCode::ParseError, path, "truncated artifact graph");
    onnx::ModelProto proto;
    if (!proto.ParseFromArray(base + graphOffset, static_cast<int>(graphBytes))) {
      return makeFileError(ErrorCode::ParseError, path, "the artifact's graph does not parse");
    }
    // The initializers point at this file under the name it was saved as; follow a rename.
    const std::string location = std::filesystem::path(path).filename().string();
    for (onnx::TensorProto &tensor : *proto.mutable_graph()->mutable_initializer()) {
      for (auto &entry : *tensor.mutable_external_data()) {
        if (entry.key() == "location") entry.set_value(location);
      }
    }
    std::string bytes;
    proto.SerializeToString(&bytes);
    ImportOptions importOptions;
    importOptions.inferShapes = false;
    TESSEL_ASSIGN_OR_RETURN(Model model, importOnnxBytes(bytes, path, importOptions));

    std::vector<PackedConstants::Entry> entries;
    for (const auto &item : header["packed"]) {
      PackedConstants::Entry entry;
      entry.node = item["node"];
      entry.key = item["key"];
      entry.bytes = item["bytes"];
      entry.fileOffset = item["offset"];
      if (!inFile(entry.fileOffset, entry.bytes)) return makeFileError(ErrorCode::ParseError, path, "truncated packed constant");
      entry.data = base + entry.fileOffset;
      entries.push_back(std::move(entry));
    }
    CpuArtifact artifact;
    artifact.model = std::move(model);
    artifact.packed = std::move(entries);
    artifact.file = std::move(file);
    artifact.optLevel = header.value("opt_level", 3);
    const std::string products = header.value("products", "f32");
    if (products != "f32" && products != "bf16") {
      return makeFileError(ErrorCode::ParseError, path, "bad artifact header: products '{}'", products);
    }
    artifact.products = products == "bf16" ? GemmOperands::Bf16 : GemmOperands::F32;
    artifact.castEverywhere = header.value("cast_everywhere", true);
    artifact.dynamic = header.value("dynamic", false);
    if (header.contains("dim_ranges")) {
      for (const auto &[name, bounds] : header["dim_ranges"].items()) {
        artifact.ranges[name] = DimRange{bounds.at(0).get<int64_t>(), bounds.at(1).get<int64_t>()};
      }
    }
    return artifact;
  } catch (const nlohmann::json::exception &error) {
    return makeFileError(ErrorCode::ParseError, path, "bad artifact header: {}", error.what());
  }
}

Expected<std::unique_ptr<CpuExecutable>> loadCpuArtifact(const std::string &path, const CpuCompileOptions &options) {
  TESSEL_ASSIGN_OR_RETURN(CpuArtifact artifact, readCpuArtifact(path));
  return planArtifact(std::move(artifact), path, options);
}

Expected<std::unique_ptr<CpuExecutable>> planArtifact(CpuArtifact artifact, const std::string &path,
                                                      const CpuCompileOptions &options) {
  if (artifact.dynamic) {
    return makeFileError(ErrorCode::InvalidArgument, path,
                         "the artifact plans every input shape on first use; load it through the cpu target");
  }
  auto impl = std::make_unique<CpuExecutable::Impl>();
  impl->model = std::move(artifact.model);
  impl->options = options;
  impl->options.optLevel = artifact.optLevel;
  impl->options.products = artifact.products;
  impl->options.castEverywhere = artifact.castEverywhere;
  impl->constants.useLoaded(std::move(artifact.packed), artifact.file);
  Status planned = impl->plan();
  if (!planned.ok()) return withLocation(planned, SourceLoc::inFile(path)).diag();
  return std::make_unique<CpuExecutable>(std::move(impl));
}

}  // namespace tessel::cpu
