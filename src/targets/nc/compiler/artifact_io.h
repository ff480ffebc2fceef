// The container of nc artifacts: [magic (8 bytes)][u64 header bytes][header JSON][blobs]. The
// header describes what the artifact holds and refers to its blobs as {"offset", "bytes"}; the
// writer places each distinct blob once, so weights that several executables (buckets) hold alike
// are stored once. Nothing time- or machine-dependent goes in: the same input gives the same bytes.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel::nc::compiler {

using ArtifactMagic = std::array<char, 8>;

class ArtifactWriter {
 public:
  /// Places `bytes` at `data` (kept alive by the caller until write()) unless the same bytes are
  /// placed already; returns the reference the header keeps.
  nlohmann::json place(const void *data, size_t bytes);
  /// The same for bytes the writer keeps.
  nlohmann::json place(std::string bytes);
  /// `model` as ONNX with its large initializers' bytes as blobs of their own (shared with any
  /// other model placed here that holds the same weights): {"graph": ref, "weights": {name: ref}}.
  Expected<nlohmann::json> placeModel(const Model &model);

  /// Writes magic, header and blobs to `path` (creating its folder).
  Status write(const std::string &path, const ArtifactMagic &magic, const nlohmann::json &header) const;
  /// Bytes of blob data placed, and what placing them again saved.
  uint64_t blobBytes() const { return total_; }
  uint64_t dedupedBytes() const { return deduped_; }

 private:
  std::vector<std::pair<const void *, size_t>> blobs_;
  std::map<std::pair<const void *, size_t>, size_t> byAddress_;  // The same bytes placed again: no hashing.
  std::multimap<uint64_t, size_t> byHash_;  // Content hash -> index into blobs_.
  std::vector<uint64_t> offsets_;
  std::deque<std::string> owned_;
  uint64_t total_ = 0, deduped_ = 0;
};

class ArtifactReader {
 public:
  /// Reads `path` whole; fails unless it starts with `magic` and its header parses.
  static Expected<ArtifactReader> open(const std::string &path, const ArtifactMagic &magic, const char *what);
  const nlohmann::json &header() const { return header_; }
  const std::string &path() const { return path_; }
  Expected<std::string_view> blob(const nlohmann::json &ref) const;
  /// A model placeModel wrote; `ref` is what it returned.
  Expected<Model> model(const nlohmann::json &ref) const;
  /// The bytes of blob `ref` (read as `bytes`), one copy per distinct blob however often it is read.
  std::shared_ptr<const std::vector<uint8_t>> sharedBytes(const nlohmann::json &ref, std::string_view bytes) const;

 private:
  std::string path_, data_;
  size_t base_ = 0;
  nlohmann::json header_;
  mutable std::map<size_t, std::shared_ptr<const std::vector<uint8_t>>> shared_;  // By blob offset.
};

/// Whether the file at `path` starts with `magic`.
bool hasMagic(const std::string &path, const ArtifactMagic &magic);

}  // namespace tessel::nc::compiler
