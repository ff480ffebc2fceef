// If, Loop and Scan on the cpu target. Each If branch or Loop/Scan body becomes a standalone model
// (subgraph.h) that is optimized and planned once, at compile time (and again when an artifact
// loads), into a nested plan sharing the outer plan's thread pool and constant store. At run time
// an If reads its condition, copies the values the taken branch reads into that branch's plan,
// runs its steps and copies the results out; a Loop or Scan does the same per iteration with one
// body plan. Nothing is planned, inferred or walked per run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "targets/cpu/plan.h"

namespace tessel::cpu {

/// Runs the pass pipeline of `optLevel` (shape inference only at -O0), then, until nothing more
/// changes, inlines the Ifs whose condition folded and gives an If's outputs the static types both
/// of its branches plan to, running the pipeline again after each change so shapes reach the rest.
Status optimizeForCpu(Model &model, int optLevel);

class IfStep final : public Step {
 public:
  struct Branch {
    std::string name;  // "then_branch" or "else_branch".
    std::unique_ptr<CpuExecutable::Impl> plan;  // Null: the reference interpreter runs the If.
    std::vector<int> captureOf;  // Per input of the plan: its index among the step's captured values.
  };

  /// A branch without a plan (invalid for the planned shapes) runs as step `stepIndex` of `outer`
  /// on the reference interpreter.
  IfStep(Branch thenBranch, Branch elseBranch, CpuExecutable::Impl &outer, size_t stepIndex);
  /// io.inputs: the condition, then the captured values in the planner's order.
  Status run(const StepIo &io) const override;
  std::string kernelName() const override { return "if (nested plans)"; }
  const Branch &branch(int i) const { return branches_[i]; }

 private:
  Branch branches_[2];
  CpuExecutable::Impl &outer_;
  size_t stepIndex_;
};

class LoopStep final : public Step {
 public:
  struct Body {
    std::unique_ptr<CpuExecutable::Impl> plan;  // Inputs: iteration, condition, carried, captured.
    std::vector<int> captureOf;                 // Per captured input of the plan: its index among the step's.
  };
  /// `carried` values, `scanOutputs` stacked outputs of `scanRows` rows (-1: none used); `tripCountType`
  /// is M's dtype (Undefined when omitted).
  LoopStep(Body body, size_t nodeInputs, size_t carried, size_t scanOutputs, int64_t scanRows, DType tripCountType);
  /// io.inputs: M, cond, the initial carried values (null where omitted), then the captured values.
  Status run(const StepIo &io) const override;
  std::string kernelName() const override { return "loop (nested plan)"; }
  const Body &body() const { return body_; }

 private:
  Body body_;
  size_t nodeInputs_, carried_, scanOutputs_;
  int64_t scanRows_;
  DType tripCountType_;
  std::unique_ptr<std::byte, void (*)(void *)> staging_{nullptr, std::free};  // The carried values between iterations.
};

class ScanStep final : public Step {
 public:
  /// A tensor viewed around its scan axis as [outer, length, inner bytes].
  struct AxisView {
    int64_t outer = 1, length = 0;
    size_t innerBytes = 0;
    bool reverse = false;
  };
  ScanStep(LoopStep::Body body, size_t nodeInputs, size_t states, std::vector<AxisView> inputs,
           std::vector<AxisView> outputs);
  /// io.inputs: the initial states, the scan inputs, then the captured values.
  Status run(const StepIo &io) const override;
  std::string kernelName() const override { return "scan (nested plan)"; }
  const LoopStep::Body &body() const { return body_; }

 private:
  LoopStep::Body body_;
  size_t nodeInputs_, states_;
  std::vector<AxisView> inputs_, outputs_;
  std::unique_ptr<std::byte, void (*)(void *)> staging_{nullptr, std::free};
};

/// Plans `planned.node` (a Scan of opset 9 or later) as a ScanStep whose body plan is made once and
/// run per element, slices of the scan inputs copied in and of the scan outputs copied out.
Expected<std::unique_ptr<Step>> planScan(CpuExecutable::Impl &outer, const PlannedStep &planned,
                                         const std::vector<const Value *> &captures, std::string &reason);

/// Plans `planned.node` (a Loop) as a LoopStep whose body plan is made once and run per
/// iteration. Returns null and sets `reason` where the body cannot be planned statically: a value
/// without a static shape, carried values that change type, or scan outputs whose length is known
/// only at run time.
Expected<std::unique_ptr<Step>> planLoop(CpuExecutable::Impl &outer, const PlannedStep &planned,
                                         const std::vector<const Value *> &captures, std::string &reason);

/// Plans `planned.node` (an If, to be step `stepIndex` of `outer`) as an IfStep, its captured values
/// being `captures` (planned.captured holds their slots). Returns null and sets `reason` when a
/// branch cannot be planned statically: it reads or returns a value without a static shape, or
/// its outputs differ from the If's. A branch that fails to optimize for these shapes gets no plan.
Expected<std::unique_ptr<Step>> planIf(CpuExecutable::Impl &outer, const PlannedStep &planned, size_t stepIndex,
                                       const std::vector<const Value *> &captures, std::string &reason);

}  // namespace tessel::cpu
