// The timing numbers of one instruction on its engine, taken from the cost functions of
// machine/cost.h (accelerator-model.md sections 5, 6.1 and 9.2): the busy time (initiation interval)
// that keeps its engine occupied, the pipeline latency after which its results are visible, the
// LoadStationary half of a matmul, and the FLOPs the profiler counts. This file only maps an
// instruction's operands (shapes, dtypes, memories, strides) onto the cost functions' shapes; it
// derives no machine number of its own. dma_copy is timed by the DMA model (sim/timing/dma_transfer.h).
// This is the one source of truth for a compute instruction's busy time: the timing simulator runs
// it on every instruction, and the kernel compiler's scheduler (tile/estimate.h) on the instruction
// it is about to emit, so the two cannot disagree (style-examples.md section 6).
#pragma once

#include <cstddef>

#include "support/diagnostic.h"
#include "targets/nc/isa/instruction.h"
#include "targets/nc/machine/cost.h"
#include "targets/nc/machine/profile.h"

namespace tessel::nc {

/// The timing of one non-DMA instruction, in ns of simulated time.
struct InstructionCost {
  double busyNs = 0;            // Initiation interval on the engine (the MultiplyMoving half for nc_matmul).
  double pipeLatencyNs = 0;     // End of the busy time to results visible (section 9.1).
  double loadStationaryNs = 0;  // nc_matmul: the LoadStationary half; 0 otherwise.
  double matmulFlops = 0;       // Useful matmul FLOPs, fp8 weighted 0.5 (section 8).
  double peFlops = 0;           // All PE FLOPs (matmuls and PE transposes), same weighting.
  DvePerfCase dvePerfCase = DvePerfCase::None;  // The nc-v3 DVE performance-mode case it runs in.
  bool dvePerfMode = false;     // Runs in a DVE performance mode that the profile speeds up.
};

/// The cost of instruction `index` (any opcode but dma_copy). Errors name the instruction when an
/// opcode/engine pair has no timing rule (the verifier rejects such pairs first).
Expected<InstructionCost> costInstruction(const Instruction &insn, size_t index, const MachineProfile &profile);

/// The cost of instruction `index` as if it ran on `engine` instead of insn.engine (the scheduler
/// weighs each engine an op may use before it picks one).
Expected<InstructionCost> costInstructionOn(const Instruction &insn, Engine engine, size_t index,
                                            const MachineProfile &profile);

/// The matmul dtype class of a PE input dtype (fp8 variants, bf16, fp16, tf32, fp32).
PeDtype peDtypeOf(DType dtype);

/// The innermost stride, in bytes, that the streaming cost (section 9.2) sees for `ap`: the stride of
/// its innermost dim with more than one element, or one element when it has none.
int64_t innermostStrideBytes(const AccessPattern &ap);

}  // namespace tessel::nc
