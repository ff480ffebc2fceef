// runReference (kernel_def.h): a kernel's expected outputs, computed by stating the computation as a
// small text-IR model (ONNX ops) and running it on the reference interpreter with float32 inputs.
// This keeps the kernel library's numerics tied to the same op definitions the ref target uses.
#include "targets/nc/kernels/reference.h"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/parser.h"
#include "targets/nc/kernels/kernel_def.h"
#include "targets/ref/interpreter.h"

namespace tessel::nc::kernels {

namespace {

/// A float32 tensor holding `host`'s values.
Tensor toTensor(const HostTensor &host) {
  return Tensor::fromVector<float>(host.shape, host.values);
}

/// The values of a reference output as floats (any numeric dtype).
HostTensor fromTensor(const std::string &name, const Tensor &tensor) {
  HostTensor host;
  host.name = name;
  host.dtype = DType::F32;
  host.shape = tensor.sizes();
  host.values.resize(static_cast<size_t>(tensor.numel()));
  if (tensor.dtype() == tessel::DType::Float32) {
    auto span = tensor.span<float>();
    host.values.assign(span.begin(), span.end());
  } else {
    for (int64_t i = 0; i < tensor.numel(); ++i) host.values[static_cast<size_t>(i)] = static_cast<float>(tensor.scalarAsDouble(i));
  }
  return host;
}

}  // namespace

std::string irFloatType(const std::vector<int64_t> &shape) { return fmt::format("f32[{}]", fmt::join(shape, ",")); }

std::string irModel(const std::vector<HostTensor> &inputs, const std::string &body, const std::string &outputs) {
  std::vector<std::string> params, results;
  for (const HostTensor &input : inputs) params.push_back(fmt::format("%{}: {}", input.name, irFloatType(input.shape)));
  for (std::string_view rest = outputs; !rest.empty();) {
    size_t comma = rest.find(',');
    std::string name(rest.substr(0, comma));
    name.erase(0, name.find_first_not_of(' '));
    results.push_back(name + ": ?");
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return fmt::format("model opset(ai.onnx=17) ir_version=8 {{\nfunc @main({}) -> ({}) {{\n{}\n  return {}\n}}\n}}\n",
                     fmt::join(params, ", "), fmt::join(results, ", "), body, outputs);
}

double streamingAbsTolerance(DType dtype) {
  switch (dtype) {
    case DType::F32: return 1e-4;
    case DType::BF16: return 1e-2;
    case DType::F16: return 2e-3;
    default: return 1e-1;
  }
}

double streamingRelTolerance(DType dtype) { return streamingAbsTolerance(dtype); }

Expected<std::vector<HostTensor>> runReference(const std::string &irText, const std::vector<HostTensor> &inputs) {
  auto model = parseModel(irText, "<kernel reference>");
  if (!model.ok()) return makeError(ErrorCode::Internal, "kernel reference IR does not parse: {}", model.diag().str());
  const Graph &graph = *model->graph;
  NamedValues feeds;
  size_t next = 0;
  for (Value *input : graph.inputs()) {
    if (input->hasInitializer()) continue;
    if (next >= inputs.size())
      return makeError(ErrorCode::InvalidArgument, "kernel reference takes input '{}' but only {} input(s) were given",
                       input->name(), inputs.size());
    feeds.emplace_back(input->name(), toTensor(inputs[next++]));
  }
  if (next != inputs.size())
    return makeError(ErrorCode::InvalidArgument, "kernel reference takes {} input(s); given {}", next, inputs.size());
  ReferenceInterpreter interpreter(*model);
  auto outputs = interpreter.run(feeds);
  if (!outputs.ok()) return outputs.diag();
  std::vector<HostTensor> result;
  for (const auto &[name, value] : *outputs) {
    if (!value.isTensor())
      return makeError(ErrorCode::Internal, "kernel reference output '{}' is {}, not a tensor", name, value.describe());
    result.push_back(fromTensor(name, value.tensor()));
  }
  return result;
}

}  // namespace tessel::nc::kernels
