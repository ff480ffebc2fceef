// The accelerator as a target: "nc-v2", "nc-v3" or the path of a machine profile (.json). Compiles
// with compileNc, reads and writes nc .tsl artifacts, runs on the simulator (host stages on the
// reference interpreter) and checks its outputs against the reference with the device's casts.
#pragma once

#include <memory>
#include <string>

#include "targets/target.h"

namespace tessel::nc::compiler {

/// The target for a bundled profile name or a profile file; fails when the profile does not load.
Expected<std::unique_ptr<Target>> makeTarget(const std::string &profile);

}  // namespace tessel::nc::compiler
