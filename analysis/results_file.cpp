#include "analysis/results_file.h"

#include <cstdio>
#include <filesystem>
#include <set>
#include <type_traits>

#include "analysis/hdf5_io.h"

namespace bubblesim::analysis {

namespace {

static_assert(std::is_same_v<hid_t, std::int64_t>, "ResultsReader keeps a hid_t as int64_t");

using namespace hdf5;

[[noreturn]] void raise_results_error(const std::string& message) {
  throw ResultsFileError(message);
}

// Error reporting for one results file.
Where results_at(const std::string& path) {
  return Where{path, &raise_results_error};
}

constexpr const char* kMemoryUnit = "activation units (the unit of m_b and m_w)";
constexpr const char* kBytesNote = "0 until a cost model gives message sizes (none does yet)";

Handle ops_type() {
  const Handle kind = kind_type();
  return compound_type(sizeof(OpRecord),
                       {{"device", offsetof(OpRecord, device), H5T_NATIVE_INT32},
                        {"stage", offsetof(OpRecord, stage), H5T_NATIVE_INT32},
                        {"chunk", offsetof(OpRecord, chunk), H5T_NATIVE_INT32},
                        {"microbatch", offsetof(OpRecord, microbatch), H5T_NATIVE_INT32},
                        {"kind", offsetof(OpRecord, kind), kind},
                        {"start_ns", offsetof(OpRecord, start_ns), H5T_NATIVE_INT64},
                        {"end_ns", offsetof(OpRecord, end_ns), H5T_NATIVE_INT64}});
}

Handle transfers_type() {
  using T = TransferRecord;
  return compound_type(sizeof(T), {{"src_device", offsetof(T, src_device), H5T_NATIVE_INT32},
                                   {"dst_device", offsetof(T, dst_device), H5T_NATIVE_INT32},
                                   {"bytes", offsetof(T, bytes), H5T_NATIVE_INT64},
                                   {"start_ns", offsetof(T, start_ns), H5T_NATIVE_INT64},
                                   {"end_ns", offsetof(T, end_ns), H5T_NATIVE_INT64}});
}

Handle memory_type() {
  using T = MemoryRecord;
  return compound_type(sizeof(T),
                       {{"device", offsetof(T, device), H5T_NATIVE_INT32},
                        {"time_ns", offsetof(T, time_ns), H5T_NATIVE_INT64},
                        {"activation_memory", offsetof(T, activation_memory), H5T_NATIVE_DOUBLE}});
}

Handle devices_type() {
  using T = DeviceRecord;
  return compound_type(sizeof(T), {{"device", offsetof(T, device), H5T_NATIVE_INT32},
                                   {"span_ms", offsetof(T, span_ms), H5T_NATIVE_DOUBLE},
                                   {"busy_ms", offsetof(T, busy_ms), H5T_NATIVE_DOUBLE},
                                   {"bubble_rate", offsetof(T, bubble_rate), H5T_NATIVE_DOUBLE},
                                   {"peak_activation_memory", offsetof(T, peak_activation_memory),
                                    H5T_NATIVE_DOUBLE}});
}

bool valid_run_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

void write_run(const Where& at, hid_t runs, const RunRecord& run) {
  const Handle group(
      at.check(H5Gcreate2(runs, run.name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
               "cannot create group /runs/" + run.name),
      H5Gclose);
  const RunParameters& p = run.parameters;
  write_string(at, group, "bubblesim_version", run.bubblesim_version);
  write_string(at, group, "command_line", run.command_line);
  write_string(at, group, "schedule", p.schedule);
  write_int(at, group, "pp", p.pp);
  write_int(at, group, "microbatches", p.microbatches);
  write_int(at, group, "chunks", p.chunks);
  write_doubles(at, group, "f_ms", p.f_ms);
  write_doubles(at, group, "b_ms", p.b_ms);
  write_doubles(at, group, "w_ms", p.w_ms);
  write_doubles(at, group, "comm_ms", p.comm_ms);
  write_double(at, group, "m_b", p.m_b);
  write_double(at, group, "m_w", p.m_w);
  write_double(at, group, "mem_limit", p.mem_limit);
  const RunSummaryMetrics& s = run.summary;
  write_double(at, group, "iteration_time_ms", s.iteration_time_ms);
  write_double(at, group, "max_device_span_ms", s.max_device_span_ms);
  write_double(at, group, "bubble_rate", s.bubble_rate);
  write_double(at, group, "peak_activation_memory", s.peak_activation_memory);

  write_table(at, group, "ops", ops_type(), run.ops);
  const Handle transfers = write_table(at, group, "transfers", transfers_type(), run.transfers);
  write_string(at, transfers, "bytes_note", kBytesNote);
  const Handle memory = write_table(at, group, "memory", memory_type(), run.memory);
  write_string(at, memory, "unit", kMemoryUnit);
  write_table(at, group, "devices", devices_type(), run.devices);
}

RunRecord read_run_group(const Where& at, hid_t group, const std::string& name) {
  const std::string what = "run '" + name + "'";
  const auto string = [&](const char* attribute) {
    return read_string(at, group, what, attribute);
  };
  const auto number = [&](const char* attribute) {
    return read_number<double>(at, group, what, attribute, H5T_NATIVE_DOUBLE);
  };
  const auto integer = [&](const char* attribute) {
    return read_number<std::int32_t>(at, group, what, attribute, H5T_NATIVE_INT32);
  };
  const auto numbers = [&](const char* attribute) {
    return read_numbers<double>(at, group, what, attribute, H5T_NATIVE_DOUBLE);
  };
  RunRecord run;
  run.name = name;
  run.bubblesim_version = string("bubblesim_version");
  run.command_line = string("command_line");
  run.parameters = {string("schedule"), integer("pp"),      integer("microbatches"),
                    integer("chunks"),  numbers("f_ms"),    numbers("b_ms"),
                    numbers("w_ms"),    numbers("comm_ms"), number("m_b"),
                    number("m_w"),      number("mem_limit")};
  run.summary = {number("iteration_time_ms"), number("max_device_span_ms"), number("bubble_rate"),
                 number("peak_activation_memory")};
  run.ops = read_table<OpRecord>(at, group, what, "ops", ops_type());
  run.transfers = read_table<TransferRecord>(at, group, what, "transfers", transfers_type());
  run.memory = read_table<MemoryRecord>(at, group, what, "memory", memory_type());
  run.devices = read_table<DeviceRecord>(at, group, what, "devices", devices_type());
  return run;
}

// Files ---------------------------------------------------------------------------------------

// Opens an existing results file read-only and checks what it claims to be.
Handle open_results(const Where& at, int& format_version) {
  std::error_code ec;
  if (!std::filesystem::exists(at.path, ec)) at.fail("no such file");
  if (!std::filesystem::is_regular_file(at.path, ec)) at.fail("not a regular file");
  if (H5Fis_hdf5(at.path.c_str()) <= 0) {
    at.fail("not an HDF5 file (expected a bubblesim results file)");
  }
  Handle file(at.check(H5Fopen(at.path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT),
                       "cannot open the HDF5 file (truncated or damaged?)"),
              H5Fclose);
  const std::string root = "the root group";
  if (H5Aexists(file, "format") <= 0) {
    at.fail("not a bubblesim results file (no root attribute 'format' = \"" +
            std::string(kResultsFormat) + "\")");
  }
  const std::string format = read_string(at, file, root, "format");
  if (format != kResultsFormat) {
    at.fail("not a bubblesim results file (its format is \"" + format + "\", expected \"" +
            kResultsFormat + "\")");
  }
  format_version = read_number<int>(at, file, root, "format_version", H5T_NATIVE_INT);
  if (format_version != kResultsFormatVersion) {
    at.fail("format_version " + std::to_string(format_version) +
            " is not supported (this bubblesim reads version " +
            std::to_string(kResultsFormatVersion) + ")");
  }
  if (H5Lexists(file, "runs", H5P_DEFAULT) <= 0) at.fail("has no /runs group");
  return file;
}

// the runs in `replaced`, and `runs`.
void write_file(const Where& at, const std::string& temporary, hid_t source,
                const std::set<std::string>& replaced, const std::vector<RunRecord>& runs,
                const WriterInfo& writer) {
  Handle file(at.check(H5Fcreate(temporary.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
                       "cannot create " + temporary),
              H5Fclose);
  write_string(at, file, "format", kResultsFormat);
  write_int(at, file, "format_version", kResultsFormatVersion);
  write_string(at, file, "bubblesim_version", writer.bubblesim_version);
  write_string(at, file, "command_line", writer.command_line);
  Handle group(at.check(H5Gcreate2(file, "runs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                        "cannot create group /runs"),
               H5Gclose);
  if (source >= 0) {
    // Everything else at the root is kept as it is (sweep tables, later).
    for (const std::string& name : link_names(at, source)) {
      if (name == "runs") continue;
      at.check(H5Ocopy(source, name.c_str(), file, name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
               "cannot copy /" + name);
    }
    const Handle old_runs(at.check(H5Gopen2(source, "runs", H5P_DEFAULT), "cannot open /runs"),
                          H5Gclose);
    for (const std::string& name : link_names(at, old_runs)) {
      if (replaced.count(name) != 0) continue;
      at.check(H5Ocopy(old_runs, name.c_str(), group, name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
               "cannot copy run '" + name + "' (truncated or damaged file?)");
    }
  }
  for (const RunRecord& run : runs)
    write_run(at, group, run);
  at.check(group.close(), "cannot close group /runs");
  at.check(file.close(), "cannot finish writing " + temporary);
}

}  // namespace

void write_runs(const std::string& path, const std::vector<RunRecord>& runs,
                const WriterInfo& writer, bool overwrite) {
  const QuietHdf5 quiet;
  const Where at = results_at(path);
  std::set<std::string> names;
  for (const RunRecord& run : runs) {
    if (!valid_run_name(run.name)) {
      throw InvalidArgument("run name '" + run.name +
                            "': expected a non-empty name without '/', other than . and ..");
    }
    if (!names.insert(run.name).second) {
      throw InvalidArgument("run name '" + run.name + "' is given to two runs");
    }
  }

  Handle source;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    int version = 0;
    source = open_results(at, version);
    const Handle old_runs(at.check(H5Gopen2(source, "runs", H5P_DEFAULT), "cannot open /runs"),
                          H5Gclose);
    for (const std::string& name : link_names(at, old_runs)) {
      if (names.count(name) != 0 && !overwrite) {
        throw RunExistsError(path + ": already holds a run named '" + name + "'");
      }
    }
  }

  const std::string temporary = path + "." + std::to_string(::getpid()) + ".tmp";
  try {
    write_file(at, temporary, source, names, runs, writer);
    if (source >= 0) {
      at.check(source.close(), "cannot close");
      // The new file replaces the old one: keep who may read it.
      std::filesystem::permissions(temporary, std::filesystem::status(path).permissions(), ec);
    }
    sync(at, temporary);
    if (std::rename(temporary.c_str(), path.c_str()) != 0) {
      at.fail("cannot rename " + temporary + " into place");
    }
  } catch (...) {
    std::remove(temporary.c_str());
    throw;
  }
}

ResultsReader::ResultsReader(const std::string& path) : path_(path), file_(H5I_INVALID_HID) {
  const QuietHdf5 quiet;
  file_ = open_results(results_at(path_), format_version_).release();
}

ResultsReader::~ResultsReader() {
  const QuietHdf5 quiet;
  H5Fclose(file_);
}

WriterInfo ResultsReader::writer() const {
  const QuietHdf5 quiet;
  const Where at = results_at(path_);
  return {read_string(at, file_, "the root group", "bubblesim_version"),
          read_string(at, file_, "the root group", "command_line")};
}

std::vector<std::string> ResultsReader::run_names() const {
  const QuietHdf5 quiet;
  const Where at = results_at(path_);
  const Handle runs(at.check(H5Gopen2(file_, "runs", H5P_DEFAULT), "cannot open /runs"), H5Gclose);
  return link_names(at, runs);
}

RunRecord ResultsReader::read_run(const std::string& name) const {
  const QuietHdf5 quiet;
  const Where at = results_at(path_);
  const std::string link = "runs/" + name;
  if (!valid_run_name(name) || H5Lexists(file_, link.c_str(), H5P_DEFAULT) <= 0) {
    at.fail("has no run named '" + name + "'");
  }
  const Handle group(
      at.check(H5Gopen2(file_, link.c_str(), H5P_DEFAULT), "cannot open run '" + name + "'"),
      H5Gclose);
  return read_run_group(at, group, name);
}

}  // namespace bubblesim::analysis
