#include "targets/ref/target.h"

#include <chrono>

#include "targets/ref/interpreter.h"

namespace tessel::ref {

namespace {

class RefModel final : public CompiledModel {
 public:
  explicit RefModel(Model model) : model_(std::move(model)) {}
  const Model &model() const override { return model_; }
  Expected<NamedValues> run(const NamedValues &feeds) override {
    const auto start = std::chrono::steady_clock::now();
    auto outputs = ReferenceInterpreter(model_).run(feeds);
    figures_.latencyUs = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    return outputs;
  }
  RunFigures lastRun() const override { return figures_; }

 private:
  Model model_;
  RunFigures figures_;
};

class RefTarget final : public Target {
 public:
  RefTarget() : Target("ref") {}
  bool needsStaticShapes() const override { return false; }
  Expected<std::unique_ptr<CompiledModel>> compile(Model model, const TargetOptions &) const override {
    return std::unique_ptr<CompiledModel>(new RefModel(std::move(model)));
  }
};

}  // namespace

std::unique_ptr<Target> makeTarget() { return std::make_unique<RefTarget>(); }

}  // namespace tessel::ref
