// GEMM throughput against the machine's own single-core peak for its operand type (fp32 FMA, the
// bf16 dot product, or the u8s8 dot product), measured in the same run.
//
//   FmaPeak/<loop>               independent FMA (or vdpbf16ps, vpdpbusd) chains in each ISA the
//                                host has
//   Sgemm/<variant>/<n>          C = A*B, square n, B packed on the fly (every runnable variant at
//                                the smallest size, the selected f32 and bf16 variants at every
//                                size; bf16 rows take no packed A)
//   SgemmPacked/<variant>/<n>    the same with B packed once beforehand (the weights path)
//   SgemmPackedA/<variant>/<n>   the same with A packed once beforehand (convolution weights)
//   .../threads:<t>              the same split over a ThreadPool of t threads
//   Layer/<name>/threads:<t>     model-shaped products with the constant operand pre-packed:
//                                linear layers (packed B, small M) and convolutions (packed A);
//   Layer/<name>/bf16/...        the linear layers with the bf16 variant
//   S8GemmPacked/<variant>/<n>   the int8 GEMM (gemm_s8.h), u8 A times s8 B pre-packed, square n
//   Layer/<name>/u8s8/...        the linear layers on the int8 GEMM (MatMulInteger)
//   Layer/decode_m1_*            a decode step's products (M = 1, weights larger than the caches),
//                                bound by memory: every layer also reports weight_GBps, the packed
//                                constant operand's bytes per second
//
// Counters: GFLOPS (integer ops for the int8 GEMM: a multiply-add is two), and peak_fraction =
// achieved / (threads x the measured one-core peak of the best loop of the same operand type). Single-threaded rates are per CPU second (thread CPU time for the peak, Google
// Benchmark's CPU time for the rest): the machines are shared, and wall time would count other
// tenants' work. Threaded rates are per wall second. Run: build-*/bin/tessel_gemm_bench
// [--benchmark_repetitions=3 --benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <span>
#include <random>
#include <string>
#include <vector>

#include "support/thread_pool.h"
#include "targets/cpu/kernels/fma_peak.h"
#include "targets/cpu/kernels/gemm.h"
#include "targets/cpu/kernels/gemm_s8.h"

namespace tessel::cpu {
namespace {

constexpr int64_t kSizes[] = {1024, 2048, 4096};
constexpr double kGiga = 1e9;
constexpr int64_t kPeakIterations = 20'000'000;  // About 0.1 s per trial at AVX-512 peak.
constexpr int kPeakTrials = 5;                   // Best of these is the peak (the machine is shared).
constexpr int kThreadCounts[] = {1, 2};

/// CPU time of this thread: the machines are shared, and wall time would count other tenants.
double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

double measurePeak(const FmaPeakLoop *loop) {
  if (loop == nullptr) return 0.0;
  double best = 0.0;
  for (int trial = 0; trial < kPeakTrials; ++trial) {
    const double start = threadCpuSeconds();
    benchmark::DoNotOptimize(loop->run(kPeakIterations, float(trial)));
    const double elapsed = threadCpuSeconds() - start;
    best = std::max(best, double(kPeakIterations * loop->flopsPerIteration) / elapsed);
  }
  return best;
}

/// The best loop's throughput in FLOP/s for these operands, measured once (best of a few trials).
double measuredPeakFlops(GemmOperands operands) {
  static const double f32 = measurePeak(bestFmaPeakLoop(GemmOperands::F32));
  static const double bf16 = measurePeak(bestFmaPeakLoop(GemmOperands::Bf16));
  static const double u8s8 = measurePeak(bestFmaPeakLoop(GemmOperands::U8S8));
  switch (operands) {
    case GemmOperands::F32: return f32;
    case GemmOperands::Bf16: return bf16;
    case GemmOperands::U8S8: return u8s8;
  }
  return 0.0;
}

std::string cpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    return colon == std::string::npos ? line : line.substr(colon + 2);
  }
  return "unknown";
}

void setThroughputCounters(benchmark::State &state, double flopsPerIteration, GemmOperands operands,
                           int threads = 1) {
  state.counters["GFLOPS"] =
      benchmark::Counter(flopsPerIteration / kGiga, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_fraction"] = benchmark::Counter(
      flopsPerIteration / (measuredPeakFlops(operands) * threads), benchmark::Counter::kIsIterationInvariantRate);
}

/// A pool of `threads` threads, or null for one (the single-threaded entry path).
std::unique_ptr<ThreadPool> makePool(int threads) {
  return threads > 1 ? std::make_unique<ThreadPool>(threads) : nullptr;
}

void benchFmaPeak(benchmark::State &state, const FmaPeakLoop *loop) {
  const int64_t iterations = kPeakIterations / 10;
  float seed = 1.0f;
  for (auto _ : state) benchmark::DoNotOptimize(loop->run(iterations, seed));
  setThroughputCounters(state, double(iterations * loop->flopsPerIteration), loop->operands);
}

std::vector<float> randomMatrix(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(count));
  for (float &x : v) x = dist(rng);
  return v;
}

/// Which operand is packed before the timed loop.
enum class Prepacked { None, B, A };

void benchSgemm(benchmark::State &state, const GemmKernel *kernel, int64_t n, Prepacked prepacked, int threads) {
  const std::vector<float> a = randomMatrix(n * n, 1), b = randomMatrix(n * n, 2);
  std::vector<float> c(size_t(n * n));
  const GemmShape shape{n, n, n};
  const PackedB packedB = prepacked == Prepacked::B ? packB(*kernel, n, n, b.data(), n) : PackedB{};
  const PackedA packedA = prepacked == Prepacked::A ? packA(*kernel, n, n, a.data(), n) : PackedA{};
  const std::unique_ptr<ThreadPool> pool = makePool(threads);
  for (auto _ : state) {
    switch (prepacked) {
      case Prepacked::None: sgemm(*kernel, shape, a.data(), n, b.data(), n, c.data(), n, {}, pool.get()); break;
      case Prepacked::B: sgemmPacked(shape, a.data(), n, packedB, c.data(), n, {}, pool.get()); break;
      case Prepacked::A: sgemmPackedA(shape, packedA, b.data(), n, c.data(), n, {}, pool.get()); break;
    }
    benchmark::ClobberMemory();
  }
  setThroughputCounters(state, 2.0 * double(n) * double(n) * double(n), kernel->operands, threads);
}

/// A layer-shaped product: the constant operand (B for a linear layer, A for a convolution's
/// weights) is packed beforehand, bias and ReLU fused, scratch from the caller.
struct LayerShape {
  const char *name;
  GemmShape shape;
  bool weightsOnLeft;  // Convolution: Y[Cout, HW] = W[Cout, K] x cols[K, HW].
};

constexpr LayerShape kLayerShapes[] = {
    {"linear_m1_768x768", {1, 768, 768}, false},      {"linear_m16_768x3072", {16, 3072, 768}, false},
    {"linear_m64_3072x768", {64, 768, 3072}, false},  {"linear_m128_768x768", {128, 768, 768}, false},
    {"linear_m128_3072x768", {128, 3072, 768}, false}, {"linear_m128_768x3072", {128, 768, 3072}, false},
    {"conv_64x12544x147", {64, 12544, 147}, true},    {"conv_128x3136x576", {128, 3136, 576}, true},
    {"conv_512x49x4608", {512, 49, 4608}, true},      {"conv_2048x49x512", {2048, 49, 512}, true},
    // A 1B-class decoder's decode step: the MLP's up and down projections, 64 MiB of fp32 weights each.
    {"decode_m1_2048x8192", {1, 8192, 2048}, false},  {"decode_m1_8192x2048", {1, 2048, 8192}, false},
};

void benchLayer(benchmark::State &state, const LayerShape *layer, const GemmKernel *kernel, int threads) {
  const GemmShape s = layer->shape;
  const std::vector<float> a = randomMatrix(s.m * s.k, 1), b = randomMatrix(s.k * s.n, 2);
  const std::vector<float> bias = randomMatrix(layer->weightsOnLeft ? s.m : s.n, 3);
  std::vector<float> c(size_t(s.m * s.n));
  const std::unique_ptr<ThreadPool> pool = makePool(threads);
  GemmEpilogue epilogue;
  epilogue.bias = bias.data();
  epilogue.biasPerRow = layer->weightsOnLeft;
  epilogue.activation.kind = ActivationKind::Relu;
  const GemmPacking packing{layer->weightsOnLeft, !layer->weightsOnLeft};
  std::vector<std::byte> scratchBytes(sgemmScratchBytes(*kernel, s, threads, packing) + 64);
  const size_t offset = (64 - reinterpret_cast<uintptr_t>(scratchBytes.data()) % 64) % 64;
  const std::span<std::byte> scratch(scratchBytes.data() + offset, scratchBytes.size() - 64);
  const PackedA packedA = layer->weightsOnLeft ? packA(*kernel, s.m, s.k, a.data(), s.k) : PackedA{};
  const PackedB packedB = layer->weightsOnLeft ? PackedB{} : packB(*kernel, s.k, s.n, b.data(), s.n);
  for (auto _ : state) {
    if (layer->weightsOnLeft) {
      sgemmPackedA(s, packedA, b.data(), s.n, c.data(), s.n, epilogue, pool.get(), scratch);
    } else {
      sgemmPacked(s, a.data(), s.k, packedB, c.data(), s.n, epilogue, pool.get(), scratch);
    }
    benchmark::ClobberMemory();
  }
  setThroughputCounters(state, 2.0 * double(s.m) * double(s.n) * double(s.k), kernel->operands, threads);
  const double weightBytes = layer->weightsOnLeft ? double(packedASize(*kernel, s.m, s.k))
                                                  : double(packedBSize(*kernel, s.k, s.n));
  state.counters["weight_GBps"] = benchmark::Counter(weightBytes / kGiga, benchmark::Counter::kIsIterationInvariantRate);
}

/// The int8 GEMM on an m x k u8 A (zero point 128) and a pre-packed k x n s8 B (zero point 0), the
/// shape of a dynamically quantized linear layer.
void benchS8Gemm(benchmark::State &state, const S8GemmKernel *kernel, GemmShape s, int threads) {
  std::mt19937 rng(1);
  std::vector<uint8_t> a(size_t(s.m * s.k));
  std::vector<int8_t> b(size_t(s.k * s.n));
  for (uint8_t &v : a) v = uint8_t(rng());
  for (int8_t &v : b) v = int8_t(rng());
  const std::vector<int32_t> bZero(size_t(s.n), 0);
  const int32_t aZero = 128;
  std::vector<int32_t> c(size_t(s.m * s.n));
  auto aligned = [](size_t bytes) {
    return std::unique_ptr<std::byte[], void (*)(std::byte *)>(
        static_cast<std::byte *>(std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64)),
        [](std::byte *p) { std::free(p); });
  };
  const auto packed = aligned(packedS8BSize(*kernel, s.k, s.n));
  packS8BInto(*kernel, s.k, s.n, b.data(), /*bSigned=*/true, bZero.data(), packed.get());
  const auto scratch = aligned(s8GemmScratchBytes(s));
  const std::unique_ptr<ThreadPool> pool = makePool(threads);
  const S8GemmA aView{a.data(), s.k, /*isSigned=*/false, &aZero, 1};
  for (auto _ : state) {
    s8GemmPacked(s, aView, PackedS8BView{kernel, s.k, s.n, packed.get()}, c.data(), s.n, pool.get(),
                 {scratch.get(), s8GemmScratchBytes(s)});
    benchmark::ClobberMemory();
  }
  setThroughputCounters(state, 2.0 * double(s.m) * double(s.n) * double(s.k), GemmOperands::U8S8, threads);
}

void registerS8Benchmarks() {
  const S8GemmKernel *kernel = selectedS8GemmKernel();
  if (kernel == nullptr) return;
  for (int threads : kThreadCounts) {
    for (int64_t n : {kSizes[0], kSizes[1]}) {
      std::string name = std::string("S8GemmPacked/") + kernel->name + "/" + std::to_string(n);
      if (threads > 1) name += "/threads:" + std::to_string(threads);
      auto *bench = benchmark::RegisterBenchmark(name.c_str(), benchS8Gemm, kernel, GemmShape{n, n, n}, threads)
                        ->Unit(benchmark::kMillisecond);
      if (threads > 1) bench->UseRealTime();
    }
    for (const LayerShape &layer : kLayerShapes) {
      if (layer.weightsOnLeft) continue;
      const std::string name = std::string("Layer/") + layer.name + "/u8s8/threads:" + std::to_string(threads);
      auto *bench = benchmark::RegisterBenchmark(name.c_str(), benchS8Gemm, kernel, layer.shape, threads)
                        ->Unit(benchmark::kMicrosecond);
      if (threads > 1) bench->UseRealTime();
    }
  }
}

void registerBenchmarks() {
  for (const FmaPeakLoop &loop : fmaPeakLoops()) {
    if (!hasAll(hostIsa(), loop.isa)) continue;
    benchmark::RegisterBenchmark((std::string("FmaPeak/") + loop.name).c_str(), benchFmaPeak, &loop);
  }
  const GemmKernel *selectedBf16 = selectedGemmKernel(GemmOperands::Bf16);
  for (const GemmKernel &kernel : gemmKernels()) {
    if (!canRun(kernel)) continue;
    const bool selected = &kernel == &selectedGemmKernel() || &kernel == selectedBf16;
    for (int threads : kThreadCounts) {
      for (int64_t n : kSizes) {
        if (!selected && (n != kSizes[0] || threads != 1)) continue;
        for (Prepacked prepacked : {Prepacked::None, Prepacked::B, Prepacked::A}) {
          if (prepacked == Prepacked::A && kernel.kPack > 1) continue;
          const char *prefix = prepacked == Prepacked::None ? "Sgemm/"
                               : prepacked == Prepacked::B  ? "SgemmPacked/"
                                                            : "SgemmPackedA/";
          std::string name = prefix + std::string(kernel.name) + "/" + std::to_string(n);
          if (threads > 1) name += "/threads:" + std::to_string(threads);
          auto *bench = benchmark::RegisterBenchmark(name.c_str(), benchSgemm, &kernel, n, prepacked, threads)
                            ->Unit(benchmark::kMillisecond);
          if (threads > 1) bench->UseRealTime();
        }
      }
    }
  }
  for (int threads : kThreadCounts) {
    for (const LayerShape &layer : kLayerShapes) {
      for (const GemmKernel *kernel : {&selectedGemmKernel(), selectedBf16}) {
        if (kernel == nullptr || (layer.weightsOnLeft && kernel->kPack > 1)) continue;
        const std::string type = kernel->operands == GemmOperands::F32 ? "" : "/bf16";
        const std::string name = std::string("Layer/") + layer.name + type + "/threads:" + std::to_string(threads);
        auto *bench = benchmark::RegisterBenchmark(name.c_str(), benchLayer, &layer, kernel, threads)
                          ->Unit(benchmark::kMicrosecond);
        if (threads > 1) bench->UseRealTime();
      }
    }
  }
}

}  // namespace
}  // namespace tessel::cpu

int main(int argc, char **argv) {
  using namespace tessel::cpu;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("cpu_model", cpuModel());
  benchmark::AddCustomContext("host_isa", isaName(hostIsa()));
  benchmark::AddCustomContext("sgemm_kernel", gemmKernelName());
  benchmark::AddCustomContext("fma_peak_loop", bestFmaPeakLoop().name);
  benchmark::AddCustomContext("fma_peak_gflops", std::to_string(measuredPeakFlops(GemmOperands::F32) / 1e9));
  if (const FmaPeakLoop *bf16 = bestFmaPeakLoop(GemmOperands::Bf16)) {
    benchmark::AddCustomContext("bf16_peak_loop", bf16->name);
    benchmark::AddCustomContext("bf16_peak_gflops", std::to_string(measuredPeakFlops(GemmOperands::Bf16) / 1e9));
  }
  if (const FmaPeakLoop *u8s8 = bestFmaPeakLoop(GemmOperands::U8S8)) {
    benchmark::AddCustomContext("u8s8_peak_loop", u8s8->name);
    benchmark::AddCustomContext("u8s8_peak_gops", std::to_string(measuredPeakFlops(GemmOperands::U8S8) / 1e9));
  }
  registerBenchmarks();
  registerS8Benchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
