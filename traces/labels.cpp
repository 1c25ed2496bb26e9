#include "traces/labels.h"

#include <cctype>
#include <map>

namespace bubblesim::traces {

namespace {

// Reads the decimal digits at `pos` (at most 9) into `value`.
bool read_number(std::string_view s, std::size_t& pos, std::int32_t& value) {
  const std::size_t start = pos;
  value = 0;
  while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos])) && pos - start < 9) {
    value = value * 10 + (s[pos++] - '0');
  }
  return pos > start;
}

}  // namespace

std::optional<sim::OpKind> pass_of(std::string_view text) {
  if (text == "F") return sim::OpKind::F;
  if (text == "B" || text == "I") return sim::OpKind::B;
  if (text == "W") return sim::OpKind::W;
  if (text == "BW") return sim::OpKind::BW;
  // Whole-step annotations ("## forward ##", "## backward ##" in PyTorch's DDP traces).
  if (text == "forward" || text == "Forward") return sim::OpKind::F;
  if (text == "backward" || text == "Backward") return sim::OpKind::BW;
  return std::nullopt;
}

std::optional<RangeLabel> PipeliningLabeller::label(std::string_view name) const {
  if (name.substr(0, 3) != "PP:") return std::nullopt;
  std::size_t pos = 3;
  RangeLabel label;
  if (!read_number(name, pos, label.stage) || pos >= name.size()) return std::nullopt;
  switch (name[pos++]) {
    case 'F':
      label.pass = sim::OpKind::F;
      break;
    case 'I':
      label.pass = sim::OpKind::B;
      break;
    case 'W':
      label.pass = sim::OpKind::W;
      break;
    case 'B':
      label.pass = sim::OpKind::BW;
      break;
    default:
      return std::nullopt;
  }
  if (!read_number(name, pos, label.microbatch)) return std::nullopt;
  // PyTorch's emit_nvtx appends its own fields to the name NVTX sees ("PP:0F0, op_id = 114").
  if (pos != name.size() && name.substr(pos, 2) != ", ") return std::nullopt;
  return label;
}

RegexLabeller::RegexLabeller(const std::string& pattern) {
  std::string translated;
  std::map<std::string, int> groups;
  int group = 0;
  bool in_class = false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      translated += pattern.substr(i++, 2);
      continue;
    }
    if (in_class) {
      in_class = c != ']';
    } else if (c == '[') {
      in_class = true;
    } else if (c == '(' && pattern.compare(i, 3, "(?<") == 0 && i + 3 < pattern.size() &&
               pattern[i + 3] != '=' && pattern[i + 3] != '!') {
      const std::size_t close = pattern.find('>', i + 3);
      if (close == std::string::npos) {
        throw SettingError("label-regex",
                           "group name at offset " + std::to_string(i) + " has no closing '>'");
      }
      const std::string name = pattern.substr(i + 3, close - i - 3);
      if (!groups.emplace(name, ++group).second) {
        throw SettingError("label-regex", "group '" + name + "' is named twice");
      }
      translated += '(';
      i = close;
      continue;
    } else if (c == '(' && (i + 1 >= pattern.size() || pattern[i + 1] != '?')) {
      ++group;
    }
    translated += c;
  }
  try {
    regex_ = boost::regex(translated, boost::regex::perl);
  } catch (const boost::regex_error& e) {
    throw SettingError("label-regex",
                       "'" + pattern + "' is not a valid regular expression: " + e.what());
  }
  const auto number = [&](const char* name) {
    const auto it = groups.find(name);
    return it == groups.end() ? 0 : it->second;
  };
  pass_group_ = number("pass");
  stage_group_ = number("stage");
  microbatch_group_ = number("microbatch");
  chunk_group_ = number("chunk");
  if (pass_group_ == 0) {
    throw SettingError("label-regex", "'" + pattern +
                                          "' has no (?<pass>...) group (also allowed: stage, "
                                          "microbatch, chunk)");
  }
}

std::optional<RangeLabel> RegexLabeller::label(std::string_view name) const {
  const auto fail = [&](const std::string& why) -> std::optional<RangeLabel> {
    throw InvalidArgument("option --label-regex: range '" + std::string(name.substr(0, 80)) +
                          (name.size() > 80 ? "...'" : "'") + " " + why);
  };
  boost::match_results<std::string_view::const_iterator> m;
  try {
    // Boost.Regex matches without recursion and gives up, throwing, when a match would take
    // too long or too much memory: a long name cannot overflow the stack (std::regex recursed).
    if (!boost::regex_match(name.begin(), name.end(), m, regex_)) return std::nullopt;
  } catch (const std::runtime_error& e) {
    return fail(std::string("cannot be matched: ") + e.what());
  }
  const std::optional<sim::OpKind> pass = pass_of(m[pass_group_].str());
  if (!pass) return fail("has pass '" + m[pass_group_].str() + "' (expected F, B, I, W or BW)");
  RangeLabel label{*pass};
  const auto read = [&](int group, const char* what, std::int32_t& value) {
    if (group == 0 || !m[group].matched) return;
    const std::string text = m[group].str();
    std::size_t pos = 0;
    if (!read_number(text, pos, value) || pos != text.size()) {
      fail(std::string("has ") + what + " '" + text + "' (expected a number)");
    }
  };
  read(stage_group_, "stage", label.stage);
  read(microbatch_group_, "microbatch", label.microbatch);
  read(chunk_group_, "chunk", label.chunk);
  return label;
}

}  // namespace bubblesim::traces
