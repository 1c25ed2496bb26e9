#include "analysis/results_file.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>
#include <type_traits>

#include "analysis/hdf5_io.h"
#include "sim/output_file.h"

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

// The output `path` by the writer rule; its refusals as ResultsFileError.
sim::OutputFile results_output(const std::string& path) {
  try {
    return sim::OutputFile(path);
  } catch (const ResultsFileError&) {
    throw;
  } catch (const Error& e) {
    throw ResultsFileError(e.what());
  }
}

constexpr const char* kMemoryUnit = "activation units (the unit of m_b and m_w)";
constexpr const char* kBytesNote =
    "bytes the network carried with --cluster (activation size from --model or --comm-bytes); "
    "0 without a cluster";

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
  // Further fields: each an attribute, and their names in order (comma-separated) so that a
  // reader knows them from attributes it does not.
  std::string number_names, text_names;
  for (const auto& [key, value] : run.extra_numbers) {
    write_double(at, group, key.c_str(), value);
    number_names += (number_names.empty() ? "" : ",") + key;
  }
  for (const auto& [key, value] : run.extra_texts) {
    write_string(at, group, key.c_str(), value);
    text_names += (text_names.empty() ? "" : ",") + key;
  }
  if (!number_names.empty()) write_string(at, group, "extra_numbers", number_names);
  if (!text_names.empty()) write_string(at, group, "extra_texts", text_names);

  write_table(at, group, "ops", ops_type(), run.ops);
  const Handle transfers = write_table(at, group, "transfers", transfers_type(), run.transfers);
  write_string(at, transfers, "bytes_note", kBytesNote);
  const Handle memory = write_table(at, group, "memory", memory_type(), run.memory);
  write_string(at, memory, "unit", kMemoryUnit);
  write_table(at, group, "devices", devices_type(), run.devices);
}

// A file from outside may hold anything its types allow: what the reports index or loop over
// (devices, kinds, times) is checked against the run's own tables before use.
void check_run(const Where& at, const std::string& what, const RunRecord& run) {
  const auto devices = static_cast<std::int64_t>(run.devices.size());
  const auto fail = [&](const char* dataset, std::size_t row, const std::string& why) {
    at.fail(what + ": dataset '" + dataset + "', row " + std::to_string(row) + ": " + why);
  };
  const auto device = [&](const char* dataset, std::size_t row, std::int32_t d) {
    if (d < 0 || d >= devices) {
      fail(dataset, row,
           "device " + std::to_string(d) + " out of range (the run has " + std::to_string(devices) +
               " devices)");
    }
  };
  const auto interval = [&](const char* dataset, std::size_t row, sim::TimeNs start,
                            sim::TimeNs end) {
    if (start < 0 || end < start) {
      fail(dataset, row,
           "times out of order or negative (start_ns " + std::to_string(start) + ", end_ns " +
               std::to_string(end) + ")");
    }
  };
  // Every run bubblesim writes has a devices row per device (pp of them, times --dp), and the
  // reports draw a row per device: pp beyond them would draw rows of nothing (or billions).
  if (run.parameters.pp < 0 || run.parameters.pp > devices) {
    at.fail(what + ": attribute 'pp' " + std::to_string(run.parameters.pp) +
            " out of range (0 to the " + std::to_string(devices) + " rows of dataset 'devices')");
  }
  for (std::size_t i = 0; i < run.devices.size(); ++i)
    device("devices", i, run.devices[i].device);
  for (std::size_t i = 0; i < run.ops.size(); ++i) {
    const OpRecord& op = run.ops[i];
    device("ops", i, op.device);
    if (static_cast<int>(op.kind) >= sim::kNumOpKinds) fail("ops", i, "an op kind out of range");
    if (op.stage < 0 || op.chunk < 0 || op.microbatch < 0) {
      fail("ops", i, "a negative stage, chunk or microbatch");
    }
    interval("ops", i, op.start_ns, op.end_ns);
  }
  for (std::size_t i = 0; i < run.transfers.size(); ++i) {
    device("transfers", i, run.transfers[i].src_device);
    device("transfers", i, run.transfers[i].dst_device);
    interval("transfers", i, run.transfers[i].start_ns, run.transfers[i].end_ns);
  }
  for (std::size_t i = 0; i < run.memory.size(); ++i) {
    device("memory", i, run.memory[i].device);
    if (run.memory[i].time_ns < 0 || !std::isfinite(run.memory[i].activation_memory)) {
      fail("memory", i, "a negative time or a memory that is not a number");
    }
  }
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
  const auto names = [&](const char* attribute) {
    std::vector<std::string> out;
    if (H5Aexists(group, attribute) <= 0) return out;
    std::stringstream list(string(attribute));
    for (std::string key; std::getline(list, key, ',');)
      out.push_back(key);
    return out;
  };
  for (const std::string& key : names("extra_numbers"))
    run.extra_numbers.emplace_back(key, number(key.c_str()));
  for (const std::string& key : names("extra_texts"))
    run.extra_texts.emplace_back(key, string(key.c_str()));
  run.ops = read_table<OpRecord>(at, group, what, "ops", ops_type());
  run.transfers = read_table<TransferRecord>(at, group, what, "transfers", transfers_type());
  run.memory = read_table<MemoryRecord>(at, group, what, "memory", memory_type());
  run.devices = read_table<DeviceRecord>(at, group, what, "devices", devices_type());
  check_run(at, what, run);
  return run;
}

// Sweep table --------------------------------------------------------------------------------

// SweepRow as HDF5 stores it: strings as variable-length C strings.
struct SweepRowH5 {
  std::int32_t index;
  const char* key;
  const char* schedule;
  std::int32_t pp, microbatches, chunks;
  double f_ms, b_ms, w_ms, comm_ms, m_b, m_w, mem_limit;
  const char* model;
  const char* gpu;
  double iteration_time_ms, max_device_span_ms, bubble_rate, peak_activation_memory;
  const char* cluster;
  std::int32_t dp;
  double peak_memory_bytes, samples_per_gpu_per_s;
  const char* status;
  const char* error;
};

Handle sweep_type() {
  const Handle s = string_type();
  const hid_t i = H5T_NATIVE_INT32, d = H5T_NATIVE_DOUBLE;
  return compound_type(sizeof(SweepRowH5),
                       {{"index", HOFFSET(SweepRowH5, index), i},
                        {"key", HOFFSET(SweepRowH5, key), s},
                        {"schedule", HOFFSET(SweepRowH5, schedule), s},
                        {"pp", HOFFSET(SweepRowH5, pp), i},
                        {"microbatches", HOFFSET(SweepRowH5, microbatches), i},
                        {"chunks", HOFFSET(SweepRowH5, chunks), i},
                        {"f_ms", HOFFSET(SweepRowH5, f_ms), d},
                        {"b_ms", HOFFSET(SweepRowH5, b_ms), d},
                        {"w_ms", HOFFSET(SweepRowH5, w_ms), d},
                        {"comm_ms", HOFFSET(SweepRowH5, comm_ms), d},
                        {"m_b", HOFFSET(SweepRowH5, m_b), d},
                        {"m_w", HOFFSET(SweepRowH5, m_w), d},
                        {"mem_limit", HOFFSET(SweepRowH5, mem_limit), d},
                        {"model", HOFFSET(SweepRowH5, model), s},
                        {"gpu", HOFFSET(SweepRowH5, gpu), s},
                        {"iteration_time_ms", HOFFSET(SweepRowH5, iteration_time_ms), d},
                        {"max_device_span_ms", HOFFSET(SweepRowH5, max_device_span_ms), d},
                        {"bubble_rate", HOFFSET(SweepRowH5, bubble_rate), d},
                        {"peak_activation_memory", HOFFSET(SweepRowH5, peak_activation_memory), d},
                        {"cluster", HOFFSET(SweepRowH5, cluster), s},
                        {"dp", HOFFSET(SweepRowH5, dp), i},
                        {"peak_memory_bytes", HOFFSET(SweepRowH5, peak_memory_bytes), d},
                        {"samples_per_gpu_per_s", HOFFSET(SweepRowH5, samples_per_gpu_per_s), d},
                        {"status", HOFFSET(SweepRowH5, status), s},
                        {"error", HOFFSET(SweepRowH5, error), s}});
}

void write_sweep(const Where& at, hid_t file, const std::vector<SweepRow>& rows,
                 const SweepInfo& info) {
  std::vector<SweepRowH5> h5;
  h5.reserve(rows.size());
  for (const SweepRow& r : rows) {
    h5.push_back({r.index,
                  r.key.c_str(),
                  r.schedule.c_str(),
                  r.pp,
                  r.microbatches,
                  r.chunks,
                  r.f_ms,
                  r.b_ms,
                  r.w_ms,
                  r.comm_ms,
                  r.m_b,
                  r.m_w,
                  r.mem_limit,
                  r.model.c_str(),
                  r.gpu.c_str(),
                  r.iteration_time_ms,
                  r.max_device_span_ms,
                  r.bubble_rate,
                  r.peak_activation_memory,
                  r.cluster.c_str(),
                  r.dp,
                  r.peak_memory_bytes,
                  r.samples_per_gpu_per_s,
                  r.status.c_str(),
                  r.error.c_str()});
  }
  const Handle group(at.check(H5Gcreate2(file, "sweep", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                              "cannot create group /sweep"),
                     H5Gclose);
  if (!info.study_fingerprint.empty()) {
    write_string(at, group, "study_fingerprint", info.study_fingerprint);
    write_int(at, group, "study_configurations", info.study_configurations);
    write_int(at, group, "shard", info.shard);
    write_int(at, group, "shards", info.shards);
  }
  write_table(at, group, "table", sweep_type(), h5);
}

std::vector<SweepRow> read_sweep(const Where& at, hid_t file) {
  const Handle group(at.check(H5Gopen2(file, "sweep", H5P_DEFAULT), "cannot open /sweep"),
                     H5Gclose);
  const Handle type = sweep_type();
  std::vector<SweepRowH5> h5 = read_table<SweepRowH5>(at, group, "sweep", "table", type);
  const auto str = [](const char* s) { return s != nullptr ? std::string(s) : std::string(); };
  std::vector<SweepRow> rows;
  rows.reserve(h5.size());
  for (const SweepRowH5& r : h5) {
    rows.push_back({r.index,
                    str(r.key),
                    str(r.schedule),
                    r.pp,
                    r.microbatches,
                    r.chunks,
                    r.f_ms,
                    r.b_ms,
                    r.w_ms,
                    r.comm_ms,
                    r.m_b,
                    r.m_w,
                    r.mem_limit,
                    str(r.model),
                    str(r.gpu),
                    r.iteration_time_ms,
                    r.max_device_span_ms,
                    r.bubble_rate,
                    r.peak_activation_memory,
                    str(r.cluster),
                    r.dp,
                    r.peak_memory_bytes,
                    r.samples_per_gpu_per_s,
                    str(r.status),
                    str(r.error)});
  }
  if (!h5.empty()) {
    // Frees the strings HDF5 allocated for the variable-length fields.
    const hsize_t size = h5.size();
    const Handle space(H5Screate_simple(1, &size, nullptr), H5Sclose);
    H5Dvlen_reclaim(type, space, H5P_DEFAULT, h5.data());
  }
  return rows;
}

// Files ---------------------------------------------------------------------------------------

// Everything a ResultsReader reads of the file at `path`: what the damaged-file guard's child
// rehearses before the process opens it.
void read_all(const std::string& path) {
  const ResultsReader reader(path);
  reader.writer();
  for (const std::string& name : reader.run_names())
    reader.read_run(name);
  if (reader.has_sweep_table()) reader.read_sweep_table();
  reader.sweep_info();
}

// Opens an existing results file read-only and checks what it claims to be.
Handle open_results(const Where& at, int& format_version) {
  Handle file =
      open_bubblesim_file(at, kResultsFormat, kResultsFormatVersion, "results file",
                          "a bubblesim results file", [path = at.path] { read_all(path); });
  format_version = kResultsFormatVersion;
  if (H5Lexists(file, "runs", H5P_DEFAULT) <= 0) at.fail("has no /runs group");
  return file;
}

// Writes the new file at `temporary`: the root attributes, what `source` holds (if open) except
// the runs in `replaced` (and its sweep table when `sweep` is given), `runs` and `sweep`.
void write_file(const Where& at, const std::string& temporary, hid_t source,
                const std::set<std::string>& replaced, const std::vector<RunRecord>& runs,
                const WriterInfo& writer, const std::vector<SweepRow>* sweep = nullptr,
                const SweepInfo& info = {}) {
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
      if (name == "runs" || (name == "sweep" && sweep != nullptr)) continue;
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
  if (sweep != nullptr) write_sweep(at, file, *sweep, info);
  at.check(file.close(), "cannot finish writing " + temporary);
}

// Writes the new file with `write(out.temporary())`, synced; the caller commits `out`. An
// existing file is read from `source` (closed before returning).
template <typename Write>
void write_new_file(const Where& at, sim::OutputFile& out, Handle& source, const Write& write) {
  write(out.temporary());
  if (source >= 0) at.check(source.close(), "cannot close");
  sync(at, out.temporary());
}

// Opens the results file that `out` would replace, if there is one.
Handle open_existing(const Where& at, const sim::OutputFile& out) {
  if (out.writes_into_special_file()) {
    at.fail("not a regular file (a results file is added to, so it must be one)");
  }
  if (!out.replaces_regular_file()) return Handle();
  int version = 0;
  return open_results(at, version);
}

}  // namespace

void write_runs(sim::OutputFile& out, const std::vector<RunRecord>& runs, const WriterInfo& writer,
                bool overwrite) {
  const QuietHdf5 quiet;
  const Where at = results_at(out.path());
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

  Handle source = open_existing(at, out);
  if (source >= 0) {
    const Handle old_runs(at.check(H5Gopen2(source, "runs", H5P_DEFAULT), "cannot open /runs"),
                          H5Gclose);
    for (const std::string& name : link_names(at, old_runs)) {
      if (names.count(name) != 0 && !overwrite) {
        throw RunExistsError(out.path() + ": already holds a run named '" + name + "'");
      }
    }
  }
  write_new_file(at, out, source, [&](const std::string& temporary) {
    write_file(at, temporary, source, names, runs, writer);
  });
}

void write_runs(const std::string& path, const std::vector<RunRecord>& runs,
                const WriterInfo& writer, bool overwrite) {
  sim::OutputFile out = results_output(path);
  write_runs(out, runs, writer, overwrite);
  out.commit();
}

void write_sweep_table(const std::string& path, const std::vector<SweepRow>& rows,
                       const WriterInfo& writer, const SweepInfo& info) {
  const QuietHdf5 quiet;
  sim::OutputFile out = results_output(path);
  const Where at = results_at(path);
  Handle source = open_existing(at, out);
  write_new_file(at, out, source, [&](const std::string& temporary) {
    write_file(at, temporary, source, {}, {}, writer, &rows, info);
  });
  out.commit();
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

bool ResultsReader::has_sweep_table() const {
  const QuietHdf5 quiet;
  return H5Lexists(file_, "sweep", H5P_DEFAULT) > 0 &&
         H5Lexists(file_, "sweep/table", H5P_DEFAULT) > 0;
}

std::vector<SweepRow> ResultsReader::read_sweep_table() const {
  const QuietHdf5 quiet;
  const Where at = results_at(path_);
  if (!has_sweep_table()) at.fail("has no sweep table (/sweep/table)");
  return read_sweep(at, file_);
}

std::optional<SweepInfo> ResultsReader::sweep_info() const {
  const QuietHdf5 quiet;
  const Where at = results_at(path_);
  if (!has_sweep_table()) at.fail("has no sweep table (/sweep/table)");
  const Handle group(at.check(H5Gopen2(file_, "sweep", H5P_DEFAULT), "cannot open /sweep"),
                     H5Gclose);
  if (H5Aexists(group, "study_fingerprint") <= 0) return std::nullopt;
  const std::string what = "/sweep";
  SweepInfo info;
  info.study_fingerprint = read_string(at, group, what, "study_fingerprint");
  const auto int32 = [&](const char* name) {
    return read_number<std::int32_t>(at, group, what, name, H5T_NATIVE_INT32);
  };
  info.study_configurations = int32("study_configurations");
  info.shard = int32("shard");
  info.shards = int32("shards");
  return info;
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
