#include "analysis/profile_file.h"

#include <cstdio>
#include <filesystem>
#include <mutex>
#include <optional>

#include "analysis/hdf5_io.h"

namespace bubblesim::analysis {

namespace {

using namespace hdf5;

[[noreturn]] void raise_profile_error(const std::string& message) {
  throw ProfileFileError(message);
}

Where profile_at(const std::string& path) {
  return Where{path, &raise_profile_error};
}

// Flat rows, one per sample, as the file stores them.
struct PassRow {
  sim::OpKind pass;
  std::int32_t stage, microbatch, chunk, trace;
  std::int64_t process, gpu_start_ns, gpu_end_ns, kernel_ns;
  std::uint32_t gpu_ops;
};

struct CommRow {
  traces::Collective collective;
  std::int32_t trace, device;
  std::int64_t start_ns, duration_ns, in_bytes, out_bytes;
};

struct DeviceRow {
  std::int32_t trace, device;
  const char* name;  // variable-length string: HDF5 allocates it on reading
  std::uint64_t kernels;
};

// An HDF5 enum with the names of traces::Collective ("all-reduce", "send/recv", ...).
Handle collective_type() {
  Handle type = checked_type(H5Tenum_create(H5T_NATIVE_UINT8));
  for (int i = 0; i < traces::kNumCollectives; ++i) {
    const auto value = static_cast<std::uint8_t>(i);
    H5Tenum_insert(type, std::string(traces::to_string(static_cast<traces::Collective>(i))).c_str(),
                   &value);
  }
  return type;
}

Handle passes_type() {
  using T = PassRow;
  const Handle kind = kind_type();
  return compound_type(sizeof(T), {{"pass", offsetof(T, pass), kind},
                                   {"stage", offsetof(T, stage), H5T_NATIVE_INT32},
                                   {"microbatch", offsetof(T, microbatch), H5T_NATIVE_INT32},
                                   {"chunk", offsetof(T, chunk), H5T_NATIVE_INT32},
                                   {"trace", offsetof(T, trace), H5T_NATIVE_INT32},
                                   {"process", offsetof(T, process), H5T_NATIVE_INT64},
                                   {"gpu_start_ns", offsetof(T, gpu_start_ns), H5T_NATIVE_INT64},
                                   {"gpu_end_ns", offsetof(T, gpu_end_ns), H5T_NATIVE_INT64},
                                   {"kernel_ns", offsetof(T, kernel_ns), H5T_NATIVE_INT64},
                                   {"gpu_ops", offsetof(T, gpu_ops), H5T_NATIVE_UINT32}});
}

Handle comms_type() {
  using T = CommRow;
  const Handle collective = collective_type();
  return compound_type(sizeof(T), {{"collective", offsetof(T, collective), collective},
                                   {"trace", offsetof(T, trace), H5T_NATIVE_INT32},
                                   {"device", offsetof(T, device), H5T_NATIVE_INT32},
                                   {"start_ns", offsetof(T, start_ns), H5T_NATIVE_INT64},
                                   {"duration_ns", offsetof(T, duration_ns), H5T_NATIVE_INT64},
                                   {"in_bytes", offsetof(T, in_bytes), H5T_NATIVE_INT64},
                                   {"out_bytes", offsetof(T, out_bytes), H5T_NATIVE_INT64}});
}

Handle devices_type() {
  using T = DeviceRow;
  const Handle name = string_type();
  return compound_type(sizeof(T), {{"trace", offsetof(T, trace), H5T_NATIVE_INT32},
                                   {"device", offsetof(T, device), H5T_NATIVE_INT32},
                                   {"name", offsetof(T, name), name},
                                   {"kernels", offsetof(T, kernels), H5T_NATIVE_UINT64}});
}

void write_int64(const Where& at, hid_t object, const char* name, std::int64_t value) {
  write_attribute(at, object, name, H5T_NATIVE_INT64, 1, &value, true);
}

void write_file(const Where& at, const std::string& temporary, const traces::Profile& profile,
                const WriterInfo& writer) {
  Handle file(at.check(H5Fcreate(temporary.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
                       "cannot create " + temporary),
              H5Fclose);
  write_string(at, file, "format", kProfileFormat);
  write_int(at, file, "format_version", kProfileFormatVersion);
  write_string(at, file, "bubblesim_version", writer.bubblesim_version);
  write_string(at, file, "command_line", writer.command_line);
  write_int64(at, file, "kernels", static_cast<std::int64_t>(profile.kernels));
  write_int64(at, file, "memcpys", static_cast<std::int64_t>(profile.memcpys));
  write_int64(at, file, "memsets", static_cast<std::int64_t>(profile.memsets));
  write_int64(at, file, "total_kernel_ns", profile.total_kernel_ns);
  write_int64(at, file, "unattributed_gpu_ops",
              static_cast<std::int64_t>(profile.unattributed_gpu_ops));

  std::vector<PassRow> passes;
  for (const traces::PassSample& p : profile.passes) {
    passes.push_back({p.label.pass, p.label.stage, p.label.microbatch, p.label.chunk, p.trace,
                      p.process, p.gpu_start_ns, p.gpu_end_ns, p.kernel_ns, p.gpu_ops});
  }
  const Handle passes_set = write_table(at, file, "passes", passes_type(), passes);
  write_string(at, passes_set, "unit", "ns; stage, microbatch, chunk -1 where the label has none");
  std::vector<CommRow> comms;
  for (const traces::CommSample& c : profile.comms) {
    comms.push_back(
        {c.collective, c.trace, c.device, c.start_ns, c.duration_ns, c.in_bytes, c.out_bytes});
  }
  const Handle comms_set = write_table(at, file, "comms", comms_type(), comms);
  write_string(at, comms_set, "unit", "ns; bytes -1 where the trace records no size");
  std::vector<DeviceRow> devices;
  for (const traces::DeviceInfo& d : profile.devices) {
    devices.push_back({d.trace, d.device, d.name.c_str(), d.kernels});
  }
  write_table(at, file, "devices", devices_type(), devices);
  at.check(file.close(), "cannot finish writing " + temporary);
}

// The longest time a profile may hold: the simulator's largest op time (1e9 ms).
constexpr std::int64_t kMaxProfileTimeNs = 1'000'000'000'000'000;
// The largest trace-clock time a profile may hold, either side of 0: the difference of any two
// (a gap between passes, a pass and a collective) must fit in 64 bits. Trace clocks count from
// the epoch or from the process start: today's epoch in ns is 1.8e18.
constexpr std::int64_t kMaxProfileClockNs = 4'000'000'000'000'000'000;
bool on_the_clock(std::int64_t ns) {
  return ns >= -kMaxProfileClockNs && ns <= kMaxProfileClockNs;
}

std::int64_t read_int64(const Where& at, hid_t file, const char* name) {
  const auto value = read_number<std::int64_t>(at, file, "the root group", name, H5T_NATIVE_INT64);
  if (value < 0) at.fail("root attribute '" + std::string(name) + "' is negative");
  return value;
}

}  // namespace

void write_profile(sim::OutputFile& out, const traces::Profile& profile, const WriterInfo& writer) {
  const QuietHdf5 quiet;
  const Where at = profile_at(out.path());
  write_file(at, out.temporary(), profile, writer);
  sync(at, out.temporary());
}

void write_profile(const std::string& path, const traces::Profile& profile,
                   const WriterInfo& writer) {
  std::optional<sim::OutputFile> out;
  try {
    out.emplace(path);
  } catch (const Error& e) {
    throw ProfileFileError(e.what());
  }
  write_profile(*out, profile, writer);
  out->commit();
}

namespace {

// read_profile without its lock: the damaged-file guard's child rehearses it while the
// parent's thread holds the lock (in the child too, as fork copied it).
traces::Profile read_profile_unlocked(const std::string& path) {
  const QuietHdf5 quiet;
  const Where at = profile_at(path);
  const Handle file = open_bubblesim_file(at, kProfileFormat, kProfileFormatVersion, "profile",
                                          "a bubblesim profile from 'bubblesim import --out'",
                                          [&path] { read_profile_unlocked(path); });
  const std::string root = "the root group";
  traces::Profile profile;
  profile.kernels = static_cast<std::size_t>(read_int64(at, file, "kernels"));
  profile.memcpys = static_cast<std::size_t>(read_int64(at, file, "memcpys"));
  profile.memsets = static_cast<std::size_t>(read_int64(at, file, "memsets"));
  profile.total_kernel_ns = read_int64(at, file, "total_kernel_ns");
  profile.unattributed_gpu_ops =
      static_cast<std::size_t>(read_int64(at, file, "unattributed_gpu_ops"));

  if (profile.total_kernel_ns > kMaxProfileTimeNs) {
    at.fail("root attribute 'total_kernel_ns' is out of range (at most 1e15 ns)");
  }
  std::size_t row = 0;
  for (const PassRow& r : read_table<PassRow>(at, file, root, "passes", passes_type())) {
    // What the simulator will index and add up is checked against its ranges here.
    const auto bad = [&](const std::string& why) {
      at.fail("dataset 'passes', row " + std::to_string(row) + ": " + why);
    };
    if (static_cast<int>(r.pass) >= sim::kNumOpKinds) bad("a pass kind out of range");
    for (const std::int32_t n : {r.stage, r.microbatch, r.chunk}) {
      if (n < traces::kNoNumber || n > traces::kMaxLabelNumber) {
        bad("stage, microbatch or chunk " + std::to_string(n) + " out of range (-1 to " +
            std::to_string(traces::kMaxLabelNumber) + ")");
      }
    }
    if (r.kernel_ns < 0 || r.kernel_ns > kMaxProfileTimeNs) {
      bad("kernel_ns " + std::to_string(r.kernel_ns) + " out of range (0 to 1e15 ns)");
    }
    if (!on_the_clock(r.gpu_start_ns)) {
      bad("gpu_start_ns " + std::to_string(r.gpu_start_ns) + " out of range (-4e18 to 4e18 ns)");
    }
    std::int64_t span_ns = 0;
    if (__builtin_sub_overflow(r.gpu_end_ns, r.gpu_start_ns, &span_ns) || span_ns < 0 ||
        span_ns > kMaxProfileTimeNs) {
      bad("gpu_end_ns - gpu_start_ns out of range (0 to 1e15 ns)");
    }
    ++row;
    profile.passes.push_back({{r.pass, r.stage, r.microbatch, r.chunk},
                              r.trace,
                              r.process,
                              r.gpu_start_ns,
                              r.gpu_end_ns,
                              r.kernel_ns,
                              r.gpu_ops});
    if (r.gpu_ops == 0) ++profile.cpu_timed_passes;
  }
  for (const CommRow& r : read_table<CommRow>(at, file, root, "comms", comms_type())) {
    if (static_cast<int>(r.collective) >= traces::kNumCollectives) {
      at.fail("dataset 'comms': a collective out of range");
    }
    if (r.duration_ns < 0 || r.duration_ns > kMaxProfileTimeNs) {
      at.fail("dataset 'comms': duration_ns " + std::to_string(r.duration_ns) +
              " out of range (0 to 1e15 ns)");
    }
    if (!on_the_clock(r.start_ns)) {
      at.fail("dataset 'comms': start_ns " + std::to_string(r.start_ns) +
              " out of range (-4e18 to 4e18 ns)");
    }
    profile.comms.push_back(
        {r.collective, r.trace, r.device, r.start_ns, r.duration_ns, r.in_bytes, r.out_bytes});
  }
  const Handle type = devices_type();
  std::vector<DeviceRow> devices = read_table<DeviceRow>(at, file, root, "devices", type);
  for (const DeviceRow& r : devices) {
    profile.devices.push_back(
        {r.trace, r.device, r.name != nullptr ? r.name : "", static_cast<std::size_t>(r.kernels)});
  }
  if (!devices.empty()) {
    // The names were allocated by HDF5 while reading.
    const hsize_t size = devices.size();
    const Handle space(H5Screate_simple(1, &size, nullptr), H5Sclose);
    H5Dvlen_reclaim(type, space, H5P_DEFAULT, devices.data());
  }
  return profile;
}

}  // namespace

traces::Profile read_profile(const std::string& path) {
  // Sweeps read profiles from several threads at once, and Debian's libhdf5 is the serial
  // (not thread-safe) build: one read at a time. Without it the HDF5 guard's fork could also
  // copy another thread's half-done libhdf5 state into its child, which then hangs.
  static std::mutex one_at_a_time;
  const std::lock_guard<std::mutex> lock(one_at_a_time);
  return read_profile_unlocked(path);
}

}  // namespace bubblesim::analysis
