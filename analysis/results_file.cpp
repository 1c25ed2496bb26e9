#include "analysis/results_file.h"

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <set>
#include <type_traits>
#include <utility>

namespace bubblesim::analysis {

namespace {

static_assert(std::is_same_v<hid_t, std::int64_t>, "ResultsReader keeps a hid_t as int64_t");

// Rows per chunk: about 1 MB of ops, the size HDF5 recommends at most.
constexpr hsize_t kChunkRows = 32768;
// zlib level 1: most of the gain of higher levels on these shuffled integer columns, at a
// fraction of the time (a run of 1M ops must write in well under a second).
constexpr unsigned kDeflateLevel = 1;

constexpr const char* kMemoryUnit = "activation units (the unit of m_b and m_w)";
constexpr const char* kBytesNote = "0 until a cost model gives message sizes (none does yet)";

// Turns HDF5's automatic error printing off for the lifetime of the guard; errors are read
// from the error stack instead (hdf5_detail).
class QuietHdf5 {
 public:
  QuietHdf5() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietHdf5(const QuietHdf5&) = delete;
  QuietHdf5& operator=(const QuietHdf5&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// The innermost description on HDF5's error stack ("truncated file: eof = ..."), or "".
std::string hdf5_detail() {
  std::string detail;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned, const H5E_error2_t* e, void* out) -> herr_t {
        if (e->desc != nullptr && *e->desc != '\0') *static_cast<std::string*>(out) = e->desc;
        return 0;
      },
      &detail);
  return detail;
}

// Error reporting for one file: every message starts with its path.
struct Where {
  const std::string& path;

  [[noreturn]] void fail(const std::string& what) const {
    const std::string detail = hdf5_detail();
    throw ResultsFileError(path + ": " + what + (detail.empty() ? "" : " (HDF5: " + detail + ")"));
  }
  hid_t check(hid_t id, const std::string& what) const {
    if (id < 0) fail(what);
    return id;
  }
  void check(herr_t status, const std::string& what) const {
    if (status < 0) fail(what);
  }
};

// Owns one HDF5 identifier and closes it with the function it was made with.
class Handle {
 public:
  using Close = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Close close) : id_(id), close_(close) {}
  Handle(Handle&& other) noexcept
      : id_(std::exchange(other.id_, H5I_INVALID_HID)), close_(other.close_) {}
  Handle& operator=(Handle&& other) noexcept {
    std::swap(id_, other.id_);
    std::swap(close_, other.close_);
    return *this;
  }
  ~Handle() { close(); }
  operator hid_t() const { return id_; }
  hid_t release() { return std::exchange(id_, H5I_INVALID_HID); }
  herr_t close() { return id_ < 0 ? 0 : close_(std::exchange(id_, H5I_INVALID_HID)); }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Close close_ = nullptr;
};

Handle checked_type(hid_t id) {
  BUBBLESIM_CHECK(id >= 0, "HDF5 could not build a datatype");
  return {id, H5Tclose};
}

// Types ---------------------------------------------------------------------------------------

Handle string_type() {
  Handle type = checked_type(H5Tcopy(H5T_C_S1));
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  return type;
}

// An HDF5 enum with the names of sim::OpKind.
Handle kind_type() {
  Handle type = checked_type(H5Tenum_create(H5T_NATIVE_UINT8));
  for (const sim::OpKind kind : {sim::OpKind::F, sim::OpKind::B, sim::OpKind::W, sim::OpKind::BW}) {
    const auto value = static_cast<std::uint8_t>(kind);
    H5Tenum_insert(type, std::string(sim::to_string(kind)).c_str(), &value);
  }
  return type;
}

struct Field {
  const char* name;
  std::size_t offset;
  hid_t type;
};

// A compound type laid out as the struct of `size` bytes; the file stores it packed.
Handle compound_type(std::size_t size, std::initializer_list<Field> fields) {
  Handle type = checked_type(H5Tcreate(H5T_COMPOUND, size));
  for (const Field& f : fields)
    BUBBLESIM_CHECK(H5Tinsert(type, f.name, f.offset, f.type) >= 0, f.name);
  return type;
}

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

// Attributes ----------------------------------------------------------------------------------

void write_attribute(const Where& at, hid_t object, const char* name, hid_t type, hsize_t count,
                     const void* data, bool scalar) {
  Handle space(at.check(scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &count, nullptr),
                        "cannot describe attribute " + std::string(name)),
               H5Sclose);
  Handle attribute(at.check(H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT),
                            "cannot create attribute " + std::string(name)),
                   H5Aclose);
  if (count > 0) {  // an empty array has nothing to write (and HDF5 refuses a null buffer)
    at.check(H5Awrite(attribute, type, data), "cannot write attribute " + std::string(name));
  }
}

void write_string(const Where& at, hid_t object, const char* name, const std::string& value) {
  const char* text = value.c_str();
  write_attribute(at, object, name, string_type(), 1, &text, true);
}
void write_int(const Where& at, hid_t object, const char* name, std::int32_t value) {
  write_attribute(at, object, name, H5T_NATIVE_INT32, 1, &value, true);
}
void write_double(const Where& at, hid_t object, const char* name, double value) {
  write_attribute(at, object, name, H5T_NATIVE_DOUBLE, 1, &value, true);
}
void write_doubles(const Where& at, hid_t object, const char* name,
                   const std::vector<double>& values) {
  write_attribute(at, object, name, H5T_NATIVE_DOUBLE, values.size(), values.data(), false);
}

// Opens attribute `name` of `object` (`what`: "run 'x'" or "the root group", for messages).
Handle open_attribute(const Where& at, hid_t object, const std::string& what, const char* name) {
  if (H5Aexists(object, name) <= 0) at.fail(what + " has no attribute '" + name + "'");
  return {
      at.check(H5Aopen(object, name, H5P_DEFAULT), "cannot open attribute " + std::string(name)),
      H5Aclose};
}

std::string read_string(const Where& at, hid_t object, const std::string& what, const char* name) {
  const Handle attribute = open_attribute(at, object, what, name);
  const Handle type(H5Aget_type(attribute), H5Tclose);
  if (H5Tget_class(type) != H5T_STRING) {
    at.fail(what + ": attribute '" + name + "' is not a string");
  }
  if (H5Tis_variable_str(type) > 0) {
    // Read as stored: HDF5 converts no string between ASCII and UTF-8, and writers use either.
    char* text = nullptr;
    at.check(H5Aread(attribute, type, &text), "cannot read attribute " + std::string(name));
    std::string value = text != nullptr ? text : "";
    H5free_memory(text);
    return value;
  }
  std::string value(H5Tget_size(type), '\0');
  at.check(H5Aread(attribute, type, value.data()), "cannot read attribute " + std::string(name));
  value.resize(value.find('\0') == std::string::npos ? value.size() : value.find('\0'));
  return value;
}

// Every value of a numeric attribute, converted to `type` (a native number type).
template <typename T>
std::vector<T> read_numbers(const Where& at, hid_t object, const std::string& what,
                            const char* name, hid_t type) {
  const Handle attribute = open_attribute(at, object, what, name);
  const Handle file_type(H5Aget_type(attribute), H5Tclose);
  const H5T_class_t kind = H5Tget_class(file_type);
  if (kind != H5T_INTEGER && kind != H5T_FLOAT) {
    at.fail(what + ": attribute '" + name + "' is not a number");
  }
  const Handle space(H5Aget_space(attribute), H5Sclose);
  std::vector<T> values(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)));
  if (!values.empty()) {
    at.check(H5Aread(attribute, type, values.data()), "cannot read attribute " + std::string(name));
  }
  return values;
}

template <typename T>
T read_number(const Where& at, hid_t object, const std::string& what, const char* name,
              hid_t type) {
  const std::vector<T> values = read_numbers<T>(at, object, what, name, type);
  if (values.size() != 1) at.fail(what + ": attribute '" + name + "' is not a single number");
  return values.front();
}

// Datasets ------------------------------------------------------------------------------------

// A one-dimensional chunked, shuffled and deflated dataset of `rows`.
template <typename Row>
Handle write_table(const Where& at, hid_t group, const char* name, const Handle& type,
                   const std::vector<Row>& rows) {
  const std::string what = std::string("dataset ") + name;
  const hsize_t size = rows.size();
  const hsize_t unlimited = H5S_UNLIMITED;
  const Handle space(at.check(H5Screate_simple(1, &size, &unlimited), "cannot describe " + what),
                     H5Sclose);
  const Handle properties(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  const hsize_t chunk = std::clamp<hsize_t>(size, 1, kChunkRows);
  at.check(H5Pset_chunk(properties, 1, &chunk), "cannot chunk " + what);
  at.check(H5Pset_shuffle(properties), "cannot shuffle " + what);
  at.check(H5Pset_deflate(properties, kDeflateLevel), "cannot compress " + what);
  const Handle file_type = checked_type(H5Tcopy(type));
  H5Tpack(file_type);
  Handle dataset(
      at.check(H5Dcreate2(group, name, file_type, space, H5P_DEFAULT, properties, H5P_DEFAULT),
               "cannot create " + what),
      H5Dclose);
  if (!rows.empty()) {
    at.check(H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()),
             "cannot write " + what);
  }
  return dataset;
}

template <typename Row>
std::vector<Row> read_table(const Where& at, hid_t group, const std::string& run, const char* name,
                            const Handle& type) {
  const std::string what = "run '" + run + "': dataset '" + name + "'";
  if (H5Lexists(group, name, H5P_DEFAULT) <= 0) at.fail(what + " is missing");
  const Handle dataset(at.check(H5Dopen2(group, name, H5P_DEFAULT), "cannot open " + what),
                       H5Dclose);
  const Handle space(at.check(H5Dget_space(dataset), "cannot read " + what), H5Sclose);
  if (H5Sget_simple_extent_ndims(space) != 1) at.fail(what + " is not one-dimensional");
  hsize_t size = 0;
  H5Sget_simple_extent_dims(space, &size, nullptr);
  std::vector<Row> rows(static_cast<std::size_t>(size));
  if (size > 0) {
    at.check(H5Dread(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()),
             "cannot read " + what + " (truncated file, or not the expected fields?)");
  }
  return rows;
}

// Runs ----------------------------------------------------------------------------------------

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
  run.ops = read_table<OpRecord>(at, group, name, "ops", ops_type());
  run.transfers = read_table<TransferRecord>(at, group, name, "transfers", transfers_type());
  run.memory = read_table<MemoryRecord>(at, group, name, "memory", memory_type());
  run.devices = read_table<DeviceRecord>(at, group, name, "devices", devices_type());
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
                        {"status", HOFFSET(SweepRowH5, status), s},
                        {"error", HOFFSET(SweepRowH5, error), s}});
}

void write_sweep(const Where& at, hid_t file, const std::vector<SweepRow>& rows) {
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
                  r.status.c_str(),
                  r.error.c_str()});
  }
  const Handle group(at.check(H5Gcreate2(file, "sweep", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                              "cannot create group /sweep"),
                     H5Gclose);
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

// The names of the links in `group`, in name order.
std::vector<std::string> link_names(const Where& at, hid_t group) {
  std::vector<std::string> names;
  at.check(H5Literate(
               group, H5_INDEX_NAME, H5_ITER_INC, nullptr,
               [](hid_t, const char* name, const H5L_info_t*, void* out) -> herr_t {
                 static_cast<std::vector<std::string>*>(out)->push_back(name);
                 return 0;
               },
               &names),
           "cannot list the runs");
  return names;
}

// Makes what is written to `path` durable before it is renamed into place.
void sync(const Where& at, const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  const bool synced = fd >= 0 && ::fsync(fd) == 0;
  if (fd >= 0) ::close(fd);
  if (!synced) at.fail("cannot sync the new file " + path);
}

// Writes the new file at `temporary`: the root attributes, what `source` holds (if open) except
// the runs in `replaced` (and its sweep table when `sweep` is given), `runs` and `sweep`.
void write_file(const Where& at, const std::string& temporary, hid_t source,
                const std::set<std::string>& replaced, const std::vector<RunRecord>& runs,
                const WriterInfo& writer, const std::vector<SweepRow>* sweep = nullptr) {
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
  if (sweep != nullptr) write_sweep(at, file, *sweep);
  at.check(file.close(), "cannot finish writing " + temporary);
}

// Writes the new file with `write(temporary)` and renames it over the file (`source`, if open).
template <typename Write>
void replace_file(const Where& at, Handle& source, const Write& write) {
  const std::string& path = at.path;
  std::error_code ec;
  const std::string temporary = path + "." + std::to_string(::getpid()) + ".tmp";
  try {
    write(temporary);
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

}  // namespace

void write_runs(const std::string& path, const std::vector<RunRecord>& runs,
                const WriterInfo& writer, bool overwrite) {
  const QuietHdf5 quiet;
  const Where at{path};
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

  replace_file(at, source, [&](const std::string& temporary) {
    write_file(at, temporary, source, names, runs, writer);
  });
}

void write_sweep_table(const std::string& path, const std::vector<SweepRow>& rows,
                       const WriterInfo& writer) {
  const QuietHdf5 quiet;
  const Where at{path};
  Handle source;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    int version = 0;
    source = open_results(at, version);
  }
  replace_file(at, source, [&](const std::string& temporary) {
    write_file(at, temporary, source, {}, {}, writer, &rows);
  });
}

ResultsReader::ResultsReader(const std::string& path) : path_(path), file_(H5I_INVALID_HID) {
  const QuietHdf5 quiet;
  file_ = open_results(Where{path_}, format_version_).release();
}

ResultsReader::~ResultsReader() {
  const QuietHdf5 quiet;
  H5Fclose(file_);
}

WriterInfo ResultsReader::writer() const {
  const QuietHdf5 quiet;
  const Where at{path_};
  return {read_string(at, file_, "the root group", "bubblesim_version"),
          read_string(at, file_, "the root group", "command_line")};
}

std::vector<std::string> ResultsReader::run_names() const {
  const QuietHdf5 quiet;
  const Where at{path_};
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
  const Where at{path_};
  if (!has_sweep_table()) at.fail("has no sweep table (/sweep/table)");
  return read_sweep(at, file_);
}

RunRecord ResultsReader::read_run(const std::string& name) const {
  const QuietHdf5 quiet;
  const Where at{path_};
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
