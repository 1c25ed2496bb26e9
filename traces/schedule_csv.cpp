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
#include <tuple>
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

// What a cell's action is: a pass, a transfer (lowered schedules) or a memory action.
enum class ActionType : std::uint8_t {
  Compute,
  SendF,
  RecvF,
  SendB,
  RecvB,
  Unshard,
  Reshard,
  ReduceGrad
};

struct Action {
  ActionType type = ActionType::Compute;
  Op op;  // for the others: stage and microbatch (0 when the action names none)
};

Action parse_action(const std::string& token, const std::string& name, const Cell& cell,
                    CsvNaming naming) {
  auto fail = [&](const std::string& why) -> Action {
    throw ScheduleFileError(at(name, cell) + ": '" + token + "' " + why);
  };
  const char* const expected = naming == CsvNaming::Legacy
                                   ? "(expected <stage><F|B|W|BW><microbatch>, e.g. 0F3)"
                                   : "(expected <stage><F|I|W|B><microbatch>, e.g. 0F3)";
  std::size_t pos = 0;
  int stage = 0;
  if (!read_number(token, pos, stage)) return fail(std::string("is not an action ") + expected);
  std::size_t letters = pos;
  while (letters < token.size() &&
         (std::isupper(static_cast<unsigned char>(token[letters])) || token[letters] == '_')) {
    ++letters;
  }
  const std::string action = token.substr(pos, letters - pos);
  pos = letters;
  static const std::map<std::string, OpKind> kCurrent = {
      {"F", OpKind::F}, {"I", OpKind::B}, {"W", OpKind::W}, {"B", OpKind::BW}};
  static const std::map<std::string, OpKind> kLegacy = {
      {"F", OpKind::F}, {"B", OpKind::B}, {"W", OpKind::W}, {"BW", OpKind::BW}};
  static const std::map<std::string, ActionType> kOther = {
      {"SEND_F", ActionType::SendF},          {"RECV_F", ActionType::RecvF},
      {"SEND_B", ActionType::SendB},          {"RECV_B", ActionType::RecvB},
      {"UNSHARD", ActionType::Unshard},       {"RESHARD", ActionType::Reshard},
      {"REDUCE_GRAD", ActionType::ReduceGrad}};
  const auto& kinds = naming == CsvNaming::Legacy ? kLegacy : kCurrent;
  Action result;
  if (const auto kind = kinds.find(action); kind != kinds.end()) {
    result.op.kind = kind->second;
  } else if (const auto other = kOther.find(action); other != kOther.end()) {
    result.type = other->second;
  } else {
    return fail("has an unknown action '" + action + "' (expected " +
                (naming == CsvNaming::Legacy ? "F, B, W or BW" : "F, I, W or B") + ")");
  }
  result.op.stage = stage;
  const bool memory = result.type == ActionType::Unshard || result.type == ActionType::Reshard ||
                      result.type == ActionType::ReduceGrad;
  if (memory && pos == token.size()) return result;  // PyTorch writes them without one
  int microbatch = 0;
  if (!read_number(token, pos, microbatch) || pos != token.size()) {
    return fail(std::string("is not an action ") + expected);
  }
  result.op.microbatch = microbatch;
  return result;
}

constexpr std::string_view kPairSuffix = ")OVERLAP_F_B";

// The largest schedule file read: 2^31 ops (sim's limit) at a few bytes each would be more, but
// a file that large cannot be simulated in memory anyway.
constexpr std::size_t kMaxScheduleFileBytes = std::size_t{1} << 30;

// "(0F7;7B3)OVERLAP_F_B": a forward and a backward (I or B) run overlapped as one slot.
std::pair<Op, Op> parse_pair(const std::string& token, const std::string& name, const Cell& cell,
                             CsvNaming naming) {
  auto fail = [&](const std::string& why) {
    throw ScheduleFileError(at(name, cell) + ": '" + token + "' " + why);
  };
  const std::size_t semicolon = token.find(';');
  const std::size_t close = token.find(')');
  if (semicolon == std::string::npos || close == std::string::npos || semicolon > close ||
      token.compare(close, std::string::npos, kPairSuffix) != 0) {
    fail("is not an overlapped pair (expected (<F action>;<I or B action>)OVERLAP_F_B)");
  }
  const Action fa = parse_action(token.substr(1, semicolon - 1), name, cell, naming);
  const Action ba =
      parse_action(token.substr(semicolon + 1, close - semicolon - 1), name, cell, naming);
  const Op f = fa.op, b = ba.op;
  if (fa.type != ActionType::Compute || ba.type != ActionType::Compute || f.kind != OpKind::F ||
      (b.kind != OpKind::B && b.kind != OpKind::BW)) {
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

// A cell's token: trimmed, and without the double quotes that CSV writers may put around a
// cell (Python's csv.QUOTE_ALL, spreadsheets). No action holds a comma or a quote, so a quoted
// cell is one token; "" is an idle step.
std::string cell_token(const std::string& text) {
  const std::string token = trimmed(text);
  if (token.size() >= 2 && token.front() == '"' && token.back() == '"')
    return trimmed(token.substr(1, token.size() - 2));
  return token;
}

std::string pair_token(const Op& forward, const Op& backward) {
  std::string token = "(";  // appended piece by piece: GCC 12 misreads "(" + ... (-Wrestrict)
  token += action_token(forward);
  token += ';';
  token += action_token(backward);
  token += kPairSuffix;
  return token;
}

// A transfer action of a lowered schedule, where it is and how many passes its row ran before.
struct Transfer {
  ActionType type;
  int stage;
  int microbatch;
  Cell cell;
  std::size_t passes_before;
};

std::string transfer_token(ActionType type, int stage, int microbatch) {
  const char* text = type == ActionType::SendF   ? "SEND_F"
                     : type == ActionType::RecvF ? "RECV_F"
                     : type == ActionType::SendB ? "SEND_B"
                                                 : "RECV_B";
  return std::to_string(stage) + text + std::to_string(microbatch);
}

// Every RECV has its SEND and every SEND its RECV (a forward goes from stage s to s+1, a
// gradient from s+1 to s), on the row that runs its stage, on the right side of its pass.
void check_transfers(const std::vector<Transfer>& transfers, const sim::Schedule& schedule,
                     const std::map<int, Cell>& stage_home, const std::string& name) {
  std::map<std::tuple<ActionType, int, int>, const Transfer*> seen;
  for (const Transfer& t : transfers)
    seen.emplace(std::make_tuple(t.type, t.stage, t.microbatch), &t);
  for (const Transfer& t : transfers) {
    const auto fail = [&](const std::string& why) {
      throw ScheduleFileError(at(name, t.cell) + ": '" +
                              transfer_token(t.type, t.stage, t.microbatch) + "' " + why);
    };
    const auto home = stage_home.find(t.stage);
    if (home == stage_home.end() || home->second.row != t.cell.row) {
      fail(home == stage_home.end() ? "names a stage that runs no pass"
                                    : "is on another row than its stage's passes (row " +
                                          std::to_string(home->second.row) + ")");
    }
    ActionType partner = ActionType::Compute;
    int partner_stage = 0;
    switch (t.type) {
      case ActionType::SendF:
        partner = ActionType::RecvF, partner_stage = t.stage + 1;
        break;
      case ActionType::RecvF:
        partner = ActionType::SendF, partner_stage = t.stage - 1;
        break;
      case ActionType::SendB:
        partner = ActionType::RecvB, partner_stage = t.stage - 1;
        break;
      default:
        partner = ActionType::SendB, partner_stage = t.stage + 1;
        break;
    }
    if (partner_stage < 0) fail("has no stage to exchange with (stage 0 is the first)");
    if (seen.count(std::make_tuple(partner, partner_stage, t.microbatch)) == 0) {
      fail("has no matching " + transfer_token(partner, partner_stage, t.microbatch) +
           " in the file");
    }
    // A RECV comes before the pass that needs it, a SEND after the pass that makes it.
    const bool forward = t.type == ActionType::SendF || t.type == ActionType::RecvF;
    const bool recv = t.type == ActionType::RecvF || t.type == ActionType::RecvB;
    const auto& ops = schedule.device_ops[static_cast<std::size_t>(t.cell.row - 1)];
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      if (op.stage != t.stage || op.microbatch != t.microbatch || op.kind == OpKind::W ||
          (op.kind == OpKind::F) != forward) {
        continue;
      }
      if (recv && i < t.passes_before) {
        fail("comes after " + action_token(op) + ", the pass that needs it");
      }
      if (!recv && i >= t.passes_before) {
        fail("comes before " + action_token(op) + ", the pass that makes it");
      }
    }
  }
}

ScheduleFile parse_with(std::istream& in, const std::string& name, CsvNaming naming) {
  ScheduleFile file;
  sim::Schedule& schedule = file.schedule;
  std::vector<Transfer> transfers, memory;
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
    // A UTF-8 byte order mark, as Windows tools and spreadsheets write one, is not a cell's.
    if (row == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
    auto& ops = schedule.device_ops.emplace_back();
    auto& pairs = schedule.overlapped_pairs.emplace_back();
    std::stringstream cells_of_row(line);
    std::string text;
    for (int column = 1; std::getline(cells_of_row, text, ','); ++column) {
      const std::string token = cell_token(text);
      if (token.empty()) continue;  // an idle step
      const Cell cell{row, column};
      std::vector<Op> in_cell;
      if (token.front() == '(') {
        const auto [f, b] = parse_pair(token, name, cell, naming);
        pairs.push_back(ops.size());
        in_cell = {f, b};
      } else {
        const Action action = parse_action(token, name, cell, naming);
        switch (action.type) {
          case ActionType::Compute:
            in_cell = {action.op};
            break;
          case ActionType::SendF:
          case ActionType::RecvF:
          case ActionType::SendB:
          case ActionType::RecvB:
            transfers.push_back(
                Transfer{action.type, action.op.stage, action.op.microbatch, cell, ops.size()});
            break;
          default:  // memory actions
            memory.push_back(
                Transfer{action.type, action.op.stage, action.op.microbatch, cell, ops.size()});
            break;
        }
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

  check_transfers(transfers, schedule, stage_home, name);
  for (const Transfer& t : memory) {
    const auto home = stage_home.find(t.stage);
    if (home == stage_home.end() || home->second.row != t.cell.row) {
      throw ScheduleFileError(at(name, t.cell) + ": stage " + std::to_string(t.stage) +
                              (home == stage_home.end()
                                   ? " runs no pass"
                                   : " runs on row " + std::to_string(home->second.row)));
    }
  }
  // The actions in each row's order (transfers and memory actions were collected apart).
  file.actions.resize(schedule.device_ops.size());
  for (const auto* list : {&transfers, &memory}) {
    for (const Transfer& t : *list) {
      file.actions[static_cast<std::size_t>(t.cell.row - 1)].push_back(
          FileAction{static_cast<FileAction::Kind>(static_cast<int>(t.type) - 1), t.stage,
                     t.microbatch, t.passes_before, t.cell.column});
    }
  }
  for (auto& row : file.actions) {
    std::sort(row.begin(), row.end(),
              [](const FileAction& a, const FileAction& b) { return a.column < b.column; });
  }
  try {
    sim::check_runnable(schedule);
  } catch (const sim::ScheduleError& e) {
    // Point at the cells of the ops the error names.
    std::string where;
    for (const Op& op : e.ops()) {
      const auto found = cells.find(key(op));
      if (found == cells.end()) continue;
      for (const Cell& cell : found->second) {
        where += (where.empty() ? "" : ", ") + action_token(op) + " at row " +
                 std::to_string(cell.row) + " column " + std::to_string(cell.column);
      }
    }
    throw ScheduleFileError(name + ": " + e.what() + (where.empty() ? "" : " [" + where + "]"));
  }
  return file;
}

}  // namespace

std::string action_token(const sim::Op& op) {
  static const char* kLetters[] = {"F", "I", "W", "B"};  // F, B (input gradient), W, BW
  return std::to_string(op.stage) + kLetters[static_cast<int>(op.kind)] +
         std::to_string(op.microbatch);
}

sim::Schedule parse_schedule_csv(std::istream& in, const std::string& name, CsvNaming naming) {
  return parse_schedule_file(in, name, naming).schedule;
}

sim::Schedule read_schedule_csv(const std::string& path, CsvNaming naming) {
  return read_schedule_file(path, naming).schedule;
}

bool ScheduleFile::has_actions() const {
  return std::any_of(actions.begin(), actions.end(), [](const auto& row) { return !row.empty(); });
}

ScheduleFile parse_schedule_file(std::istream& in, const std::string& name, CsvNaming naming) {
  std::ostringstream text;
  text << in.rdbuf();
  try {
    std::istringstream file(text.str());
    return parse_with(file, name, naming);
  } catch (const ScheduleFileError& e) {
    if (naming == CsvNaming::Legacy) throw;
    // A file that only makes sense in the older naming says so.
    try {
      std::istringstream file(text.str());
      parse_with(file, name, CsvNaming::Legacy);
    } catch (const ScheduleFileError&) {
      throw e;
    }
    throw ScheduleFileError(std::string(e.what()) +
                            " (the file reads as PyTorch's older naming, B the input gradient "
                            "and BW the full backward: give --csv-naming legacy)");
  }
}

ScheduleFile read_schedule_file(const std::string& path, CsvNaming naming) {
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
  return parse_schedule_file(stream, path, naming);
}

void write_schedule_csv(std::ostream& out, const sim::Schedule& schedule, CsvFormat format) {
  if (!schedule.routes.empty() && !halves(schedule.routes, schedule.num_stages())) {
    throw Error(
        "the schedule's routes cannot be written to a schedule file: a file can only say that "
        "each microbatch runs all stages or one half of them");
  }
  const bool comms = format == CsvFormat::Comms;
  // The transfers around `op` on device `d`: the RECV of its input from another device, and
  // the SENDs of its outputs to other devices.
  const auto device_of = [&](int stage) {
    return schedule.stage_device[static_cast<std::size_t>(stage)];
  };
  const auto recv = [&](const Op& op, int d, std::string& cells) {
    sim::SlotRef input{};
    if (!comms || !sim::data_input(op.kind, op.stage, schedule.route(op.microbatch), input) ||
        device_of(input.stage) == d) {
      return;
    }
    if (!cells.empty()) cells += ',';  // piece by piece: GCC 12 misreads "," + ... (-Wrestrict)
    cells += transfer_token(op.kind == OpKind::F ? ActionType::RecvF : ActionType::RecvB, op.stage,
                            op.microbatch);
  };
  const auto send = [&](const Op& op, int d, std::string& cells) {
    sim::SlotRef outputs[2];
    const int n =
        comms ? sim::data_outputs(op.kind, op.stage, schedule.route(op.microbatch), outputs) : 0;
    for (int k = 0; k < n; ++k) {
      if (outputs[k].slot == sim::Slot::Weight || device_of(outputs[k].stage) == d) continue;
      if (op.kind == OpKind::F && outputs[k].slot != sim::Slot::Forward) continue;
      if (!cells.empty()) cells += ',';
      cells += transfer_token(op.kind == OpKind::F ? ActionType::SendF : ActionType::SendB,
                              op.stage, op.microbatch);
    }
  };
  for (std::size_t d = 0; d < schedule.device_ops.size(); ++d) {
    const auto& ops = schedule.device_ops[d];
    const auto& pairs = schedule.pairs_of(static_cast<int>(d));
    const int device = static_cast<int>(d);
    auto pair = pairs.begin();
    std::string row;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      std::string before, after;
      std::string cell;
      if (pair != pairs.end() && *pair == i) {
        recv(ops[i], device, before);
        recv(ops[i + 1], device, before);
        cell = pair_token(ops[i], ops[i + 1]);
        send(ops[i], device, after);
        send(ops[i + 1], device, after);
        ++pair;
        ++i;
      } else {
        recv(ops[i], device, before);
        cell = action_token(ops[i]);
        send(ops[i], device, after);
      }
      for (const std::string* piece : {&before, &cell, &after}) {
        if (piece->empty()) continue;
        if (!row.empty()) row += ',';
        row += *piece;
      }
    }
    out << row << '\n';
  }
}

void save_schedule_csv(sim::OutputFile& file, const sim::Schedule& schedule, CsvFormat format) {
  std::ostringstream text;
  write_schedule_csv(text, schedule, format);  // may refuse the schedule: before writing anything
  std::ofstream out(file.temporary(), std::ios::trunc);
  out << text.str();
  out.flush();
  if (!out) throw Error(file.path() + ": cannot write the schedule file");
}

void save_schedule_csv(const std::string& path, const sim::Schedule& schedule, CsvFormat format) {
  sim::OutputFile file(path);
  save_schedule_csv(file, schedule, format);
  file.commit();
}

}  // namespace bubblesim::traces
