// The cpu target ("cpu") behind the Target interface: compiles with compileCpu, reads and writes
// .tsl artifacts, times each run and profiles per step. A model with symbolic input dims gets one
// CompiledModel for every shape (dynamic_executable.h).
#pragma once

#include <memory>

#include "targets/target.h"

namespace tessel::cpu {

std::unique_ptr<Target> makeTarget();

}  // namespace tessel::cpu
