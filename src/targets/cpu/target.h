// The cpu target ("cpu") behind the Target interface: compiles with compileCpu, reads and writes
// .tsl artifacts, times each run and profiles per step.
#pragma once

#include <memory>

#include "targets/target.h"

namespace tessel::cpu {

std::unique_ptr<Target> makeTarget();

}  // namespace tessel::cpu
