// A model compiled for the accelerator at fixed sizes of its symbolic dims: one NcExecutable per
// bucket (`--buckets S=128,256,512`: one per size, the product over several bucketed dims), or a
// single one for a model compiled at static shapes. A run takes the smallest bucket that holds its
// feeds, pads every bucketed dim of every input with zeros up to it (a mask input — 0 where padded,
// as BERT's attention_mask — then keeps the padding out of every real position), runs it and slices
// the outputs' bucketed dims back to the feeds' sizes.
//
// What the buckets share: the size-independent passes run once on the symbolic graph (their
// weights are shared in memory), the buckets compile in parallel, and constants come first in each
// program's HBM in declaration order (tile::KernelBuilder::constant), so a constant that every bucket
// declares alike sits at one offset with the same bytes: one copy in HBM serves all buckets, and the
// artifact stores it once (its blobs are deduplicated by content).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/specialize.h"
#include "targets/nc/compiler/executable.h"

namespace tessel::nc::compiler {

struct Bucket {
  std::map<std::string, int64_t> sizes;  // Each bucketed dim's size (empty: the static model).
  std::unique_ptr<NcExecutable> exe;
  std::string label() const;             // "S=128", or "static"
};

/// What a run chose: the bucket, the feeds padded to it and how much of them is padding.
struct BucketChoice {
  size_t bucket = 0;
  NamedValues padded;                   // The feeds as the bucket's program takes them.
  std::map<std::string, int64_t> sizes;  // The feeds' own size of each bucketed dim.
  double paddingWaste = 0;              // 1 - (feed elements / padded elements) over the bucketed inputs.
};

/// How much HBM the buckets take when constants with the same bytes at the same offset are placed
/// once.
struct BucketHbm {
  uint64_t sharedConstantBytes = 0;  // Constants every bucket has alike (counted once).
  uint64_t ownConstantBytes = 0;     // Constants of one bucket only (summed over buckets).
  uint64_t largestRestBytes = 0;     // The largest bucket's inputs, outputs and scratch.
};

class BucketSet {
 public:
  /// One bucket: a model compiled at static shapes.
  explicit BucketSet(std::unique_ptr<NcExecutable> exe);

  /// Compiles `model` (whose inputs keep the bucketed dims symbolic, every other dim static) once
  /// per bucket, after folding what does not depend on the sizes once. Errors: a symbolic dim that
  /// is neither bucketed nor fixed, a bucketed dim no input has, or a bucket that fails to compile.
  static Expected<std::unique_ptr<BucketSet>> compile(Model model, const NcCompileOptions &options,
                                                      const std::vector<DimBuckets> &buckets);
  static Expected<std::unique_ptr<BucketSet>> load(const std::string &path);

  bool bucketed() const { return !dims_.empty(); }
  const std::vector<Bucket> &buckets() const { return buckets_; }
  const std::vector<DimBuckets> &dims() const { return dims_; }
  /// The graph as the user gave it (symbolic dims kept) where bucketed, else the bucket's graph.
  const Model &model() const { return bucketed() ? symbolic_ : buckets_.front().exe->model(); }
  double compileSeconds() const { return compileSeconds_; }

  /// Checks the feeds (declared dtypes and ranks, static dims, one size per symbolic dim, at most
  /// the largest bucket) and pads them to the smallest bucket that holds them.
  Expected<BucketChoice> choose(const NamedValues &feeds) const;
  /// The outputs of bucket `choice.bucket` sliced back to the feeds' sizes.
  Expected<NamedValues> unpad(const BucketChoice &choice, NamedValues outputs) const;

  BucketHbm hbm() const;
  /// Per bucket: its programs, nodes on the device, HBM and compile time; then the shared HBM.
  std::string report() const;
  Status save(const std::string &path) const;

 private:
  BucketSet() = default;

  Model symbolic_;
  std::vector<DimBuckets> dims_;
  std::vector<Bucket> buckets_;  // Row-major over dims_ (the last dim's sizes vary fastest).
  std::vector<std::vector<std::string>> outputDims_;  // Per output, per axis: its symbolic dim or "".
  double compileSeconds_ = 0;
};

/// True when `path` starts with the bucketed nc artifact magic.
bool isBucketedNcArtifact(const std::string &path);

}  // namespace tessel::nc::compiler
