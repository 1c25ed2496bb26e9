#include "analysis/svg.h"

#include <fmt/format.h>

#include <cmath>

namespace bubblesim::analysis {

const char* kind_name(sim::OpKind kind) {
  switch (kind) {
    case sim::OpKind::F:
      return "F";
    case sim::OpKind::B:
      return "B";
    case sim::OpKind::W:
      return "W";
    case sim::OpKind::BW:
      return "BW";
  }
  return "?";
}

std::string escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// About `target` round tick values (1, 2 or 5 times a power of ten apart) from lo to hi.
std::vector<double> ticks(double lo, double hi, int target) {
  double span = hi - lo;
  if (!(span > 0)) span = 1;
  const double raw = span / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  const double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * magnitude;
  std::vector<double> values;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step)
    values.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  return values;
}

std::string svg_open(const char* cls, int width, int height, const std::string& attributes) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"{}\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" font-family=\"sans-serif\" font-size=\"11\"{}>\n",
      cls, width, height, width, height, attributes);
}

// A horizontal axis under a plot: ticks, labels and a title.
void x_axis(std::string& svg, const Scale& x, double y, const std::string& title) {
  svg += fmt::format(
      "<line class=\"axis\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
      "stroke=\"#444\"/>\n",
      x.p0, y, x.p1, y);
  for (const double t : ticks(x.d0, x.d1)) {
    const double px = x(t);
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
        "stroke=\"#444\"/><text x=\"{:.1f}\" y=\"{:.1f}\" "
        "text-anchor=\"middle\">{:g}</text>\n",
        px, y, px, y + 4, px, y + 15, t);
  }
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                     (x.p0 + x.p1) / 2, y + 29, escape(title));
}

// A vertical axis left of a plot.
void y_axis(std::string& svg, const Scale& y, double x, const std::string& title) {
  svg += fmt::format(
      "<line class=\"axis\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
      "stroke=\"#444\"/>\n",
      x, y.p0, x, y.p1);
  for (const double t : ticks(y.d0, y.d1, 5)) {
    const double py = y(t);
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
        "stroke=\"#444\"/><text x=\"{:.1f}\" y=\"{:.1f}\" "
        "text-anchor=\"end\">{:g}</text>\n",
        x - 4, py, x, py, x - 6, py + 4, t);
  }
  svg += fmt::format(
      "<text x=\"12\" y=\"{:.1f}\" text-anchor=\"middle\" transform=\"rotate(-90 12 {:.1f})\">"
      "{}</text>\n",
      (y.p0 + y.p1) / 2, (y.p0 + y.p1) / 2, escape(title));
}

}  // namespace bubblesim::analysis
