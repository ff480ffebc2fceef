// The reference interpreter as a target ("ref"): runs the imported graph as it is, node by node,
// with any input shapes; no artifact.
#pragma once

#include <memory>

#include "targets/target.h"

namespace tessel::ref {

std::unique_ptr<Target> makeTarget();

}  // namespace tessel::ref
