#include "support/memory_budget.h"

#include <unistd.h>

#include <limits>

namespace tessel {

uint64_t physicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), pageBytes = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageBytes <= 0) return std::numeric_limits<uint64_t>::max();
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageBytes);
}

std::optional<uint64_t> checkedByteCount(std::span<const int64_t> dims, uint64_t elementBytes) {
  uint64_t total = elementBytes;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    if (d != 0 && total > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) return std::nullopt;
    total *= static_cast<uint64_t>(d);
  }
  return total;
}

std::string formatBytes(uint64_t bytes) {
  const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 6) value /= 1024, ++unit;
  return unit == 0 ? fmt::format("{} bytes", bytes) : fmt::format("{:.1f} {}", value, units[unit]);
}

Status checkFitsMemory(std::string_view what, uint64_t bytes) {
  const uint64_t available = physicalMemoryBytes();
  if (bytes <= available) return Status::success();
  return makeError(ErrorCode::InvalidArgument, "{} would need {} bytes ({}), more than this machine's {} of memory",
                   what, bytes, formatBytes(bytes), formatBytes(available));
}

}  // namespace tessel
