// Timing cost functions; see cost.h. Each states its formula and source section in one comment line.
#include "targets/nc/machine/cost.h"

#include <algorithm>
#include <cmath>

namespace tessel::nc {
namespace {

int64_t ceilDiv(int64_t numerator, int64_t denominator) { return (numerator + denominator - 1) / denominator; }

int64_t minIiCycles(const MachineProfile &profile, Engine engine) {
  switch (engine) {
    case Engine::PE: return profile.pe.mmMinIiCycles;
    case Engine::DVE: return profile.dve.minIiCycles;
    case Engine::ACT: return profile.act.minIiCycles;
    case Engine::POOL:
    case Engine::SP:
    case Engine::DMA: break;
  }
  TESSEL_CHECK(false, "engine {} has no MIN_II", engineName(engine));
  return 0;
}

}  // namespace

double engineClockGHz(const MachineProfile &profile, Engine engine) {
  switch (engine) {
    case Engine::PE: return profile.pe.clockGHz;
    case Engine::DVE: return profile.dve.clockGHz;
    case Engine::ACT: return profile.act.clockGHz;
    case Engine::POOL: return profile.pool.clockGHz;
    case Engine::SP: return profile.sp.clockGHz;
    case Engine::DMA: break;  // DMA time is in ns (dmaChunkNs), not cycles.
  }
  TESSEL_CHECK(false, "engine {} has no clock in the profile", engineName(engine));
  return 0;
}

// ns = cycles / f_e (section 9.1: each engine has its own clock).
double cyclesToNs(const MachineProfile &profile, Engine engine, double cycles) {
  return cycles / engineClockGHz(profile, engine);
}

// FLOPs = 2*K*M*N, K doubled in fp8 double-row mode (section 5.1).
double matmulFlops(const MatmulShape &shape) {
  return 2.0 * static_cast<double>(shape.k) * (shape.doubleRow ? 2 : 1) * shape.m * shape.n;
}

// MM_II = max(min(MIN_II_PE, M), N) x fp32Factor for fp32 inputs (tf32 runs at bf16 speed) (sections 5.1, 6.1 [P:ARCH2, ISAC]).
int64_t costMatmulCycles(const MachineProfile &profile, const MatmulShape &shape) {
  int64_t cycles = std::max(std::min(profile.pe.mmMinIiCycles, shape.m), shape.n);
  return shape.dtype == PeDtype::Fp32 ? cycles * profile.pe.fp32Factor : cycles;
}

// LS_II = ceil(M / loadStationarySpeedup) (section 5.1 [P:PERF]).
int64_t costLoadStationaryCycles(const MachineProfile &profile, int64_t m) {
  return ceilDiv(m, profile.pe.loadStationarySpeedup);
}

// pair = max(LS_II, MM_II) once the stream is full (section 9.2 [P:ARCH2]).
int64_t costMatmulStreamPairCycles(const MachineProfile &profile, const MatmulShape &shape) {
  return std::max(costLoadStationaryCycles(profile, shape.m), costMatmulCycles(profile, shape));
}

// II = max(P, min(MIN_II_PE, F)) back to back (section 6.1 [P:ISAC]).
int64_t costPeTransposeCycles(const MachineProfile &profile, int64_t partitions, int64_t freeElements) {
  return std::max(partitions, std::min(profile.pe.mmMinIiCycles, freeElements));
}

// peak = FLOPs(rows x cols x bankFp32Elements matmul) / pair cycles x f_PE (sections 5.1, 11.1 [D]).
double pePeakFlopsPerSec(const MachineProfile &profile, PeDtype dtype) {
  MatmulShape shape{profile.pe.rows, profile.pe.cols, profile.psum.bankFp32Elements, dtype,
                    /*doubleRow=*/dtype == PeDtype::Fp8 && profile.pe.fp8DoubleRow};
  double cycles = static_cast<double>(costMatmulStreamPairCycles(profile, shape));
  return matmulFlops(shape) / cycles * profile.pe.clockGHz * 1e9;
}

double dvePerfModeSpeedup(const MachineProfile &profile, DvePerfCase perfCase) {
  const DvePerfModeSpeedup &speedup = profile.dve.perfModeSpeedup;
  switch (perfCase) {
    case DvePerfCase::None: return 1.0;
    case DvePerfCase::CopyOrTensorScalarBf16SbufContiguous: return speedup.copyOrTensorScalarBf16SbufContiguous;
    case DvePerfCase::CopyOrTensorScalarBf16Other: return speedup.copyOrTensorScalarBf16Other;
    case DvePerfCase::TensorTensorBf16Sbuf: return speedup.tensorTensorBf16Sbuf;
  }
  TESSEL_CHECK(false, "unknown DVE perf case {}", static_cast<int>(perfCase));
  return 1.0;
}

// II = max(MIN_II_e, ceil(N x inputs x (stride > threshold ? factor : 1) / speedup)) (section 9.2 [P:ARCH2]).
int64_t costStreamingCycles(const MachineProfile &profile, Engine engine, const StreamShape &shape) {
  TESSEL_CHECK(engine == Engine::DVE || engine == Engine::ACT, "streaming cost is for DVE and ACT");
  TESSEL_CHECK(shape.speedup > 0, "speedup {}", shape.speedup);
  int64_t work = shape.elementsPerPartition * shape.streamedInputs;
  if (shape.innermostStrideBytes > profile.sbuf.stridedPenaltyAboveStrideBytes) work *= profile.sbuf.stridedPenaltyFactor;
  auto scaled = static_cast<int64_t>(std::ceil(static_cast<double>(work) / shape.speedup));
  return std::max(minIiCycles(profile, engine), scaled);
}

// II = max(MIN_II_ACT, N) + (reduce ? MIN_II_ACT : 0) (sections 5.3, 6.1 [P:ISAC]).
int64_t costActivationCycles(const MachineProfile &profile, int64_t elementsPerPartition, bool reduce) {
  int64_t cycles = costStreamingCycles(profile, Engine::ACT, StreamShape{elementsPerPartition});
  return reduce ? cycles + profile.act.minIiCycles : cycles;
}

// II = max(MIN_II_DVE, N) + MIN_II_DVE (section 6.1 [P:ISAC]); the stream takes tensor_scalar's nc-v3
// performance mode [A]: no separate figure is published.
int64_t costTensorScalarReduceCycles(const MachineProfile &profile, const StreamShape &shape) {
  return costStreamingCycles(profile, Engine::DVE, shape) + profile.dve.minIiCycles;
}

// II = GPSIMD_START + N (sections 5.4, 6.1 [P:ISAC]).
int64_t costPoolCycles(const MachineProfile &profile, int64_t elementsPerPartition) {
  return profile.pool.startCycles + elementsPerPartition;
}

// spacing = II + PIPE_LAT_e + SEM_LAT (section 9.1 [A], calibrated on ACT ~264 cycles [P:PERF]).
int64_t dependentIssueCycles(const MachineProfile &profile, Engine engine, int64_t iiCycles) {
  switch (engine) {
    case Engine::PE: return iiCycles + profile.pe.pipeLatencyCycles + profile.semLatencyCycles;
    case Engine::DVE: return iiCycles + profile.dve.pipeLatencyCycles + profile.semLatencyCycles;
    case Engine::ACT: return iiCycles + profile.act.pipeLatencyCycles + profile.semLatencyCycles;
    case Engine::POOL:
    case Engine::SP:
    case Engine::DMA: break;
  }
  TESSEL_CHECK(false, "engine {} has no pipeline latency in the profile", engineName(engine));
  return 0;
}

// e(bytes): piecewise linear in log2(bytes) through the profile's points, constant past both ends
// (section 9.4; the curve's shape [P:DMABW], its plateau [A] checked against anchor 2).
double dmaChunkEfficiency(const MachineProfile &profile, int64_t bytes) {
  const std::vector<DmaChunkEfficiency> &curve = profile.dma.chunkEfficiency;
  if (curve.empty()) return 1.0;
  if (bytes <= curve.front().bytes) return curve.front().efficiency;
  if (bytes >= curve.back().bytes) return curve.back().efficiency;
  size_t i = 1;
  while (curve[i].bytes < bytes) ++i;
  const DmaChunkEfficiency &lo = curve[i - 1], &hi = curve[i];
  double t = (std::log2(static_cast<double>(bytes)) - std::log2(static_cast<double>(lo.bytes))) /
             (std::log2(static_cast<double>(hi.bytes)) - std::log2(static_cast<double>(lo.bytes)));
  return lo.efficiency + t * (hi.efficiency - lo.efficiency);
}

// t_chunk = max(bytes / (BW_ENGINE x e(bytes) x efficiency), T_CHUNK_MIN) (section 9.4 [P:DMA, DMABW; A]).
double dmaChunkNs(const MachineProfile &profile, int64_t bytes, double efficiency) {
  TESSEL_CHECK(efficiency > 0 && efficiency <= 1, "DMA efficiency {}", efficiency);
  const double rate = profile.dma.bytesPerNsPerEngine * dmaChunkEfficiency(profile, bytes) * efficiency;
  return std::max(static_cast<double>(bytes) / rate, profile.dma.chunkMinNs);
}

// t_transfer = T_XFER_FIXED + sum_chunks t_chunk (section 9.4 [P:DMA; A]).
double dmaTransferNs(const MachineProfile &profile, int64_t chunks, int64_t bytesPerChunk, double efficiency) {
  return profile.dma.transferFixedNs + static_cast<double>(chunks) * dmaChunkNs(profile, bytesPerChunk, efficiency);
}

// ceil(P / DMA engines per core): partitions are split over the engines (section 9.4 [P:DMA]).
int64_t dmaPartitionsPerEngine(const MachineProfile &profile, int64_t partitions) {
  return ceilDiv(partitions, profile.dma.enginesPerCore);
}

// t = T_TRIGGER + t_transfer(busiest engine's partitions x chunks per partition) (section 9.4 [P:DMA, DMABW; A]).
double costDmaCopyNs(const MachineProfile &profile, const DmaCopyShape &shape) {
  TESSEL_CHECK(shape.chunksPerPartition > 0, "chunks per partition {}", shape.chunksPerPartition);
  int64_t chunks = dmaPartitionsPerEngine(profile, shape.partitions) * shape.chunksPerPartition;
  int64_t bytesPerChunk = ceilDiv(shape.bytesPerPartition, shape.chunksPerPartition);
  return profile.dma.triggerNs + dmaTransferNs(profile, chunks, bytesPerChunk, shape.efficiency);
}

// BW_core = engines per core x BW_ENGINE (section 5.5 [P:DMA, DMABW]).
double dmaBytesPerNsPerCore(const MachineProfile &profile) {
  return static_cast<double>(profile.dma.enginesPerCore) * profile.dma.bytesPerNsPerEngine;
}

double costCollectiveNs(const MachineProfile &profile, Collective kind, int64_t bytesPerCore, int64_t cores) {
  double moved = static_cast<double>(bytesPerCore) * static_cast<double>(cores - 1) / static_cast<double>(cores);
  if (kind == Collective::AllReduce) moved *= 2;
  return profile.collective.latencyNs + moved / profile.collective.bytesPerNs;
}

}  // namespace tessel::nc
