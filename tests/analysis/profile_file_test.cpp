// The HDF5 profile file: bit-exact round trips, atomic writes, and errors that name the file.
#include "analysis/profile_file.h"
#include "tests/temp_path.h"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include <unistd.h>

namespace bubblesim::analysis {
namespace {

namespace fs = std::filesystem;
using traces::Collective;

class ProfileFileTest : public bubblesim::testing::TempDirTest {
 protected:
  std::size_t file_count() const {
    return static_cast<std::size_t>(
        std::distance(fs::directory_iterator(dir_), fs::directory_iterator()));
  }
};

// The trace-clock times a profile may hold: -4e18 to 4e18 ns (the difference of any two fits in
// 64 bits).
constexpr sim::TimeNs kClockEdgeNs = 4'000'000'000'000'000'000;

traces::Profile sample_profile() {
  traces::Profile p;
  p.passes.push_back(
      {{sim::OpKind::F, 0, 3, traces::kNoNumber}, 0, 4242, 1'000'001, 1'999'999, 987'654, 3});
  p.passes.push_back({{sim::OpKind::B, 12, 7, 1},
                      1,
                      -5,
                      kClockEdgeNs - 1,  // the latest start a profile may hold
                      kClockEdgeNs,
                      1,
                      1});
  p.passes.push_back({{sim::OpKind::W, traces::kNoNumber, traces::kNoNumber, traces::kNoNumber},
                      0,
                      0,
                      0,
                      0,
                      0,
                      std::numeric_limits<std::uint32_t>::max()});
  p.passes.push_back({{sim::OpKind::BW, 2, 1, 0}, 0, 7, 10, 20, 9, 2});
  p.comms.push_back({Collective::SendRecv, 0, 1, 123, 456, 8000, -1});
  p.comms.push_back({Collective::Unknown, 1, 0, -7, 0, -1, -1});
  p.comms.push_back({Collective::AllReduce, 0, 3, 1, 2, 3, 4});
  p.devices.push_back({0, 0, "NVIDIA H100 80GB HBM3", 17});
  p.devices.push_back({1, 3, "", 0});
  p.devices.push_back({1, 4, "Gerät μ", std::numeric_limits<std::uint32_t>::max()});
  p.kernels = 99;
  p.memcpys = 5;
  p.memsets = 6;
  p.total_kernel_ns = 1234567890123;
  p.unattributed_gpu_ops = 8;
  return p;
}

void expect_equal(const traces::Profile& a, const traces::Profile& b) {
  ASSERT_EQ(a.passes.size(), b.passes.size());
  for (std::size_t i = 0; i < a.passes.size(); ++i) {
    const traces::PassSample &x = a.passes[i], &y = b.passes[i];
    EXPECT_EQ(x.label, y.label) << i;
    EXPECT_EQ(x.trace, y.trace) << i;
    EXPECT_EQ(x.process, y.process) << i;
    EXPECT_EQ(x.gpu_start_ns, y.gpu_start_ns) << i;
    EXPECT_EQ(x.gpu_end_ns, y.gpu_end_ns) << i;
    EXPECT_EQ(x.kernel_ns, y.kernel_ns) << i;
    EXPECT_EQ(x.gpu_ops, y.gpu_ops) << i;
  }
  ASSERT_EQ(a.comms.size(), b.comms.size());
  for (std::size_t i = 0; i < a.comms.size(); ++i) {
    const traces::CommSample &x = a.comms[i], &y = b.comms[i];
    EXPECT_EQ(x.collective, y.collective) << i;
    EXPECT_EQ(x.trace, y.trace) << i;
    EXPECT_EQ(x.device, y.device) << i;
    EXPECT_EQ(x.start_ns, y.start_ns) << i;
    EXPECT_EQ(x.duration_ns, y.duration_ns) << i;
    EXPECT_EQ(x.in_bytes, y.in_bytes) << i;
    EXPECT_EQ(x.out_bytes, y.out_bytes) << i;
  }
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (std::size_t i = 0; i < a.devices.size(); ++i) {
    EXPECT_EQ(a.devices[i].trace, b.devices[i].trace) << i;
    EXPECT_EQ(a.devices[i].device, b.devices[i].device) << i;
    EXPECT_EQ(a.devices[i].name, b.devices[i].name) << i;
    EXPECT_EQ(a.devices[i].kernels, b.devices[i].kernels) << i;
  }
  EXPECT_EQ(a.kernels, b.kernels);
  EXPECT_EQ(a.memcpys, b.memcpys);
  EXPECT_EQ(a.memsets, b.memsets);
  EXPECT_EQ(a.total_kernel_ns, b.total_kernel_ns);
  EXPECT_EQ(a.unattributed_gpu_ops, b.unattributed_gpu_ops);
}

TEST_F(ProfileFileTest, RoundTripsBitExactly) {
  const traces::Profile written = sample_profile();
  write_profile(path("p.h5"), written, {"1.2.3", "bubblesim import t.json --out p.h5"});
  expect_equal(read_profile(path("p.h5")), written);
  EXPECT_EQ(file_count(), 1u);  // no temporary file left
}

TEST_F(ProfileFileTest, EmptyProfileRoundTrips) {
  write_profile(path("empty.h5"), traces::Profile{}, {"v", "c"});
  expect_equal(read_profile(path("empty.h5")), traces::Profile{});
}

TEST_F(ProfileFileTest, RootAttributesNameTheFormat) {
  write_profile(path("p.h5"), sample_profile(), {"v", "c"});
  const hid_t file = H5Fopen(path("p.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t attribute = H5Aopen(file, "format_version", H5P_DEFAULT);
  int version = 0;
  H5Aread(attribute, H5T_NATIVE_INT, &version);
  EXPECT_EQ(version, 1);
  H5Aclose(attribute);
  for (const char* dataset : {"passes", "comms", "devices"}) {
    EXPECT_GT(H5Lexists(file, dataset, H5P_DEFAULT), 0) << dataset;
  }
  H5Fclose(file);
}

TEST_F(ProfileFileTest, ReplacingKeepsTheOldFileUntilTheNewOneIsComplete) {
  write_profile(path("p.h5"), sample_profile(), {"v", "c"});
  // A folder that does not exist: the write fails, naming the file, and leaves nothing.
  const std::string bad = path("missing/p.h5");
  try {
    write_profile(bad, sample_profile(), {"v", "c"});
    FAIL() << "expected ProfileFileError";
  } catch (const ProfileFileError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(bad + ": ", 0), 0u) << e.what();
  }
  EXPECT_EQ(file_count(), 1u);
  expect_equal(read_profile(path("p.h5")), sample_profile());
}

TEST_F(ProfileFileTest, BadFilesGiveErrorsNamingTheFile) {
  const auto error_of = [](const std::string& file) -> std::string {
    try {
      read_profile(file);
    } catch (const ProfileFileError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of(path("none.h5")), path("none.h5") + ": no such file");
  std::ofstream(path("text.h5")) << "not hdf5\n";
  EXPECT_NE(error_of(path("text.h5")).find(path("text.h5") + ": not an HDF5 file"),
            std::string::npos);
  // A results file is HDF5 but not a profile.
  write_runs(path("results.h5"), {}, {"v", "c"});
  EXPECT_NE(error_of(path("results.h5")).find("its format is \"bubblesim-results\""),
            std::string::npos)
      << error_of(path("results.h5"));
  // A profile lacking a dataset.
  write_profile(path("p.h5"), sample_profile(), {"v", "c"});
  {
    const hid_t file = H5Fopen(path("p.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    H5Ldelete(file, "comms", H5P_DEFAULT);
    H5Fclose(file);
  }
  EXPECT_NE(
      error_of(path("p.h5")).find(path("p.h5") + ": the root group: dataset 'comms' is missing"),
      std::string::npos)
      << error_of(path("p.h5"));
  // Times beyond the trace clock's range: a gap between two passes, or a pass and a collective,
  // would overflow (the profile_values fuzzer's first find: `simulate --profile` computed
  // 0 - INT64_MIN).
  traces::Profile early = sample_profile();
  early.passes[0].gpu_start_ns = -kClockEdgeNs - 1;
  early.passes[0].gpu_end_ns = -kClockEdgeNs;
  write_profile(path("early.h5"), early, {"v", "c"});
  EXPECT_EQ(error_of(path("early.h5")),
            path("early.h5") +
                ": dataset 'passes', row 0: gpu_start_ns -4000000000000000001 out of range (-4e18 "
                "to 4e18 ns)");
  traces::Profile late = sample_profile();
  late.comms[1].start_ns = std::numeric_limits<sim::TimeNs>::max();
  write_profile(path("late.h5"), late, {"v", "c"});
  EXPECT_EQ(error_of(path("late.h5")),
            path("late.h5") +
                ": dataset 'comms': start_ns 9223372036854775807 out of range (-4e18 to 4e18 ns)");
  // A truncated profile.
  write_profile(path("t.h5"), sample_profile(), {"v", "c"});
  fs::resize_file(path("t.h5"), fs::file_size(path("t.h5")) / 2);
  EXPECT_EQ(error_of(path("t.h5")).rfind(path("t.h5") + ": ", 0), 0u) << error_of(path("t.h5"));
}

}  // namespace
}  // namespace bubblesim::analysis
