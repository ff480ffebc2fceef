// How much memory an allocation a user's sizes ask for may take. A model may declare any dims (an
// input of 2^40 elements, say); the allocation that follows must end in an error that names what
// needs the bytes and how many, not in an out-of-memory abort.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "support/diagnostic.h"

namespace tessel {

/// Bytes of physical memory on this machine.
uint64_t physicalMemoryBytes();

/// count * elementBytes over the dims, or nullopt when a dim is negative or the product overflows.
std::optional<uint64_t> checkedByteCount(std::span<const int64_t> dims, uint64_t elementBytes);

/// "16.0 TiB" and the like.
std::string formatBytes(uint64_t bytes);

/// Success when `bytes` fit in this machine's memory; otherwise an InvalidArgument error saying
/// that `what` would need that many bytes.
Status checkFitsMemory(std::string_view what, uint64_t bytes);

}  // namespace tessel
