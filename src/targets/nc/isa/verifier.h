// Checks accelerator instructions against the tile rules of accelerator-model.md section 7 (and
// the memory/engine/dtype rules of sections 3 and 4) before they are scheduled or simulated. Runs
// on what the assembler or the decoder returns; each violation is one message naming the
// instruction index, its mnemonic, the rule id and the offending value. Besides the tile rules it
// checks the encoding-level rules: SBUF/PSUM free dims within the hardware's int16 stride / uint16
// count (HBM unrestricted), at most kMaxWaits waits, and the DMA queue (dma_copy only).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/diagnostic.h"
#include "targets/nc/isa/instruction.h"
#include "targets/nc/machine/profile.h"

namespace tessel::nc {

/// The machine numbers the verifier needs. Defaults are nc-v2 (section 10); isaLimitsFor() fills
/// them from a profile. The members without a profile key (T7, T8 and the DVE transpose size) are
/// the section 7 constants, the same on every profile.
struct IsaLimits {
  int partitions = 128;
  uint64_t sbufBytesPerPartition = 196608;
  uint64_t psumBytesPerPartition = 16384;
  uint64_t psumBankBytes = 2048;            // 512 fp32.
  uint64_t hbmBytes = 17179869184ull;       // Per core.
  int matmulMaxK = 128, matmulMaxStationaryFree = 128, matmulMaxMovingFree = 512;
  uint64_t dveActMaxFreeSbuf = 65536, dveActMaxFreePsum = 4096;
  uint64_t bnStatsMaxFree = 512;
  int peTransposeMax = 128, dveTransposeMax = 32;
  uint32_t actReduceOps = aluOpBit(AluOp::Add);  // T15: aluOpBit()s of ACT's accumulate ops; nc-v2: add.
  bool actBiasImmediate = false;            // T15: nc-v2 takes the ACT bias from a [P,1] vector only.
  bool poolPsumAccess = false;              // T11: POOL reaches SBUF only.
  int dmaQueues = 16;                       // dma_copy queue ids 0..dmaQueues-1.
  int coresPerChip = 2;                     // Collectives span 1..coresPerChip cores.
  bool operator==(const IsaLimits &) const = default;
};

/// The limits of `profile`: its partitions, memory sizes, PE array, PSUM bank, ACT reduce ops and
/// bias, POOL's PSUM access and DMA queues per engine.
IsaLimits isaLimitsFor(const MachineProfile &profile);

/// Returns every violation in one instruction (empty when legal). `index` labels the messages.
std::vector<std::string> verifyInstruction(const Instruction &insn, size_t index, const IsaLimits &limits);

/// Verifies a program; on failure the Diagnostic (InvalidArgument) lists every violation, one per line.
Status verifyProgram(const std::vector<Instruction> &program, const IsaLimits &limits = IsaLimits());

}  // namespace tessel::nc
