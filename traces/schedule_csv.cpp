#include "traces/schedule_csv.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <istream>
#include <map>
#include <ostream>
#include <sstream>
#include <vector>

#include "sim/cost_model.h"
#include "sim/op_graph.h"

namespace bubblesim::traces {

namespace {

using sim::Op;
using sim::OpKind;

struct Cell {
  int row = 0;     // 1-based, as a spreadsheet shows it
  int column = 0;  // 1-based
};

std::string at(const std::string& name, const Cell& cell) {
  return name + ": row " + std::to_string(cell.row) + ", column " + std::to_string(cell.column);
}

// Reads the digits at `pos`; false when there are none (or too many for an int).
bool read_number(const std::string& s, std::size_t& pos, int& value) {
  const std::size_t start = pos;
  long long v = 0;
  while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos])) && pos - start < 9) {
    v = v * 10 + (s[pos++] - '0');
  }
  value = static_cast<int>(v);
  return pos > start && (pos == s.size() || !std::isdigit(static_cast<unsigned char>(s[pos])));
}

Op parse_action(const std::string& token, const std::string& name, const Cell& cell) {
  auto fail = [&](const std::string& why) -> Op {
    throw ScheduleFileError(at(name, cell) + ": '" + token + "' " + why);
  };
  std::size_t pos = 0;
  int stage = 0;
  if (!read_number(token, pos, stage)) {
    return fail("is not an action (expected <stage><F|I|W|B><microbatch>, e.g. 0F3)");
  }
  std::size_t letters = pos;
  while (letters < token.size() &&
         (std::isupper(static_cast<unsigned char>(token[letters])) || token[letters] == '_')) {
    ++letters;
  }
  const std::string action = token.substr(pos, letters - pos);
  pos = letters;
  static const std::map<std::string, OpKind> kKinds = {
      {"F", OpKind::F}, {"I", OpKind::B}, {"W", OpKind::W}, {"B", OpKind::BW}};
  const auto kind = kKinds.find(action);
  if (kind == kKinds.end()) {
    static const char* kOther[] = {"UNSHARD", "RESHARD", "REDUCE_GRAD", "SEND_F",
                                   "RECV_F",  "SEND_B",  "RECV_B"};
    for (const char* other : kOther) {
      if (action == other) {
        return fail(
            "is a communication or memory action: bubblesim reads compute-only "
            "schedules (F, I, W, B)");
      }
    }
    return fail("has an unknown action '" + action + "' (expected F, I, W or B)");
  }
  int microbatch = 0;
  if (!read_number(token, pos, microbatch) || pos != token.size()) {
    return fail("is not an action (expected <stage><F|I|W|B><microbatch>, e.g. 0F3)");
  }
  return Op{kind->second, stage, 0, microbatch};
}

constexpr std::string_view kPairSuffix = ")OVERLAP_F_B";

// The largest schedule file read: 2^31 ops (sim's limit) at a few bytes each would be more, but
// a file that large cannot be simulated in memory anyway.
constexpr std::size_t kMaxScheduleFileBytes = std::size_t{1} << 30;

// "(0F7;7B3)OVERLAP_F_B": a forward and a backward (I or B) run overlapped as one slot.
std::pair<Op, Op> parse_pair(const std::string& token, const std::string& name, const Cell& cell) {
  auto fail = [&](const std::string& why) {
    throw ScheduleFileError(at(name, cell) + ": '" + token + "' " + why);
  };
  const std::size_t semicolon = token.find(';');
  const std::size_t close = token.find(')');
  if (semicolon == std::string::npos || close == std::string::npos || semicolon > close ||
      token.compare(close, std::string::npos, kPairSuffix) != 0) {
    fail("is not an overlapped pair (expected (<F action>;<I or B action>)OVERLAP_F_B)");
  }
  const Op f = parse_action(token.substr(1, semicolon - 1), name, cell);
  const Op b = parse_action(token.substr(semicolon + 1, close - semicolon - 1), name, cell);
  if (f.kind != OpKind::F || (b.kind != OpKind::B && b.kind != OpKind::BW)) {
    fail("is not a forward overlapped with a backward (expected (<F action>;<I or B action>))");
  }
  return {f, b};
}

// Whether every route is one half of the stages: the two directions of a bidirectional
// schedule (stages 0..S/2-1 and S/2..S-1), the only routes a file can express.
bool halves(const std::vector<sim::StageRange>& routes, int stages) {
  const sim::StageRange low{0, stages / 2 - 1}, high{stages / 2, stages - 1};
  return stages % 2 == 0 && std::all_of(routes.begin(), routes.end(),
                                        [&](sim::StageRange r) { return r == low || r == high; });
}

std::string trimmed(const std::string& s) {
  const std::size_t first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

std::string token_of(const Op& op) {
  static const char* kLetters[] = {"F", "I", "W", "B"};  // F, B (input gradient), W, BW
  return std::to_string(op.stage) + kLetters[static_cast<int>(op.kind)] +
         std::to_string(op.microbatch);
}

std::string pair_token(const Op& forward, const Op& backward) {
  std::string token = "(";  // appended piece by piece: GCC 12 misreads "(" + ... (-Wrestrict)
  token += token_of(forward);
  token += ';';
  token += token_of(backward);
  token += kPairSuffix;
  return token;
}

}  // namespace

sim::Schedule parse_schedule_csv(std::istream& in, const std::string& name) {
  sim::Schedule schedule;
  std::map<std::pair<int, std::int64_t>, std::vector<Cell>> cells;  // (stage, mb, kind) -> where
  auto key = [](const Op& op) {
    return std::make_pair(
        op.stage, std::int64_t{op.microbatch} * sim::kNumOpKinds + static_cast<int>(op.kind));
  };
  std::map<int, Cell> stage_home;                    // stage -> first cell that runs it
  std::map<int, sim::StageRange> microbatch_stages;  // mb -> lowest and highest stage it runs
  int max_stage = -1, max_mb = -1;
  std::string line;
  for (int row = 1; std::getline(in, line); ++row) {
    auto& ops = schedule.device_ops.emplace_back();
    auto& pairs = schedule.overlapped_pairs.emplace_back();
    std::stringstream cells_of_row(line);
    std::string text;
    for (int column = 1; std::getline(cells_of_row, text, ','); ++column) {
      const std::string token = trimmed(text);
      if (token.empty()) continue;  // an idle step
      const Cell cell{row, column};
      std::vector<Op> in_cell;
      if (token.front() == '(') {
        const auto [f, b] = parse_pair(token, name, cell);
        pairs.push_back(ops.size());
        in_cell = {f, b};
      } else {
        in_cell = {parse_action(token, name, cell)};
      }
      for (const Op& op : in_cell) {
        const auto [home, fresh] = stage_home.emplace(op.stage, cell);
        if (!fresh && home->second.row != row) {
          throw ScheduleFileError(at(name, cell) + ": stage " + std::to_string(op.stage) +
                                  " is on two ranks: row " + std::to_string(home->second.row) +
                                  " (column " + std::to_string(home->second.column) +
                                  ") runs it too");
        }
        max_stage = std::max(max_stage, op.stage);
        max_mb = std::max(max_mb, op.microbatch);
        sim::StageRange& range =
            microbatch_stages.try_emplace(op.microbatch, sim::StageRange{op.stage, op.stage})
                .first->second;
        range.first = std::min(range.first, op.stage);
        range.last = std::max(range.last, op.stage);
        cells[key(op)].push_back(cell);
        ops.push_back(op);
      }
    }
  }
  if (max_stage < 0) throw ScheduleFileError(name + ": the schedule has no actions");
  // Trailing rows without actions (",,," from a spreadsheet export) are no ranks.
  while (schedule.device_ops.size() > 1 && schedule.device_ops.back().empty()) {
    schedule.device_ops.pop_back();
    schedule.overlapped_pairs.pop_back();
  }
  for (int s = 0; s <= max_stage; ++s) {
    if (stage_home.count(s) == 0) {
      throw ScheduleFileError(name + ": stage " + std::to_string(s) +
                              " has no actions (stages 0 to " + std::to_string(max_stage) +
                              " appear)");
    }
    schedule.stage_device.push_back(stage_home[s].row - 1);
  }
  // Two directions (DualPipe): when every microbatch runs exactly one half of the stages, those
  // halves are its route. Otherwise every microbatch runs every stage.
  const int stages = max_stage + 1;
  if (microbatch_stages.size() == static_cast<std::size_t>(max_mb) + 1) {
    std::vector<sim::StageRange> routes;
    for (const auto& [mb, range] : microbatch_stages)
      routes.push_back(range);
    if (halves(routes, stages)) schedule.routes = std::move(routes);
  }
  // Every (stage, microbatch) of a route needs an F and a backward: refuse before allocating
  // per-slot arrays for numbers the file cannot back up.
  std::size_t actions = 0;
  for (const auto& ops : schedule.device_ops)
    actions += ops.size();
  const auto needed = static_cast<std::size_t>(schedule.routes.empty() ? 2 : 1) *
                      static_cast<std::size_t>(stages) * static_cast<std::size_t>(max_mb + 1);
  if (needed > actions) {
    throw ScheduleFileError(name + ": stages 0 to " + std::to_string(max_stage) +
                            " and microbatches 0 to " + std::to_string(max_mb) + " need at least " +
                            std::to_string(needed) + " actions, the file has " +
                            std::to_string(actions));
  }
  if (std::all_of(schedule.overlapped_pairs.begin(), schedule.overlapped_pairs.end(),
                  [](const auto& pairs) { return pairs.empty(); })) {
    schedule.overlapped_pairs.clear();
  }
  schedule.num_microbatches = max_mb + 1;
  const std::vector<int> chunks = schedule.stage_chunks();
  for (auto& ops : schedule.device_ops) {
    for (Op& op : ops)
      op.chunk = chunks[static_cast<std::size_t>(op.stage)];
  }

  try {
    schedule.validate();
    const auto no_costs =
        sim::PerDeviceCostModel::uniform({0, 0, 0, 0, 0, 0}, schedule.num_devices());
    sim::OpGraph(schedule, no_costs).check_acyclic();
  } catch (const sim::ScheduleError& e) {
    // Point at the cells of the ops the error names.
    std::string where;
    for (const Op& op : e.ops()) {
      const auto found = cells.find(key(op));
      if (found == cells.end()) continue;
      for (const Cell& cell : found->second) {
        where += (where.empty() ? "" : ", ") + token_of(op) + " at row " +
                 std::to_string(cell.row) + " column " + std::to_string(cell.column);
      }
    }
    throw ScheduleFileError(name + ": " + e.what() + (where.empty() ? "" : " [" + where + "]"));
  }
  return schedule;
}

sim::Schedule read_schedule_csv(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw ScheduleFileError(path + ": is a directory, expected a schedule file (CSV)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ScheduleFileError(path + ": cannot open the schedule file");
  // Read whole but bounded: a device or pipe (/dev/zero) could otherwise feed one endless line.
  std::string text;
  std::vector<char> chunk(1 << 16);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (std::find(chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(got), '\0') !=
        chunk.begin() + static_cast<std::ptrdiff_t>(got)) {
      throw ScheduleFileError(path + ": byte " + std::to_string(text.size() + 1) +
                              " and on: a NUL byte; expected a text (CSV) schedule file");
    }
    if (text.size() + got > kMaxScheduleFileBytes) {
      throw ScheduleFileError(path + ": larger than " +
                              std::to_string(kMaxScheduleFileBytes >> 20) +
                              " MiB; expected a schedule file");
    }
    text.append(chunk.data(), got);
  }
  if (in.bad()) throw ScheduleFileError(path + ": cannot read the schedule file");
  std::istringstream stream(std::move(text));
  return parse_schedule_csv(stream, path);
}

void write_schedule_csv(std::ostream& out, const sim::Schedule& schedule) {
  if (!schedule.routes.empty() && !halves(schedule.routes, schedule.num_stages())) {
    throw Error(
        "the schedule's routes cannot be written to a schedule file: a file can only say that "
        "each microbatch runs all stages or one half of them");
  }
  for (std::size_t d = 0; d < schedule.device_ops.size(); ++d) {
    const auto& ops = schedule.device_ops[d];
    const auto& pairs = schedule.pairs_of(static_cast<int>(d));
    auto pair = pairs.begin();
    for (std::size_t i = 0; i < ops.size(); ++i) {
      out << (i == 0 ? "" : ",");
      if (pair != pairs.end() && *pair == i) {
        out << pair_token(ops[i], ops[i + 1]);
        ++pair;
        ++i;
      } else {
        out << token_of(ops[i]);
      }
    }
    out << '\n';
  }
}

void save_schedule_csv(sim::OutputFile& file, const sim::Schedule& schedule) {
  std::ostringstream text;
  write_schedule_csv(text, schedule);  // may refuse the schedule: before writing anything
  std::ofstream out(file.temporary(), std::ios::trunc);
  out << text.str();
  out.flush();
  if (!out) throw Error(file.path() + ": cannot write the schedule file");
}

void save_schedule_csv(const std::string& path, const sim::Schedule& schedule) {
  sim::OutputFile file(path);
  save_schedule_csv(file, schedule);
  file.commit();
}

}  // namespace bubblesim::traces
