// What the kernel library registers per kernel: how to build it in the tile DSL from a few named
// dimensions and a dtype, and how to compute its expected outputs on the reference target, so that
// `tessel kernel run` and the kernel tests can run any kernel in the simulator and check it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "support/diagnostic.h"
#include "targets/nc/isa/instruction.h"
#include "targets/nc/tile/dsl.h"

namespace tessel::nc::kernels {

/// One kernel instance: `--shape M=128,N=512,K=256 --dtype bf16 --option causal=1 --variant tiled`.
struct KernelParams {
  std::map<std::string, int64_t> dims;
  DType dtype = DType::BF16;
  std::map<std::string, std::string> options;
  std::string variant;  // One of KernelDef::variants ("" for a kernel without variants).

  /// The dim `name`; the runner checks required dims before build() runs.
  int64_t dim(const std::string &name) const { return dims.at(name); }
  /// The option `name` as given, or `fallback`.
  std::string option(const std::string &name, const std::string &fallback = "") const {
    auto it = options.find(name);
    return it == options.end() ? fallback : it->second;
  }
};

/// A host-side tensor: row-major values as floats (the exact values the kernel's inputs hold, after
/// rounding to their dtype; outputs converted from their dtype).
struct HostTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

/// One library kernel.
struct KernelDef {
  std::string name;                      // `tessel kernel run NAME`.
  std::string summary;                   // One line for `tessel kernel list`.
  std::vector<std::string> dimNames;     // Required --shape keys.
  std::map<std::string, int64_t> defaultDims;  // Used when a key is not given (may be empty).
  std::vector<DType> dtypes;             // Accepted --dtype values; the first is the default.
  /// Records the kernel: its inputs and outputs in HBM (declaration order = HostTensor order).
  Status (*build)(tile::KernelBuilder &builder, const KernelParams &params) = nullptr;
  /// Expected outputs from the inputs, computed on the reference target.
  Expected<std::vector<HostTensor>> (*reference)(const KernelParams &params,
                                                 const std::vector<HostTensor> &inputs) = nullptr;
  /// Allowed error: |got - want| <= absTolerance + relTolerance * |want|, per dtype of the inputs.
  double (*absTolerance)(DType dtype) = nullptr;
  double (*relTolerance)(DType dtype) = nullptr;
  /// Useful FLOPs of one run (for MFU and the report); may be null for non-PE kernels.
  double (*flops)(const KernelParams &params) = nullptr;
  /// Accepted --variant values, the default first; empty when the kernel has one form. Variants are
  /// other ways of writing the same computation (one reference), e.g. the steps of a tutorial.
  std::vector<std::string> variants = {};
};

/// Runs a model written in tessel's text IR (src/ir/parser.h) on the reference target with float32
/// `inputs` bound to the function's parameters in order, and returns its outputs. Kernel references
/// are written this way so that they state the computation in ONNX ops.
Expected<std::vector<HostTensor>> runReference(const std::string &irText, const std::vector<HostTensor> &inputs);

}  // namespace tessel::nc::kernels
