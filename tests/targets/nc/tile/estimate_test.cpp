// The scheduler's estimate of an instruction's busy time (estimate.h) equals the time the timing
// simulator keeps its engine busy, for every compute opcode on every engine that runs it, on both
// profiles, with bf16 and f32 operands in SBUF and PSUM: both call isa/instruction_cost.h, and this
// test keeps it that way. A matmul's estimate is its stream pair: the longer of its LoadStationary
// and MultiplyMoving halves (section 9.2).
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "targets/nc/isa/assembler.h"
#include "targets/nc/sim/simulator.h"
#include "targets/nc/sim/timing/throttle.h"
#include "targets/nc/tile/estimate.h"
#include "test_util.h"

namespace tessel::nc::tile {
namespace {

constexpr double kToleranceNs = 1e-6;

/// One-instruction programs: every compute opcode on each engine that runs it, in several variants.
std::vector<std::string> instructionTexts() {
  std::vector<std::string> texts;
  for (std::string dt : {"bf16", "f32"}) {
    for (std::string in : {"sbuf", "psum"}) {
      // Streaming ops on DVE/ACT/POOL: `in` is the input's memory (POOL reads SBUF only).
      const std::string src = fmt::format("src={}[p0:128, off 0, [1,512]]:{}", in, dt);
      const std::string dst = fmt::format("dst=sbuf[p0:128, off 4096, [1,512]]:{}", dt);
      const std::string in1 = fmt::format("in1=sbuf[p0:128, off 8192, [1,512]]:{}", dt);
      const std::string in0 = fmt::format("in0={}[p0:128, off 0, [1,512]]:{}", in, dt);
      const std::string scalar = "scalar0=sbuf[p0:128, off 12288, [1,1]]:f32";
      for (std::string engine : {"DVE", "ACT"}) {
        texts.push_back(fmt::format("tensor_copy.{} {} {}", engine, dst, src));
        texts.push_back(fmt::format("tensor_scalar.{} {} {} {} op0=multiply", engine, dst, src, scalar));
        texts.push_back(fmt::format("tensor_scalar.{} {} {} op0=add imm=1", engine, dst, src));
      }
      for (std::string op : {"add", "multiply", "maximum"})
        texts.push_back(fmt::format("tensor_tensor.DVE {} {} {} op0={}", dst, in0, in1, op));
      // Strided (non-contiguous) operands: the nc-v3 2x performance mode and the stride penalty.
      texts.push_back(fmt::format("tensor_copy.DVE dst=sbuf[p0:128, off 4096, [2,256]]:{0} "
                                  "src={1}[p0:128, off 0, [2,256]]:{0}",
                                  dt, in));
      texts.push_back(fmt::format("activation.ACT {} {} func=exp", dst, src));
      texts.push_back(fmt::format("activation.ACT {} {} func=exp accum=sbuf[p0:128, off 12288, [1,1]]:f32 op0=add", dst, src));
      for (std::string op : {"add", "maximum"})
        texts.push_back(fmt::format("tensor_reduce.DVE dst=sbuf[p0:128, off 4096, [1,1]]:{} {} op0={}", dt, src, op));
      texts.push_back(fmt::format("nc_transpose.DVE dst=sbuf[p0:32, off 4096, [1,32]]:{0} "
                                  "src={1}[p0:32, off 0, [1,32]]:{0}",
                                  dt, in));
      texts.push_back(fmt::format("bn_stats.DVE dst=sbuf[p0:128, off 4096, [1,6]]:f32 {}", src));
      texts.push_back(fmt::format("bn_aggr.DVE dst=sbuf[p0:128, off 4096, [1,2]]:f32 "
                                  "src={}[p0:128, off 0, [1,12]]:f32",
                                  in));
      texts.push_back(fmt::format("memset.DVE dst={}[p0:128, off 0, [1,512]]:{} imm=0", in, dt));
      texts.push_back(fmt::format("memset.DVE dst={}[p0:128, off 0, [1,512]]:{} imm=1", in, dt));
      if (in == "sbuf") {
        texts.push_back(fmt::format("tensor_copy.POOL {} {}", dst, src));
        texts.push_back(fmt::format("tensor_scalar.POOL {} {} op0=add imm=1", dst, src));
        texts.push_back(fmt::format("tensor_tensor.POOL {} {} {} op0=add", dst, in0, in1));
        texts.push_back(fmt::format("memset.POOL {} imm=0", dst));
        texts.push_back(fmt::format("affine_select.POOL {} {}", dst, src));
        texts.push_back(fmt::format("nc_transpose.PE dst=psum[p0:64, off 0, [1,128]]:{0} "
                                    "src=sbuf[p0:128, off 0, [1,64]]:{0}",
                                    dt));
        // Matmuls with a small and a large moving free size (LS- and MM-bound pairs).
        for (int n : {16, 512})
          texts.push_back(fmt::format("nc_matmul.PE dst=psum[p0:128, off 0, [1,{1}]]:f32 "
                                      "stationary=sbuf[p0:128, off 0, [1,128]]:{0} "
                                      "moving=sbuf[p0:128, off 1024, [1,{1}]]:{0}",
                                      dt, n));
      }
    }
  }
  texts.push_back("iota.POOL dst=sbuf[p0:128, off 0, [1,512]]:i32");
  return texts;
}

/// The simulated busy time of instruction 0: its event's end minus start (a matmul: the longer of
/// its LoadStationary and MultiplyMoving events, the latter without the nc-v3 power throttle's
/// stretch, a run-time effect the scheduler does not model).
double simulatedBusyNs(const Timeline &timeline, const MachineProfile &profile) {
  double busy = 0;
  for (const TimelineEvent &event : timeline.events) {
    if (event.instruction != 0) continue;
    double cap = 1;
    if (event.track == "PE.Matmul" && event.name == "Matmul") cap = PeThrottle(profile).capAt(event.startNs);
    busy = std::max(busy, (event.endNs - event.startNs) * cap);
  }
  return busy;
}

TEST(EstimateTest, BusyTimeMatchesTimingSimulatorForEveryOpcode) {
  for (std::string name : {"nc-v2", "nc-v3"}) {
    MachineProfile profile = loadTestProfile(name);
    for (const std::string &text : instructionTexts()) {
      SCOPED_TRACE(name + ": " + text);
      Expected<std::vector<Instruction>> program = assemble(text, "estimate_test.s");
      EXPECT_TRUE(program.ok()) << program.diag().str();
      if (!program.ok()) continue;
      SimulateOptions options;
      options.timingOnly = true;
      Expected<SimulationResult> result = simulate(*program, profile, nullptr, options);
      EXPECT_TRUE(result.ok()) << result.diag().str();
      if (!result.ok()) continue;
      const Instruction &insn = program->front();
      InstructionEstimate estimate = estimateInstruction(insn, insn.engine, profile);
      EXPECT_GT(estimate.busyNs, 0);
      EXPECT_NEAR(estimate.busyNs, simulatedBusyNs(result->timeline, profile), kToleranceNs);
    }
  }
}

// Section 5.2: DVE's nc-v3 performance mode depends on the data operands (dst and src), not on
// tensor_scalar's f32 [P,1] scalar, so a bf16 tensor_scalar with a per-partition scalar keeps it.
TEST(EstimateTest, Bf16TensorScalarWithF32ScalarRunsInPerformanceMode) {
  MachineProfile v3 = loadTestProfile("nc-v3");
  Expected<std::vector<Instruction>> program =
      assemble("tensor_scalar.DVE dst=sbuf[p0:128, off 4096, [1,512]]:bf16 src=sbuf[p0:128, off 0, [1,512]]:bf16 "
               "scalar0=sbuf[p0:128, off 12288, [1,1]]:f32 op0=multiply",
               "estimate_test.s");
  ASSERT_TRUE(program.ok()) << program.diag().str();
  const Instruction &insn = program->front();
  InstructionEstimate dve = estimateInstruction(insn, Engine::DVE, v3);
  InstructionEstimate act = estimateInstruction(insn, Engine::ACT, v3);
  EXPECT_TRUE(dve.dvePerfMode);
  EXPECT_LT(dve.busyNs, act.busyNs);
}

}  // namespace
}  // namespace tessel::nc::tile
