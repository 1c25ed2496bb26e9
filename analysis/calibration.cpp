#include "analysis/calibration.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <set>

#include "analysis/report_render.h"

namespace bubblesim::analysis {

namespace {

[[noreturn]] void fail(const std::string& path, const YAML::Node& at, const std::string& key,
                       const std::string& what) {
  const std::string where =
      at.Mark().is_null() ? path : path + ":" + std::to_string(at.Mark().line + 1);
  throw CalibrationError(where + (key.empty() ? "" : ": key '" + key + "'") + ": " + what);
}

double number(const std::string& path, const YAML::Node& node, const std::string& key, double lo,
              double hi) {
  double x = 0;
  try {
    if (!node.IsScalar()) throw YAML::Exception(node.Mark(), "not a scalar");
    x = node.as<double>();
  } catch (const YAML::Exception&) {
    fail(path, node, key, "expected a number");
  }
  if (!std::isfinite(x) || x < lo || x > hi) {
    fail(path, node, key, fmt::format("expected a number from {} to {}", lo, hi));
  }
  return x;
}

}  // namespace

Calibration load_calibration(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw CalibrationError(path + ": cannot read the calibration file");
  } catch (const YAML::Exception& e) {
    throw CalibrationError(path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!root.IsMap()) fail(path, root, "", "expected a mapping (a file from bubblesim calibrate)");
  const YAML::Node format = root["format"];
  if (!format || !format.IsScalar() || format.Scalar() != "bubblesim-calibration") {
    fail(path, format ? format : root, "format", "expected 'bubblesim-calibration'");
  }
  Calibration c;
  bool has_overheads = false;
  for (const auto& entry : root) {
    const std::string key = entry.first.Scalar();
    const YAML::Node& value = entry.second;
    if (key == "format") continue;
    if (key == "op_overhead_ms") {
      if (!value.IsMap()) fail(path, value, key, "expected a mapping {F: ms, B: ms, W: ms}");
      std::set<std::string> seen;
      for (const auto& kind : value) {
        const std::string k = kind.first.Scalar();
        const double ms = number(path, kind.second, key + "." + k, 0, 1e6);
        if (k == "F") {
          c.overheads.f_ns = sim::ms_to_ns(ms);
        } else if (k == "B") {
          c.overheads.b_ns = sim::ms_to_ns(ms);
        } else if (k == "W") {
          c.overheads.w_ns = sim::ms_to_ns(ms);
        } else {
          fail(path, kind.first, key + "." + k, "unknown pass kind; expected F, B or W");
        }
        seen.insert(k);
      }
      if (seen.size() != 3) fail(path, value, key, "expected all of F, B and W");
      has_overheads = true;
    } else if (key == "p2p") {
      const std::string mode = value.IsScalar() ? value.Scalar() : "";
      if (mode == "async") {
        c.p2p = sim::P2pMode::Async;
      } else if (mode == "blocking") {
        c.p2p = sim::P2pMode::Blocking;
      } else {
        fail(path, value, key, "expected async or blocking");
      }
    } else if (key == "efficiency") {
      c.efficiency = number(path, value, key, 1e-6, 1);
    } else if (key == "fit") {
      if (!value.IsMap()) fail(path, value, key, "expected a mapping");
      for (const auto& f : value) {
        const std::string k = f.first.Scalar();
        if (k == "runs") {
          c.runs = f.second.IsScalar() ? f.second.Scalar() : "";
        } else if (k == "num_runs") {
          c.num_runs = static_cast<int>(number(path, f.second, "fit." + k, 0, 1e9));
        } else if (k == "mape") {
          c.mape = number(path, f.second, "fit." + k, 0, 1e9);
        } else if (k == "worst") {
          c.worst = number(path, f.second, "fit." + k, 0, 1e9);
        } else if (k == "loo_mape") {
          c.loo_mape = number(path, f.second, "fit." + k, 0, 1e9);
        } else {
          fail(path, f.first, "fit." + k, "unknown key");
        }
      }
    } else {
      fail(path, entry.first, key,
           "unknown key; expected format, op_overhead_ms, p2p, efficiency, fit");
    }
  }
  if (!has_overheads) fail(path, root, "op_overhead_ms", "missing");
  return c;
}

std::string calibration_yaml(const Calibration& c) {
  std::string text =
      "# bubblesim calibration (bubblesim calibrate; docs/calibration.md): apply with\n"
      "# --calibration FILE. op_overhead_ms: fixed cost before every pass on its device;\n"
      "# p2p: how transfers use the compute streams; efficiency: fraction of the GPU's peak\n"
      "# for runs timed from the model's FLOPs (absent when no run was).\n"
      "format: bubblesim-calibration\n";
  // Shortest round-trip forms: the file gives back exactly what was fitted.
  const auto ms = [](sim::TimeNs ns) { return fmt::format("{}", sim::ns_to_ms(ns)); };
  text += fmt::format("op_overhead_ms: {{F: {}, B: {}, W: {}}}\n", ms(c.overheads.f_ns),
                      ms(c.overheads.b_ns), ms(c.overheads.w_ns));
  text += fmt::format("p2p: {}\n", c.p2p == sim::P2pMode::Blocking ? "blocking" : "async");
  if (c.efficiency > 0) text += fmt::format("efficiency: {}\n", c.efficiency);
  YAML::Emitter runs;
  runs << YAML::DoubleQuoted << c.runs;
  text += fmt::format(
      "fit:\n  runs: {}\n  num_runs: {}\n  mape: {:.6f}\n  worst: {:.6f}\n  loo_mape: {:.6f}\n",
      runs.c_str(), c.num_runs, c.mape, c.worst, c.loo_mape);
  return text;
}

void write_calibration(const std::string& path, const Calibration& calibration) {
  write_file_atomically(path, calibration_yaml(calibration));
}

}  // namespace bubblesim::analysis
