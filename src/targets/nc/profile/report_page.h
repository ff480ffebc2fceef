// The fixed parts of the HTML report (report.h): its style sheet and its timeline script. The
// script reads the JSON blob in <script id="profile-data"> (layout in report.cpp), draws the
// timeline on <canvas id="timeline-canvas">, and after its first draw appends
// <div id="tracks-drawn" data-tracks=N data-events=M> so that a headless browser can tell the page
// ran.
#pragma once

#include <string_view>

namespace tessel::nc {

/// The report's CSS.
std::string_view reportStyle();

/// The report's JavaScript (no external references).
std::string_view reportScript();

}  // namespace tessel::nc
