// The nc artifact container; see artifact_io.h.
#include "targets/nc/compiler/artifact_io.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"

namespace tessel::nc::compiler {

namespace {

uint64_t contentHash(const void *data, size_t bytes) {
  // FNV-1a over 8-byte words, then the tail: fast enough for weights of hundreds of megabytes.
  uint64_t hash = 1469598103934665603ull ^ bytes;
  const auto *p = static_cast<const uint8_t *>(data);
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t word;
    std::memcpy(&word, p + i, 8);
    hash = (hash ^ word) * 1099511628211ull;
  }
  for (; i < bytes; ++i) hash = (hash ^ p[i]) * 1099511628211ull;
  return hash;
}

/// Initializers smaller than this stay inside the ONNX graph.
constexpr size_t kWeightBlobBytes = 4096;

}  // namespace

nlohmann::json ArtifactWriter::place(const void *data, size_t bytes) {
  if (auto it = byAddress_.find({data, bytes}); it != byAddress_.end()) {
    deduped_ += bytes;
    return nlohmann::json{{"offset", offsets_[it->second]}, {"bytes", bytes}};
  }
  const uint64_t hash = contentHash(data, bytes);
  for (auto [it, end] = byHash_.equal_range(hash); it != end; ++it) {
    const auto &[other, otherBytes] = blobs_[it->second];
    if (otherBytes == bytes && std::memcmp(other, data, bytes) == 0) {
      deduped_ += bytes;
      byAddress_.emplace(std::make_pair(data, bytes), it->second);
      return nlohmann::json{{"offset", offsets_[it->second]}, {"bytes", bytes}};
    }
  }
  byHash_.emplace(hash, blobs_.size());
  byAddress_.emplace(std::make_pair(data, bytes), blobs_.size());
  blobs_.emplace_back(data, bytes);
  offsets_.push_back(total_);
  total_ += bytes;
  return nlohmann::json{{"offset", offsets_.back()}, {"bytes", bytes}};
}

nlohmann::json ArtifactWriter::place(std::string bytes) {
  owned_.push_back(std::move(bytes));
  return place(owned_.back().data(), owned_.back().size());
}

Expected<nlohmann::json> ArtifactWriter::placeModel(const Model &model) {
  // The weights go in as blobs straight from the model's tensors (several buckets' graphs share
  // them: placed once, not copied).
  nlohmann::json weights = nlohmann::json::object();
  InitializerSink sink;
  sink.bytes = kWeightBlobBytes;
  sink.take = [&](const std::string &name, const Tensor &tensor) {
    if (weights.contains(name)) return false;
    weights[name] = place(tensor.rawData(), tensor.numBytes());
    return true;
  };
  TESSEL_ASSIGN_OR_RETURN(onnx::ModelProto proto, exportOnnxProto(model, sink));
  std::string graph;
  if (!proto.SerializeToString(&graph)) return makeError(ErrorCode::Internal, "the optimized graph does not serialize");
  return nlohmann::json{{"graph", place(std::move(graph))}, {"weights", std::move(weights)}};
}

Status ArtifactWriter::write(const std::string &path, const ArtifactMagic &magic, const nlohmann::json &header) const {
  const std::string headerText = header.dump();
  // `-o out/model.tsl` creates out/ when it is missing.
  if (std::filesystem::path parent = std::filesystem::path(path).parent_path(); !parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return makeFileError(ErrorCode::IoError, path, "cannot open for writing");
  const uint64_t headerBytes = headerText.size();
  out.write(magic.data(), static_cast<std::streamsize>(magic.size()));
  out.write(reinterpret_cast<const char *>(&headerBytes), sizeof headerBytes);
  out.write(headerText.data(), static_cast<std::streamsize>(headerText.size()));
  for (const auto &[data, bytes] : blobs_) out.write(static_cast<const char *>(data), static_cast<std::streamsize>(bytes));
  if (!out) return makeFileError(ErrorCode::IoError, path, "write failed (disk full?)");
  return Status::success();
}

Expected<ArtifactReader> ArtifactReader::open(const std::string &path, const ArtifactMagic &magic, const char *what) {
  ArtifactReader reader;
  reader.path_ = path;
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeFileError(ErrorCode::FileNotFound, path, "cannot open");
  in.seekg(0, std::ios::end);
  reader.data_.assign(static_cast<size_t>(in.tellg()), '\0');
  in.seekg(0);
  if (!in.read(reader.data_.data(), static_cast<std::streamsize>(reader.data_.size())))
    return makeFileError(ErrorCode::IoError, path, "read failed");
  const std::string &data = reader.data_;
  if (data.size() < 16 || std::memcmp(data.data(), magic.data(), magic.size()) != 0)
    return makeFileError(ErrorCode::ParseError, path, "not {} (bad magic)", what);
  uint64_t headerBytes = 0;
  std::memcpy(&headerBytes, data.data() + 8, 8);
  if (headerBytes > data.size() - 16) return makeFileError(ErrorCode::ParseError, path, "truncated header");
  reader.header_ = nlohmann::json::parse(data.data() + 16, data.data() + 16 + headerBytes, nullptr, false);
  if (reader.header_.is_discarded()) return makeFileError(ErrorCode::ParseError, path, "the header is not JSON");
  reader.base_ = 16 + headerBytes;
  return reader;
}

Expected<std::string_view> ArtifactReader::blob(const nlohmann::json &ref) const {
  const size_t offset = ref.at("offset").get<size_t>(), bytes = ref.at("bytes").get<size_t>();
  if (offset > data_.size() || bytes > data_.size() - base_ || base_ + offset > data_.size() - bytes)
    return makeFileError(ErrorCode::ParseError, path_, "truncated blob");
  return std::string_view(data_.data() + base_ + offset, bytes);
}

Expected<Model> ArtifactReader::model(const nlohmann::json &ref) const {
  TESSEL_ASSIGN_OR_RETURN(std::string_view graph, blob(ref.at("graph")));
  onnx::ModelProto proto;
  if (!proto.ParseFromArray(graph.data(), static_cast<int>(graph.size())))
    return makeFileError(ErrorCode::ParseError, path_, "the optimized graph is not a valid ONNX protobuf");
  const nlohmann::json &weights = ref.at("weights");
  for (onnx::TensorProto &t : *proto.mutable_graph()->mutable_initializer()) {
    if (!weights.contains(t.name())) continue;
    TESSEL_ASSIGN_OR_RETURN(std::string_view bytes, blob(weights.at(t.name())));
    t.set_raw_data(bytes.data(), bytes.size());
  }
  ImportOptions options;
  options.inferShapes = false;
  return importOnnxProto(std::move(proto), path_, options);
}

std::shared_ptr<const std::vector<uint8_t>> ArtifactReader::sharedBytes(const nlohmann::json &ref,
                                                                       std::string_view bytes) const {
  auto &slot = shared_[ref.at("offset").get<size_t>()];
  if (!slot || slot->size() != bytes.size()) slot = std::make_shared<const std::vector<uint8_t>>(bytes.begin(), bytes.end());
  return slot;
}

bool hasMagic(const std::string &path, const ArtifactMagic &magic) {
  std::ifstream in(path, std::ios::binary);
  char read[8] = {};
  return in.read(read, sizeof read) && std::equal(read, read + 8, magic.begin());
}

}  // namespace tessel::nc::compiler
