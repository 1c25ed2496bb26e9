#include "analysis/study.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <ios>
#include <map>
#include <optional>
#include <set>

namespace bubblesim::analysis {

namespace {

enum class Kind { kName, kCount, kTimes, kNumber, kLimit, kPath, kSwitch };

struct KeySpec {
  const char* name;
  Kind kind;
};

// Canonical order; also the order of StudyConfiguration::settings.
constexpr KeySpec kKeys[] = {
    {"schedule", Kind::kName},
    {"pp", Kind::kCount},
    {"microbatches", Kind::kCount},
    {"chunks", Kind::kCount},
    {"f", Kind::kTimes},
    {"b", Kind::kTimes},
    {"w", Kind::kTimes},
    {"comm", Kind::kTimes},
    {"m-b", Kind::kNumber},
    {"m-w", Kind::kNumber},
    {"mem-limit", Kind::kLimit},
    {"overlap-efficiency", Kind::kNumber},
    {"model", Kind::kPath},
    {"gpu", Kind::kName},
    {"efficiency", Kind::kNumber},
    {"cluster", Kind::kPath},
    {"dp", Kind::kCount},
    {"allreduce", Kind::kName},
    {"optimizer-sync", Kind::kName},
    {"optimizer-ms", Kind::kNumber},
    {"comm-bytes", Kind::kNumber},
    {"grad-bytes", Kind::kNumber},
    {"profile", Kind::kPath},
    {"op-overhead", Kind::kName},
    {"p2p", Kind::kName},
    {"calibration", Kind::kPath},
    {"improve", Kind::kSwitch},
};

struct Reader {
  std::string path;

  [[noreturn]] void fail(const YAML::Node& at, const std::string& key,
                         const std::string& what) const {
    const std::string where =
        at.Mark().is_null() ? path : path + ":" + std::to_string(at.Mark().line + 1);
    throw StudyError(where + (key.empty() ? "" : ": key '" + key + "'") + ": " + what);
  }

  // The canonical name of a setting written as `written`.
  std::size_t key_index(const YAML::Node& at, const std::string& written) const {
    std::string name = written;
    std::replace(name.begin(), name.end(), '_', '-');
    if (name == "p") name = "pp";
    if (name == "m") name = "microbatches";
    if (name == "v") name = "chunks";
    if (name == "s") name = "schedule";
    for (std::size_t i = 0; i < std::size(kKeys); ++i) {
      if (name == kKeys[i].name) return i;
    }
    std::string valid;
    for (const KeySpec& k : kKeys)
      valid += (valid.empty() ? "" : ", ") + std::string(k.name);
    fail(at, written, "unknown setting; valid settings are: " + valid + " (and p, m, v)");
  }

  static bool number(const std::string& text, double& value) {
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    return !text.empty() && ec == std::errc() && ptr == end && std::isfinite(value);
  }

  std::string scalar(const YAML::Node& node, const std::string& key, const char* expected) const {
    if (!node.IsScalar()) fail(node, key, std::string("expected ") + expected);
    return node.Scalar();
  }

  // The option text of one value of setting `spec`, checked for its type.
  std::string value(const YAML::Node& node, const std::string& key, const KeySpec& spec) const {
    double x = 0;
    switch (spec.kind) {
      case Kind::kName: {
        const std::string s = scalar(node, key, "a name");
        if (s.empty()) fail(node, key, "expected a name, got an empty value");
        return s;
      }
      case Kind::kSwitch: {
        // on / off (YAML's true / false too), kept as "on" or "off".
        const std::string s = scalar(node, key, "on or off");
        if (s == "on" || s == "true") return "on";
        if (s == "off" || s == "false") return "off";
        fail(node, key, "expected on or off, got '" + s + "'");
      }
      case Kind::kCount: {
        const std::string s = scalar(node, key, "an integer >= 1");
        if (!number(s, x) || x < 1 || x != std::floor(x) || x > 1e6) {
          fail(node, key, "expected an integer >= 1, got '" + s + "'");
        }
        return s;
      }
      case Kind::kTimes: {
        // One time, or one per device as a YAML list or a comma-separated string.
        std::vector<std::string> items;
        if (node.IsSequence()) {
          for (const YAML::Node& item : node)
            items.push_back(scalar(item, key, "a time in ms"));
        } else {
          std::string s = scalar(node, key, "a time in ms or a list of them");
          for (std::size_t comma; (comma = s.find(',')) != std::string::npos;
               s.erase(0, comma + 1)) {
            items.push_back(s.substr(0, comma));
          }
          items.push_back(s);
        }
        std::string joined;
        for (std::string& item : items) {
          item.erase(0, item.find_first_not_of(' '));
          item.erase(item.find_last_not_of(' ') + 1);
          if (!number(item, x) || x < 0) {
            fail(node, key, "expected times in ms >= 0, got '" + item + "'");
          }
          joined += (joined.empty() ? "" : ",") + item;
        }
        if (items.empty()) fail(node, key, "expected a time in ms, got an empty list");
        return joined;
      }
      case Kind::kNumber: {
        const std::string s = scalar(node, key, "a number");
        if (!number(s, x)) fail(node, key, "expected a number, got '" + s + "'");
        return s;
      }
      case Kind::kLimit: {
        const std::string s = scalar(node, key, "a number >= 0 or inf");
        if (s == "inf" || s == ".inf") return "inf";
        if (!number(s, x) || x < 0)
          fail(node, key, "expected a number >= 0 or inf, got '" + s + "'");
        return s;
      }
      case Kind::kPath: {
        std::filesystem::path file = scalar(node, key, "a file name");
        if (file.is_relative()) file = std::filesystem::path(path).parent_path() / file;
        std::error_code ec;
        if (!std::filesystem::is_regular_file(file, ec)) {
          fail(node, key, "no such file: " + file.string());
        }
        return std::filesystem::absolute(file, ec).lexically_normal().string();
      }
    }
    return {};
  }

  using Settings = Study::Settings;

  Settings settings(const YAML::Node& map, const std::string& where) const {
    if (!map.IsMap()) fail(map, where, "expected a mapping of settings");
    Settings out;
    for (const auto& entry : map) {
      const std::string written = entry.first.Scalar();
      const std::size_t i = key_index(entry.first, written);
      if (out.count(i) != 0) fail(entry.first, written, "given twice");
      out[i] = {kKeys[i].name, value(entry.second, written, kKeys[i]),
                entry.second.Mark().line + 1};
    }
    return out;
  }
};

}  // namespace

StudyConfiguration Study::configuration(std::size_t n) const {
  Settings merged = fixed;
  for (const auto& [i, s] : configs[n / per_config])
    merged[i] = s;
  // Mixed radix, the last axis fastest.
  std::size_t rest = n % per_config;
  for (std::size_t a = axes.size(); a-- > 0;) {
    const std::vector<StudySetting>& values = axes[a].second;
    merged[axes[a].first] = values[rest % values.size()];
    rest /= values.size();
  }
  StudyConfiguration c;
  c.settings.reserve(merged.size());
  for (auto& [i, s] : merged)
    c.settings.push_back(std::move(s));
  return c;
}

std::vector<StudySetting> Study::values_of(const std::string& key) const {
  std::vector<StudySetting> values;
  const auto add = [&](const Settings& settings) {
    for (const auto& [i, s] : settings) {
      if (s.key == key) values.push_back(s);
    }
  };
  add(fixed);
  for (const Settings& c : configs)
    add(c);
  for (const auto& [i, axis] : axes) {
    for (const StudySetting& s : axis) {
      if (s.key == key) values.push_back(s);
    }
  }
  return values;
}

const std::vector<std::string>& study_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const KeySpec& spec : kKeys)
      k.emplace_back(spec.name);
    return k;
  }();
  return keys;
}

const StudySetting* StudyConfiguration::find(const std::string& key) const {
  for (const StudySetting& s : settings) {
    if (s.key == key) return &s;
  }
  return nullptr;
}

std::string study_fingerprint(const Study& study) {
  std::uint64_t hash = 14695981039346656037ULL;  // FNV-1a, 64 bits
  const auto add = [&](char c) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  };
  // The study's parts, which decide every configuration (never the configurations
  // themselves: a study may have millions).
  const auto add_settings = [&](const Study::Settings& settings) {
    for (const auto& [i, s] : settings) {
      for (const char ch : s.key + "=" + s.value + " ")
        add(ch);
    }
    add('\n');
  };
  add_settings(study.fixed);
  for (const Study::Settings& c : study.configs)
    add_settings(c);
  for (const auto& [i, values] : study.axes) {
    for (const StudySetting& s : values) {
      for (const char ch : s.key + "=" + s.value + " ")
        add(ch);
    }
    add('\n');
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

std::string StudyConfiguration::key() const {
  std::string k;
  for (const StudySetting& s : settings)
    k += (k.empty() ? "" : " ") + s.key + "=" + s.value;
  return k;
}

namespace {

Study read_study(const std::string& path, std::size_t max_configurations) {
  const Reader r{path};
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw StudyError(path + ": cannot read the study file");
  } catch (const YAML::ParserException& e) {
    throw StudyError(path + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  if (!root.IsMap()) {
    throw StudyError(path + ": expected a mapping with fixed, axes and/or configs");
  }
  // Optional, not plain nodes: assigning to a YAML::Node writes into what it refers to.
  std::optional<YAML::Node> fixed_node, axes_node, configs_node;
  for (const auto& entry : root) {
    const std::string name = entry.first.Scalar();
    if (name == "fixed") {
      fixed_node.emplace(entry.second);
    } else if (name == "axes") {
      axes_node.emplace(entry.second);
    } else if (name == "configs") {
      configs_node.emplace(entry.second);
    } else if (name != "name" && name != "description") {
      r.fail(entry.first, name,
             "unknown section; valid ones are: fixed, axes, configs (and name, description)");
    }
  }
  const Reader::Settings fixed = fixed_node ? r.settings(*fixed_node, "fixed") : Reader::Settings{};

  // Axes: the values of each, in file order.
  std::vector<std::pair<std::size_t, std::vector<StudySetting>>> axes;
  if (axes_node) {
    if (!axes_node->IsMap()) r.fail(*axes_node, "axes", "expected a mapping of setting: [values]");
    for (const auto& entry : *axes_node) {
      const std::string written = entry.first.Scalar();
      const std::size_t i = r.key_index(entry.first, written);
      for (const auto& [j, values] : axes) {
        if (j == i) r.fail(entry.first, written, "is an axis twice");
      }
      if (fixed.count(i) != 0) r.fail(entry.first, written, "is both fixed and an axis");
      if (!entry.second.IsSequence() || entry.second.size() == 0) {
        r.fail(entry.second, written, "an axis takes a non-empty list of values");
      }
      std::vector<StudySetting> values;
      for (const YAML::Node& v : entry.second) {
        values.push_back({kKeys[i].name, r.value(v, written, kKeys[i]), v.Mark().line + 1});
      }
      axes.emplace_back(i, std::move(values));
    }
  }

  std::vector<Reader::Settings> configs;
  if (configs_node) {
    if (!configs_node->IsSequence() || configs_node->size() == 0) {
      r.fail(*configs_node, "configs", "expected a non-empty list of mappings of settings");
    }
    for (const YAML::Node& c : *configs_node) {
      Reader::Settings s = r.settings(c, "configs");
      for (const auto& [i, values] : axes) {
        if (s.count(i) != 0) {
          throw StudyError(path + ":" + std::to_string(s[i].line) + ": key '" + kKeys[i].name +
                           "': is both in a config and an axis");
        }
      }
      configs.push_back(std::move(s));
    }
  } else {
    configs.emplace_back();
  }

  std::size_t per_config = 1;
  for (const auto& [i, values] : axes) {
    per_config *= values.size();
    if (per_config > max_configurations) break;
  }
  if (per_config * configs.size() > max_configurations) {
    throw StudyError(path + ": the study has more than " + std::to_string(max_configurations) +
                     " configurations");
  }

  for (const Reader::Settings& config : configs) {
    bool has_schedule = fixed.count(0) != 0 || config.count(0) != 0;
    for (const auto& [i, values] : axes)
      has_schedule = has_schedule || i == 0;
    if (!has_schedule) {
      throw StudyError(path +
                       ": key 'schedule': every configuration needs one (give it in "
                       "fixed, axes or each of configs)");
    }
  }
  Study study;
  study.path = path;
  study.fixed = fixed;
  study.configs = std::move(configs);
  study.axes = std::move(axes);
  study.per_config = per_config;
  return study;
}

}  // namespace

Study load_study(const std::string& path, std::size_t max_configurations) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw StudyError(path + ": is a directory, expected a study file (YAML)");
  }
  try {
    return read_study(path, max_configurations);
  } catch (const YAML::Exception& e) {
    // A value of the wrong type that no check above caught.
    throw StudyError(path + (e.mark.is_null() ? "" : ":" + std::to_string(e.mark.line + 1)) + ": " +
                     e.msg);
  } catch (const std::ios_base::failure& e) {
    throw StudyError(path + ": cannot read the study file (" + e.what() + ")");
  }
}

MeasuredRuns load_measured_runs(const std::string& path) {
  const Reader r{path};
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw StudyError(path + ": cannot read the runs file");
  } catch (const YAML::ParserException& e) {
    throw StudyError(path + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  if (!root.IsMap()) throw StudyError(path + ": expected a mapping with runs (and fixed)");
  std::optional<YAML::Node> fixed_node, runs_node;
  int runs_line = 0;
  for (const auto& entry : root) {
    const std::string name = entry.first.Scalar();
    if (name == "fixed") {
      fixed_node.emplace(entry.second);
    } else if (name == "runs") {
      runs_node.emplace(entry.second);
      runs_line = entry.first.Mark().line + 1;
    } else if (name != "name" && name != "description" && name != "source") {
      r.fail(entry.first, name,
             "unknown section; valid ones are: runs, fixed (and name, description, source)");
    }
  }
  if (!runs_node || !runs_node->IsSequence() || runs_node->size() == 0) {
    r.fail(runs_node ? *runs_node : root, "runs", "expected a non-empty list of measured runs");
  }
  const Reader::Settings fixed = fixed_node ? r.settings(*fixed_node, "fixed") : Reader::Settings{};
  MeasuredRuns out{path, {}, runs_line};
  for (const YAML::Node& run : *runs_node) {
    if (!run.IsMap()) r.fail(run, "runs", "expected a mapping of settings and a measurement");
    MeasuredRun m;
    m.line = run.Mark().line + 1;
    std::set<std::size_t> seen;
    Reader::Settings merged = fixed;
    for (const auto& entry : run) {
      std::string name = entry.first.Scalar();
      std::replace(name.begin(), name.end(), '-', '_');
      double* target = name == "measured_iteration_ms" ? &m.measured_iteration_ms
                       : name == "measured_samples_per_gpu_per_s"
                           ? &m.measured_samples_per_gpu_per_s
                           : nullptr;
      if (target != nullptr) {
        const std::string text = r.scalar(entry.second, entry.first.Scalar(), "a number > 0");
        if (!Reader::number(text, *target) || !(*target > 0)) {
          r.fail(entry.second, entry.first.Scalar(), "expected a number > 0, got '" + text + "'");
        }
        continue;
      }
      const std::size_t i = r.key_index(entry.first, entry.first.Scalar());
      if (!seen.insert(i).second) r.fail(entry.first, entry.first.Scalar(), "given twice");
      merged[i] = {kKeys[i].name, r.value(entry.second, entry.first.Scalar(), kKeys[i]),
                   entry.second.Mark().line + 1};
    }
    if ((m.measured_iteration_ms > 0) == (m.measured_samples_per_gpu_per_s > 0)) {
      throw StudyError(path + ":" + std::to_string(m.line) +
                       ": key 'measured_iteration_ms': each run needs exactly one measurement, "
                       "measured_iteration_ms or measured_samples_per_gpu_per_s");
    }
    for (auto& [i, setting] : merged)
      m.configuration.settings.push_back(setting);
    if (m.configuration.find("schedule") == nullptr) {
      throw StudyError(path + ":" + std::to_string(m.line) +
                       ": key 'schedule': every run needs one (in the run or in fixed)");
    }
    out.runs.push_back(std::move(m));
  }
  return out;
}

}  // namespace bubblesim::analysis
