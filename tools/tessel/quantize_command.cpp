// `tessel quantize MODEL.onnx --calibration DIR -o OUT.onnx [--method minmax|percentile]
// [--percentile P] [--per-channel|--per-tensor] [--weights symmetric] [--activations asymmetric|symmetric]
// [--target cpu|ref] [--report FILE.json]`: static post-training quantization (quantize/quantize.h).
// Writes the QDQ model and prints, per quantized node, its scales and the error of its output
// against the fp32 model, then the error of every model output.
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"
#include "quantize/quantize.h"

namespace tessel::cli {

namespace {

struct QuantizeArgs {
  std::string model;
  std::string calibration;
  std::string output;
  std::string method = "minmax";
  double percentile = 99.99;
  bool perChannel = false;  // The default; the flag is there to say so.
  bool perTensor = false;
  std::string weights = "symmetric";
  std::string activations = "asymmetric";
  std::string target = "cpu";
  std::string reportPath;
};

std::string describeParams(const QuantParams &p) {
  if (p.perAxis()) {
    auto [lo, hi] = std::minmax_element(p.scales.begin(), p.scales.end());
    return fmt::format("{} scale {:.4g}..{:.4g} ({} along axis {})", dtypeName(p.dtype), *lo, *hi, p.scales.size(), p.axis);
  }
  return fmt::format("{} scale {:.4g} zp {}", dtypeName(p.dtype), p.scales[0], p.zeroPoints[0]);
}

std::string describeError(const ErrorStats &e) {
  return fmt::format("max abs {:.4g}, rel L2 {:.4g}, cosine {:.6f}", e.maxAbs, e.relativeL2, e.cosine);
}

void printReport(const QuantizeReport &report) {
  std::printf("quantized nodes (%zu):\n", report.nodes.size());
  for (const QuantizedNodeReport &n : report.nodes) {
    std::string line = fmt::format("  {} ({}):", n.node.name, n.node.opType);
    for (const QuantizedTensor &in : n.node.inputs) line += fmt::format(" in {} {};", in.name, describeParams(in.params));
    if (n.node.weight) line += fmt::format(" weight {} {};", n.node.weight->name, describeParams(n.node.weight->params));
    line += fmt::format(" out {} {}; error {}", n.node.output.name, describeParams(n.node.output.params),
                        describeError(n.outputError));
    std::printf("%s\n", line.c_str());
  }
  std::printf("model outputs (fp32 vs quantized over %zu samples):\n", report.samples);
  for (const auto &[name, error] : report.modelOutputs) std::printf("  %s: %s\n", name.c_str(), describeError(error).c_str());
}

nlohmann::json paramsJson(const QuantizedTensor &t) {
  return {{"tensor", t.name}, {"dtype", std::string(dtypeName(t.params.dtype))}, {"scale", t.params.scales},
          {"zero_point", t.params.zeroPoints}, {"axis", t.params.perAxis() ? nlohmann::json(t.params.axis) : nlohmann::json()}};
}

nlohmann::json errorJson(const ErrorStats &e) {
  return {{"max_abs", e.maxAbs}, {"relative_l2", e.relativeL2}, {"cosine", e.cosine}};
}

nlohmann::json reportJson(const QuantizeArgs &args, const QuantizeReport &report) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const QuantizedNodeReport &n : report.nodes) {
    nlohmann::json node{{"name", n.node.name}, {"op", n.node.opType}, {"inputs", nlohmann::json::array()},
                        {"output", paramsJson(n.node.output)}, {"error", errorJson(n.outputError)}};
    for (const QuantizedTensor &in : n.node.inputs) node["inputs"].push_back(paramsJson(in));
    if (n.node.weight) node["weight"] = paramsJson(*n.node.weight);
    if (n.node.bias) node["bias"] = paramsJson(*n.node.bias);
    nodes.push_back(std::move(node));
  }
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto &[name, error] : report.modelOutputs) {
    nlohmann::json o = errorJson(error);
    o["name"] = name;
    outputs.push_back(std::move(o));
  }
  return {{"model", args.model},     {"output", args.output},
          {"method", args.method},   {"percentile", args.method == "percentile" ? nlohmann::json(args.percentile) : nlohmann::json()},
          {"per_channel", !args.perTensor}, {"activations", args.activations},
          {"samples", report.samples}, {"nodes", std::move(nodes)}, {"outputs", std::move(outputs)}};
}

void runQuantize(const QuantizeArgs &args) {
  auto model = importOnnxFile(args.model);
  if (!model.ok()) return reportError(model.diag().str());
  auto samples = readCalibrationSamples(*model, args.calibration);
  if (!samples.ok()) return reportError(samples.diag().str());
  QuantizeOptions options;
  options.method = args.method == "percentile" ? CalibrationMethod::Percentile : CalibrationMethod::MinMax;
  options.percentile = args.percentile;
  options.perChannel = !args.perTensor;
  options.symmetricActivations = args.activations == "symmetric";
  options.calibrationTarget = args.target;
  auto result = quantizeModel(*model, *samples, options);
  if (!result.ok()) return reportError(result.diag().str());
  Status written = exportOnnxFile(result->model, args.output);
  if (!written.ok()) return reportError(written.str());
  printReport(result->report);
  if (!args.reportPath.empty()) {
    std::ofstream out(args.reportPath);
    out << reportJson(args, result->report).dump(2) << "\n";
    if (!out) return reportError(fmt::format("{}: cannot write the report", args.reportPath));
  }
  std::printf("wrote %s\n", args.output.c_str());
}

}  // namespace

void addQuantizeCommand(CLI::App &app) {
  auto args = std::make_shared<QuantizeArgs>();
  CLI::App *cmd = app.add_subcommand("quantize", "Static post-training quantization to a QDQ ONNX model (int8 weights, "
                                                 "uint8 activations), calibrated on sample inputs");
  cmd->add_option("model", args->model, "Model file (.onnx)")->required();
  cmd->add_option("--calibration", args->calibration,
                  "Folder of NAME.npy per input (one sample), or of such folders (one sample each)")
      ->required();
  cmd->add_option("-o,--output", args->output, "The QDQ model to write (.onnx)")->required();
  cmd->add_option("--method", args->method, "Activation ranges: min/max, or a percentile of the values")
      ->check(CLI::IsMember({"minmax", "percentile"}))
      ->capture_default_str();
  cmd->add_option("--percentile", args->percentile, "--method percentile: the share of values the range keeps, in %")
      ->check(CLI::Range(50.0, 100.0))
      ->capture_default_str();
  CLI::Option *perChannel =
      cmd->add_flag("--per-channel", args->perChannel, "Weights: one scale per output channel (the default)");
  cmd->add_flag("--per-tensor", args->perTensor, "Weights: one scale per tensor")->excludes(perChannel);
  cmd->add_option("--weights", args->weights, "Weights: int8 symmetric")->check(CLI::IsMember({"symmetric"}))->capture_default_str();
  cmd->add_option("--activations", args->activations, "Activations: uint8 asymmetric, or int8 symmetric")
      ->check(CLI::IsMember({"asymmetric", "symmetric"}))
      ->capture_default_str();
  cmd->add_option("--target", args->target, "Where the fp32 model runs for calibration: cpu or ref (the QDQ model runs on ref)")
      ->check(CLI::IsMember({"cpu", "ref"}))
      ->capture_default_str();
  cmd->add_option("--report", args->reportPath, "Also write the report as JSON to this file");
  cmd->callback([args] { runQuantize(*args); });
}

}  // namespace tessel::cli
