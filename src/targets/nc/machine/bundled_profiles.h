// The JSON text of the profiles in profiles/*.json, embedded at build time (CMake writes
// bundled_profiles.cpp from bundled_profiles.cpp.in), so that `tessel` finds "nc-v2" wherever it runs.
#pragma once

#include <span>
#include <string_view>

namespace tessel::nc {

/// One embedded profile: its name (the file name without .json) and its JSON text.
struct BundledProfile {
  std::string_view name;
  std::string_view jsonText;
};

/// All embedded profiles, sorted by name.
std::span<const BundledProfile> bundledProfiles();

}  // namespace tessel::nc
