// SVG primitives of the reports (analysis/report_render.cpp draws the plots with them,
// analysis/report_page.cpp the page): escaping, round ticks, a linear scale, the root element and
// the axes. Text is built with fmt; the elements and their classes are the reports' contract
// (docs/reports.md).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "sim/op.h"

namespace bubblesim::analysis {

// Devices' curves and schedules' points cycle through these; idle time and the Pareto front
// have their own colours.
inline constexpr std::array<const char*, 10> kPalette = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                                         "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                                         "#bcbd22", "#17becf"};
inline constexpr const char* kIdleColour = "#ececec";
inline constexpr const char* kFrontColour = "#111111";

// "F", "B", "W" or "BW".
const char* kind_name(sim::OpKind kind);

// `text` with &, <, >, " and ' escaped for SVG and HTML.
std::string escape(const std::string& text);

// About `target` round tick values (1, 2 or 5 times a power of ten apart) from lo to hi.
std::vector<double> ticks(double lo, double hi, int target = 6);

// A linear map from data [d0, d1] to pixels [p0, p1].
struct Scale {
  double d0, d1, p0, p1;
  double operator()(double v) const {
    return d1 == d0 ? p0 : p0 + (v - d0) * (p1 - p0) / (d1 - d0);
  }
};

// The opening <svg> tag of class `cls`, `attributes` appended as they are.
std::string svg_open(const char* cls, int width, int height, const std::string& attributes);

// A horizontal axis under a plot at `y`: ticks, labels and a title; and a vertical one left of a
// plot at `x`.
void x_axis(std::string& svg, const Scale& x, double y, const std::string& title);
void y_axis(std::string& svg, const Scale& y, double x, const std::string& title);

}  // namespace bubblesim::analysis
