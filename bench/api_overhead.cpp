// The time of one Executable::run through the public C++ API, the baseline that
// bench/python_overhead.py measures the Python binding's overhead against: the model is compiled
// for cpu with the input's sizes, the input is fed without a copy (Tensor::borrow, as the binding
// feeds a numpy array), and the median of N timed runs is printed.
//
//   tessel_api_overhead MODEL.onnx INPUT.npy [RUNS] [THREADS]   ->   "median_us 123.4"
#include <tessel/tessel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace api = tessel::api;

namespace {

/// A little-endian float32, C-order .npy file (what numpy.save writes for such an array).
bool readNpyFloat32(const std::string &path, std::vector<int64_t> &shape, std::vector<float> &values) {
  std::ifstream in(path, std::ios::binary);
  char magic[8];
  if (!in.read(magic, 8) || std::string(magic + 1, 5) != "NUMPY") return false;
  uint32_t headerBytes = 0;
  if (magic[6] == 1) {
    uint16_t n = 0;
    in.read(reinterpret_cast<char *>(&n), 2);
    headerBytes = n;
  } else {
    in.read(reinterpret_cast<char *>(&headerBytes), 4);
  }
  std::string header(headerBytes, '\0');
  in.read(header.data(), headerBytes);
  if (header.find("'<f4'") == std::string::npos || header.find("'fortran_order': False") == std::string::npos) return false;
  size_t open = header.find('(', header.find("'shape'"));
  std::stringstream dims(header.substr(open + 1, header.find(')', open) - open - 1));
  int64_t count = 1;
  for (std::string d; std::getline(dims, d, ',');)
    if (d.find_first_not_of(' ') != std::string::npos) count *= shape.emplace_back(std::stoll(d));
  values.resize(count);
  return static_cast<bool>(in.read(reinterpret_cast<char *>(values.data()), count * sizeof(float)));
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL.onnx INPUT.npy [RUNS] [THREADS]\n", argv[0]);
    return 2;
  }
  const int runs = argc > 3 ? std::atoi(argv[3]) : 2000;
  std::vector<int64_t> shape;
  std::vector<float> input;
  if (!readNpyFloat32(argv[2], shape, input)) {
    std::fprintf(stderr, "%s: not a little-endian float32 C-order .npy\n", argv[2]);
    return 1;
  }
  auto model = api::Model::load(argv[1]);
  if (!model.ok()) return std::fprintf(stderr, "%s\n", model.status().str().c_str()), 1;
  const std::string name = model->inputs().at(0).name;
  api::CompileOptions options;
  options.threads = argc > 4 ? std::atoi(argv[4]) : 0;
  options.shapes[name] = shape;
  auto exe = api::compile(*model, "cpu", options);
  if (!exe.ok()) return std::fprintf(stderr, "%s\n", exe.status().str().c_str()), 1;

  const std::vector<api::NamedTensor> feeds = {{name, api::Tensor::borrow(api::DType::Float32, shape, input.data())}};
  std::vector<double> times(runs);
  for (int i = -runs / 10; i < runs; ++i) {  // The first tenth warms caches and the thread pool.
    auto start = std::chrono::steady_clock::now();
    auto out = exe->run(feeds);
    auto end = std::chrono::steady_clock::now();
    if (!out.ok()) return std::fprintf(stderr, "%s\n", out.status().str().c_str()), 1;
    if (i >= 0) times[i] = std::chrono::duration<double, std::micro>(end - start).count();
  }
  std::nth_element(times.begin(), times.begin() + runs / 2, times.end());
  std::printf("median_us %.3f\n", times[runs / 2]);
  return 0;
}
