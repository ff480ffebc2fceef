// Names of the engines; see engine.h.
#include "targets/nc/machine/engine.h"

#include <iterator>

namespace tessel::nc {
namespace {

constexpr std::string_view kEngineNames[] = {"PE", "DVE", "ACT", "POOL", "SP", "DMA"};
static_assert(std::size(kEngineNames) == kNumEngines);

}  // namespace

std::string_view engineName(Engine engine) { return kEngineNames[static_cast<int>(engine)]; }

std::optional<Engine> parseEngine(std::string_view text) {
  for (int i = 0; i < kNumEngines; ++i)
    if (kEngineNames[i] == text) return static_cast<Engine>(i);
  return std::nullopt;
}

}  // namespace tessel::nc
