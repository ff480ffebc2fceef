// The engines of one NeuronCore-class core (accelerator-model.md section 2): the tensor engine (PE),
// the vector engine (DVE), the scalar/activation engine (ACT), the GpSimd engine (POOL), the sync
// engine (SP) and the DMA engines. One enum for the whole target: instructions name the engine that
// runs them (isa/instruction.h) and the cost functions take the engine whose clock and pipeline they
// use (cost.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tessel::nc {

/// An engine of one core; the values index per-engine tables (0..kNumEngines-1).
enum class Engine : uint8_t { PE, DVE, ACT, POOL, SP, DMA };

/// Number of Engine values.
inline constexpr int kNumEngines = 6;

/// The engine's name as the assembly and reports print it: "PE", "DVE", "ACT", "POOL", "SP", "DMA".
std::string_view engineName(Engine engine);

/// The engine named `text` (exactly as engineName prints it), or nullopt.
std::optional<Engine> parseEngine(std::string_view text);

}  // namespace tessel::nc
