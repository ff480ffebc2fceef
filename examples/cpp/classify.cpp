// Compiles an ONNX model for a target with tessel's public API, runs it on an input read from a
// .npy file and compares the first output with an expected .npy. Exit status 0 when they agree.
//   classify MODEL.onnx INPUT.npy EXPECTED.npy [TARGET]
#include <tessel/tessel.h>

#include <cmath>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace ts = tessel::api;

/// A float32, C-order .npy file (version 1 header), as numpy.save writes it.
static bool readNpy(const std::string &path, std::vector<int64_t> &shape, std::vector<float> &values) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return false;
  const size_t headerLength = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  const std::string header = bytes.substr(10, headerLength);
  if (header.find("'<f4'") == std::string::npos || header.find("'fortran_order': False") == std::string::npos) return false;
  std::istringstream dims(header.substr(header.find('(') + 1, header.find(')') - header.find('(') - 1));
  for (std::string item; std::getline(dims, item, ',');)
    if (item.find_first_not_of(' ') != std::string::npos) shape.push_back(std::stoll(item));
  size_t count = 1;
  for (int64_t d : shape) count *= static_cast<size_t>(d);
  values.resize(count);
  if (bytes.size() < 10 + headerLength + count * sizeof(float)) return false;
  std::memcpy(values.data(), bytes.data() + 10 + headerLength, count * sizeof(float));
  return true;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: classify MODEL.onnx INPUT.npy EXPECTED.npy [TARGET]\n");
    return 2;
  }
  const std::string target = argc > 4 ? argv[4] : "cpu";
  ts::Result<ts::Model> model = ts::Model::load(argv[1]);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().str().c_str());
    return 1;
  }
  std::vector<int64_t> inputShape, expectedShape;
  std::vector<float> input, expected;
  if (!readNpy(argv[2], inputShape, input) || !readNpy(argv[3], expectedShape, expected)) {
    std::fprintf(stderr, "cannot read %s or %s as float32 .npy\n", argv[2], argv[3]);
    return 1;
  }
  ts::CompileOptions options;
  options.autoCast = "none";  // fp32 on the accelerator too, so one tolerance serves every target.
  ts::Result<ts::Executable> exe = ts::compile(*model, target, options);
  if (!exe.ok()) {
    std::fprintf(stderr, "%s\n", exe.status().str().c_str());
    return 1;
  }
  // No copy: the tensor views `input`, which outlives the run.
  ts::Tensor x = ts::Tensor::borrow(ts::DType::Float32, inputShape, input.data());
  auto outputs = exe->run({{model->inputs()[0].name, x}});
  if (!outputs.ok()) {
    std::fprintf(stderr, "%s\n", outputs.status().str().c_str());
    return 1;
  }
  const ts::Tensor &y = outputs->front().second;
  if (y.shape() != expectedShape) {
    std::fprintf(stderr, "output shape differs from the expected one\n");
    return 1;
  }
  double maxError = 0;
  for (int64_t i = 0; i < y.numel(); ++i) maxError = std::fmax(maxError, std::fabs(y.data<float>()[i] - expected[i]));
  std::printf("%s on %s: %s %s, max abs error %.3g vs the expected output (tessel %s)\n", model->path().c_str(),
              exe->target().c_str(), outputs->front().first.c_str(), ts::dtypeName(y.dtype()), maxError, ts::version());
  return maxError <= 1e-4 ? 0 : 1;
}
