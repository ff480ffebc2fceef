// SGEMM throughput against the machine's own single-core FMA peak, measured in the same run.
//
//   FmaPeak/<loop>               independent FMA chains in each ISA the host has (GFLOP/s)
//   Sgemm/<variant>/<n>          C = A*B, square n, B packed on the fly (every runnable variant at
//                                the smallest size, the selected variant at every size)
//   SgemmPacked/<variant>/<n>    the same with B packed once beforehand (the weights path)
//
// Counters: GFLOPS, and peak_fraction = achieved / the best loop's measured peak. Single-threaded,
// like the kernels. Rates are per CPU second (thread CPU time for the peak, Google Benchmark's CPU
// time for the rest): the machines are shared, and wall time would count other tenants' work. Run: build-*/bin/tessel_gemm_bench [--benchmark_repetitions=3 ...]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "targets/cpu/kernels/fma_peak.h"
#include "targets/cpu/kernels/gemm.h"

namespace tessel::cpu {
namespace {

constexpr int64_t kSizes[] = {1024, 2048, 4096};
constexpr double kGiga = 1e9;
constexpr int64_t kPeakIterations = 20'000'000;  // About 0.1 s per trial at AVX-512 peak.
constexpr int kPeakTrials = 5;                   // Best of these is the peak (the machine is shared).

/// CPU time of this thread: the machines are shared, and wall time would count other tenants.
double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

/// The best FMA loop's throughput in FLOP/s, measured once (best of a few trials).
double measuredPeakFlops() {
  static const double peak = [] {
    const FmaPeakLoop &loop = bestFmaPeakLoop();
    double best = 0.0;
    for (int trial = 0; trial < kPeakTrials; ++trial) {
      const double start = threadCpuSeconds();
      benchmark::DoNotOptimize(loop.run(kPeakIterations, float(trial)));
      const double elapsed = threadCpuSeconds() - start;
      best = std::max(best, double(kPeakIterations * loop.flopsPerIteration) / elapsed);
    }
    return best;
  }();
  return peak;
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

void setThroughputCounters(benchmark::State &state, double flopsPerIteration) {
  state.counters["GFLOPS"] =
      benchmark::Counter(flopsPerIteration / kGiga, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_fraction"] =
      benchmark::Counter(flopsPerIteration / measuredPeakFlops(), benchmark::Counter::kIsIterationInvariantRate);
}

void benchFmaPeak(benchmark::State &state, const FmaPeakLoop *loop) {
  const int64_t iterations = kPeakIterations / 10;
  float seed = 1.0f;
  for (auto _ : state) benchmark::DoNotOptimize(loop->run(iterations, seed));
  setThroughputCounters(state, double(iterations * loop->flopsPerIteration));
}

std::vector<float> randomMatrix(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(count));
  for (float &x : v) x = dist(rng);
  return v;
}

void benchSgemm(benchmark::State &state, const GemmKernel *kernel, int64_t n, bool prepacked) {
  const std::vector<float> a = randomMatrix(n * n, 1), b = randomMatrix(n * n, 2);
  std::vector<float> c(size_t(n * n));
  const GemmShape shape{n, n, n};
  const PackedB packed = prepacked ? packB(*kernel, n, n, b.data(), n) : PackedB{};
  for (auto _ : state) {
    if (prepacked) {
      sgemmPacked(shape, a.data(), n, packed, c.data(), n);
    } else {
      sgemm(*kernel, shape, a.data(), n, b.data(), n, c.data(), n);
    }
    benchmark::ClobberMemory();
  }
  setThroughputCounters(state, 2.0 * double(n) * double(n) * double(n));
}

void registerBenchmarks() {
  for (const FmaPeakLoop &loop : fmaPeakLoops()) {
    if (!hasAll(hostIsa(), loop.isa)) continue;
    benchmark::RegisterBenchmark((std::string("FmaPeak/") + loop.name).c_str(), benchFmaPeak, &loop);
  }
  const GemmKernel *selected = &selectedGemmKernel();
  for (const GemmKernel &kernel : gemmKernels()) {
    if (!canRun(kernel)) continue;
    for (int64_t n : kSizes) {
      if (&kernel != selected && n != kSizes[0]) continue;
      for (bool prepacked : {false, true}) {
        const std::string name =
            std::string(prepacked ? "SgemmPacked/" : "Sgemm/") + kernel.name + "/" + std::to_string(n);
        benchmark::RegisterBenchmark(name.c_str(), benchSgemm, &kernel, n, prepacked)
            ->Unit(benchmark::kMillisecond);
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
  benchmark::AddCustomContext("fma_peak_gflops", std::to_string(measuredPeakFlops() / 1e9));
  registerBenchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
