// Timing cost functions of the NeuronCore-class machine model: per-engine initiation intervals
// (accelerator-model.md section 9.2, per-instruction formulas of sections 5 and 6.1), dependent-issue
// spacing (section 9.1) and DMA transfer time (section 9.4). Each is a pure function of a profile and an
// instruction shape; the scheduler and the timing simulator both call them, so they cannot disagree.
// Every machine number comes from the profile. Not here: port arbitration, the DMA global bandwidth
// limiter, trigger overlap between queued transfers and throttling, which need the simulator's state.
#pragma once

#include <cstdint>

#include "targets/nc/machine/engine.h"
#include "targets/nc/machine/profile.h"

namespace tessel::nc {

/// Input dtype class of a matmul; fp32 and tf32 pair only with each other.
enum class PeDtype { Fp8, Bf16, Fp16, Tf32, Fp32 };

/// The clock of `engine` in GHz (cycles per ns). PE, DVE, ACT, POOL and SP only: DMA time is in ns.
double engineClockGHz(const MachineProfile &profile, Engine engine);

/// Converts `cycles` of `engine` to nanoseconds.
double cyclesToNs(const MachineProfile &profile, Engine engine, double cycles);

/// One nc_matmul: stationary [k, m], moving [k, n]. With `doubleRow` (fp8 only, profile.pe.fp8DoubleRow)
/// k covers two rows of the array.
struct MatmulShape {
  int64_t k = 0, m = 0, n = 0;
  PeDtype dtype = PeDtype::Bf16;
  bool doubleRow = false;
};

/// The FLOPs of a matmul, 2*k*m*n.
double matmulFlops(const MatmulShape &shape);

/// The MultiplyMoving initiation interval in PE cycles.
int64_t costMatmulCycles(const MachineProfile &profile, const MatmulShape &shape);

/// The LoadStationary initiation interval in PE cycles for a stationary with `m` columns.
int64_t costLoadStationaryCycles(const MachineProfile &profile, int64_t m);

/// PE cycles per (LoadStationary, MultiplyMoving) pair in a full stream (the LS runs in the background).
int64_t costMatmulStreamPairCycles(const MachineProfile &profile, const MatmulShape &shape);

/// The PE nc_transpose initiation interval for a [partitions, freeElements] tile, in PE cycles.
int64_t costPeTransposeCycles(const MachineProfile &profile, int64_t partitions, int64_t freeElements);

/// Peak PE FLOP/s of one core for `dtype`: a stream of full-array matmuls with one PSUM bank of moving
/// columns (fp8 uses double row where the profile has it).
double pePeakFlopsPerSec(const MachineProfile &profile, PeDtype dtype);

/// A streaming DVE/ACT instruction: N elements per partition, one or two streamed inputs, the
/// innermost stride in bytes of its operands, and a speedup (DVE performance mode; 1 otherwise).
struct StreamShape {
  int64_t elementsPerPartition = 0;
  int64_t streamedInputs = 1;
  int64_t innermostStrideBytes = 0;
  double speedup = 1;
};

/// The cases of the nc-v3 DVE performance mode (section 5.2).
enum class DvePerfCase {
  None,
  CopyOrTensorScalarBf16SbufContiguous,
  CopyOrTensorScalarBf16Other,
  TensorTensorBf16Sbuf,
};

/// The DVE speedup the profile gives `perfCase` (1 for None, and for every case on nc-v2).
double dvePerfModeSpeedup(const MachineProfile &profile, DvePerfCase perfCase);

/// The initiation interval of a streaming instruction on `engine` (DVE or ACT), in its cycles.
int64_t costStreamingCycles(const MachineProfile &profile, Engine engine, const StreamShape &shape);

/// An ACT activation over N elements per partition; `reduce` adds the free-axis reduction.
int64_t costActivationCycles(const MachineProfile &profile, int64_t elementsPerPartition, bool reduce);

/// A DVE tensor_scalar_reduce: the tensor_scalar stream plus the reduction's MIN_II.
int64_t costTensorScalarReduceCycles(const MachineProfile &profile, const StreamShape &shape);

/// A POOL instruction with the generic formula over N elements per partition, in POOL cycles.
int64_t costPoolCycles(const MachineProfile &profile, int64_t elementsPerPartition);

/// The spacing, in cycles of `engine` (PE, DVE or ACT), of a chain of instructions on it where each
/// waits for the previous one's result through a semaphore; `iiCycles` is each one's cost.
int64_t dependentIssueCycles(const MachineProfile &profile, Engine engine, int64_t iiCycles);

/// The fraction of its sustained rate a DMA engine reaches on contiguous chunks of `bytes`
/// (profile.dma.chunkEfficiency, interpolated in log2(bytes)).
double dmaChunkEfficiency(const MachineProfile &profile, int64_t bytes);

/// Time one DMA engine spends on one contiguous chunk of `bytes`, at `efficiency` of its rate (on top
/// of the chunk-size efficiency).
double dmaChunkNs(const MachineProfile &profile, int64_t bytes, double efficiency = 1.0);

/// Time one DMA engine is busy with one transfer of `chunks` equal chunks (no trigger latency).
double dmaTransferNs(const MachineProfile &profile, int64_t chunks, int64_t bytesPerChunk,
                     double efficiency = 1.0);

/// One dma_copy of `partitions` partitions, each `bytesPerPartition` bytes in `chunksPerPartition`
/// equal contiguous chunks; `efficiency` < 1 for DMA transposes.
struct DmaCopyShape {
  int64_t partitions = 0;
  int64_t bytesPerPartition = 0;
  int64_t chunksPerPartition = 1;
  double efficiency = 1.0;
};

/// Partitions the busiest DMA engine serves when a copy is split over the core's engines.
int64_t dmaPartitionsPerEngine(const MachineProfile &profile, int64_t partitions);

/// Trigger to last byte of an isolated dma_copy (no other traffic, no global limiter), in ns; the
/// consumer adds the semaphore latency in its own cycles.
double costDmaCopyNs(const MachineProfile &profile, const DmaCopyShape &shape);

/// Sustained DMA bandwidth of one core with all its engines busy, bytes/ns (= GB/s).
double dmaBytesPerNsPerCore(const MachineProfile &profile);

enum class Collective { AllGather, AllReduce };

/// One collective over `cores` cores of a `bytesPerCore`-byte buffer, in ns, in the ring model of the
/// profile's `collective`: latencyNs + moved / bytesPerNs, where an all_gather moves
/// bytes * (cores - 1) / cores and an all_reduce twice that (a reduce-scatter, then an all_gather).
double costCollectiveNs(const MachineProfile &profile, Collective kind, int64_t bytesPerCore, int64_t cores);

}  // namespace tessel::nc
