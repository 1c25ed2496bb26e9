// HDF5 helpers shared by the analysis/ stores (results_file.cpp, profile_file.cpp): owned
// identifiers, error reporting that names the file, attributes, compound tables and syncing.
// Internal to bubblesim_analysis: include only from its .cpp files (it includes <hdf5.h>).
#pragma once

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "analysis/hdf5_guard.h"
#include "sim/error.h"
#include "sim/op.h"

namespace bubblesim::analysis::hdf5 {

// Rows per chunk: about 1 MB of ops, the size HDF5 recommends at most.
inline constexpr hsize_t kChunkRows = 32768;
// zlib level 1: most of the gain of higher levels on these shuffled integer columns, at a
// fraction of the time (a run of 1M ops must write in well under a second).
inline constexpr unsigned kDeflateLevel = 1;

// Turns HDF5's automatic error printing off for the lifetime of the guard; errors are read
// from the error stack instead (hdf5_detail).
class QuietHdf5 {
 public:
  QuietHdf5() {
    // libhdf5 would otherwise close itself at exit, printing what it finds left open (after a
    // damaged file) to standard error; files are closed by their handles anyway.
    H5dont_atexit();
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
inline std::string hdf5_detail() {
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
// `raise` throws the store's own error class with the message it is given.
struct Where {
  using Raise = void (*)(const std::string& message);
  const std::string& path;
  Raise raise;

  [[noreturn]] void fail(const std::string& what) const {
    const std::string detail = hdf5_detail();
    raise(path + ": " + what + (detail.empty() ? "" : " (HDF5: " + detail + ")"));
    BUBBLESIM_CHECK(false, "Where::raise returned");
    std::abort();
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

inline Handle checked_type(hid_t id) {
  BUBBLESIM_CHECK(id >= 0, "HDF5 could not build a datatype");
  return {id, H5Tclose};
}

// Types ---------------------------------------------------------------------------------------

inline Handle string_type() {
  Handle type = checked_type(H5Tcopy(H5T_C_S1));
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  return type;
}

// An HDF5 enum with the names of sim::OpKind.
inline Handle kind_type() {
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
inline Handle compound_type(std::size_t size, std::initializer_list<Field> fields) {
  Handle type = checked_type(H5Tcreate(H5T_COMPOUND, size));
  for (const Field& f : fields)
    BUBBLESIM_CHECK(H5Tinsert(type, f.name, f.offset, f.type) >= 0, f.name);
  return type;
}

// Attributes ----------------------------------------------------------------------------------

inline void write_attribute(const Where& at, hid_t object, const char* name, hid_t type,
                            hsize_t count, const void* data, bool scalar) {
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

inline void write_string(const Where& at, hid_t object, const char* name,
                         const std::string& value) {
  const char* text = value.c_str();
  write_attribute(at, object, name, string_type(), 1, &text, true);
}
inline void write_int(const Where& at, hid_t object, const char* name, std::int32_t value) {
  write_attribute(at, object, name, H5T_NATIVE_INT32, 1, &value, true);
}
inline void write_double(const Where& at, hid_t object, const char* name, double value) {
  write_attribute(at, object, name, H5T_NATIVE_DOUBLE, 1, &value, true);
}
inline void write_doubles(const Where& at, hid_t object, const char* name,
                          const std::vector<double>& values) {
  write_attribute(at, object, name, H5T_NATIVE_DOUBLE, values.size(), values.data(), false);
}

// Opens attribute `name` of `object` (`what`: "run 'x'" or "the root group", for messages).
inline Handle open_attribute(const Where& at, hid_t object, const std::string& what,
                             const char* name) {
  if (H5Aexists(object, name) <= 0) at.fail(what + " has no attribute '" + name + "'");
  return {
      at.check(H5Aopen(object, name, H5P_DEFAULT), "cannot open attribute " + std::string(name)),
      H5Aclose};
}

inline std::string read_string(const Where& at, hid_t object, const std::string& what,
                               const char* name) {
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

// Opens an existing bubblesim file read-only and checks what it claims to be: root attribute
// `format` = `format` and `format_version` = `version`. `kind` names the file in errors
// ("results file"), `expected` says what was expected of a file that is not HDF5 at all.
// `rehearse`, the caller's whole read of the file, runs first in the damaged-file guard's
// child (hdf5_guard.h).
inline Handle open_bubblesim_file(const Where& at, const char* format, int version,
                                  const std::string& kind, const std::string& expected,
                                  const std::function<void()>& rehearse) {
  std::error_code ec;
  if (!std::filesystem::exists(at.path, ec)) at.fail("no such file");
  if (!std::filesystem::is_regular_file(at.path, ec)) at.fail("not a regular file");
  if (H5Fis_hdf5(at.path.c_str()) <= 0) at.fail("not an HDF5 file (expected " + expected + ")");
  if (const std::string problem = damaged_file_problem(at.path, rehearse); !problem.empty()) {
    at.fail(problem);
  }
  Handle file(at.check(H5Fopen(at.path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT),
                       "cannot open the HDF5 file (truncated or damaged?)"),
              H5Fclose);
  const std::string root = "the root group";
  if (H5Aexists(file, "format") <= 0) {
    at.fail("not a bubblesim " + kind + " (no root attribute 'format' = \"" + format + "\")");
  }
  const std::string found = read_string(at, file, root, "format");
  if (found != format) {
    at.fail("not a bubblesim " + kind + " (its format is \"" + found + "\", expected \"" + format +
            "\")");
  }
  const int found_version = read_number<int>(at, file, root, "format_version", H5T_NATIVE_INT);
  if (found_version != version) {
    at.fail("format_version " + std::to_string(found_version) +
            " is not supported (this bubblesim reads version " + std::to_string(version) + ")");
  }
  return file;
}

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
// `owner` names the group in messages ("run 'x'").
std::vector<Row> read_table(const Where& at, hid_t group, const std::string& owner,
                            const char* name, const Handle& type) {
  const std::string what = owner + ": dataset '" + name + "'";
  if (H5Lexists(group, name, H5P_DEFAULT) <= 0) at.fail(what + " is missing");
  const Handle dataset(at.check(H5Dopen2(group, name, H5P_DEFAULT), "cannot open " + what),
                       H5Dclose);
  const Handle space(at.check(H5Dget_space(dataset), "cannot read " + what), H5Sclose);
  if (H5Sget_simple_extent_ndims(space) != 1) at.fail(what + " is not one-dimensional");
  hsize_t size = 0;
  H5Sget_simple_extent_dims(space, &size, nullptr);
  // Deflate expands at most about 1032:1: more rows than that of the file's bytes is damage,
  // and allocating them would only exhaust memory.
  std::error_code ec;
  const std::uintmax_t file_bytes = std::filesystem::file_size(at.path, ec);
  if (!ec && size > (file_bytes * 1100 + (std::uintmax_t{64} << 20)) / sizeof(Row)) {
    at.fail(what + " claims " + std::to_string(size) + " rows, more than the file can hold");
  }
  std::vector<Row> rows(static_cast<std::size_t>(size));
  if (size > 0) {
    at.check(H5Dread(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()),
             "cannot read " + what + " (truncated file, or not the expected fields?)");
  }
  return rows;
}

// Runs ----------------------------------------------------------------------------------------

// The names of the links in `group`, in name order.
inline std::vector<std::string> link_names(const Where& at, hid_t group) {
  std::vector<std::string> names;
  at.check(H5Literate(
               group, H5_INDEX_NAME, H5_ITER_INC, nullptr,
               [](hid_t, const char* name, const H5L_info_t*, void* out) -> herr_t {
                 static_cast<std::vector<std::string>*>(out)->push_back(name);
                 return 0;
               },
               &names),
           "cannot list the group's members");
  return names;
}

// Makes what is written to `path` durable before it is renamed into place.
inline void sync(const Where& at, const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  const bool synced = fd >= 0 && ::fsync(fd) == 0;
  if (fd >= 0) ::close(fd);
  if (!synced) at.fail("cannot sync the new file " + path);
}

// Writes the new file at `temporary`: the root attributes, what `source` holds (if open) except

}  // namespace bubblesim::analysis::hdf5
