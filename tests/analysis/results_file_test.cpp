// The HDF5 results store: bit-exact round trips, appends, atomic writes, and clear errors on
// files that are not ours. The documented h5py/pandas snippet runs on a file we wrote.
#include "analysis/results_file.h"
#include "tests/temp_path.h"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "analysis/run_record.h"
#include "sim/schedules/handcrafted.h"
#include "sim/schedules/v_shape.h"

namespace bubblesim::analysis {
namespace {

namespace fs = std::filesystem;

// A fresh folder per test and process (two checkouts may run the suite at once), so leftover
// temporary files can be looked for.
class ResultsFileTest : public bubblesim::testing::TempDirTest {
 protected:
  std::vector<std::string> files() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_))
      names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
};

std::string read_bytes(const std::string& path) {
  if (!fs::is_regular_file(path)) return {};
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Simulates `schedule` with per-device costs that differ, and records the run.
RunRecord simulated(const std::string& name, const std::string& schedule, int p, int m, int chunks,
                    double mem_limit = 0) {
  sim::ScheduleRegistry registry;
  sim::add_handcrafted_schedules(registry);
  sim::add_v_shape_schedules(registry);
  std::vector<sim::DeviceCosts> devices;
  RunParameters parameters{schedule, p, m, chunks, {}, {}, {}, {}, 1.25, 0.4, mem_limit};
  for (int d = 0; d < p; ++d) {
    // Values with no short binary expansion, to catch any rounding on the way.
    const double f = 1.1 + 0.3 * d, b = 1.3 - 0.1 * d, w = 0.7 + 0.01 * d, comm = 0.05 * (d + 1);
    devices.push_back({sim::ms_to_ns(f), sim::ms_to_ns(b), sim::ms_to_ns(w), sim::ms_to_ns(comm),
                       parameters.m_b, parameters.m_w});
    parameters.f_ms.push_back(f);
    parameters.b_ms.push_back(b);
    parameters.w_ms.push_back(w);
    parameters.comm_ms.push_back(comm);
  }
  const sim::PerDeviceCostModel costs(devices, chunks);
  const sim::Schedule s =
      registry.get(schedule).generate(sim::ScheduleParams{p, m, chunks, &costs, mem_limit});
  sim::TransferLog log;
  sim::EngineObserver* observers[] = {&log};
  const sim::SimulationResult result = sim::simulate(s, costs, observers);
  RunRecord header;
  header.name = name;
  header.bubblesim_version = "0.1.0-test";
  header.command_line = "bubblesim simulate -s " + schedule + " --run-name 'it''s'";
  header.parameters = parameters;
  return make_run_record(header, s, costs, result, log.transfers());
}

RunRecord empty_run() {
  RunRecord run;
  run.name = "empty";
  return run;
}

const WriterInfo kWriter{"0.1.0-test", "bubblesim compare --out 'a b.h5'"};

TEST_F(ResultsFileTest, EveryDatasetAndAttributeRoundTripsBitExactly) {
  std::vector<RunRecord> runs = {
      simulated("zb-h1", "zb-h1", 4, 8, 1),
      simulated("zb-v with spaces", "zb-v", 3, 6, 2, std::numeric_limits<double>::infinity()),
      simulated("gpipe-single-device", "gpipe", 1, 3, 1),  // no transfers: empty dataset
      empty_run(),                                         // empty strings, arrays and datasets
  };
  // The JSON summary's further fields (with a cluster, dp, a model), in their order.
  runs[0].extra_numbers = {{"dp", 2}, {"mfu", 0.1 + 0.2}, {"oom", 0}};
  runs[0].extra_texts = {{"optimizer_sync", "post-validation"}, {"allreduce", ""}};
  ASSERT_EQ(runs[2].transfers.size(), 0u);
  ASSERT_GT(runs[0].transfers.size(), 0u);
  write_runs(path("r.h5"), runs, kWriter);

  const ResultsReader reader(path("r.h5"));
  EXPECT_EQ(reader.format_version(), kResultsFormatVersion);
  EXPECT_EQ(reader.writer().bubblesim_version, kWriter.bubblesim_version);
  EXPECT_EQ(reader.writer().command_line, kWriter.command_line);
  EXPECT_EQ(reader.run_names(), (std::vector<std::string>{"empty", "gpipe-single-device", "zb-h1",
                                                          "zb-v with spaces"}));
  for (const RunRecord& run : runs) {
    const RunRecord back = reader.read_run(run.name);
    // operator== compares every double with ==: bit-exact for these finite and infinite values.
    EXPECT_EQ(back.parameters, run.parameters) << run.name;
    EXPECT_EQ(back.summary, run.summary) << run.name;
    EXPECT_EQ(back.ops, run.ops) << run.name;
    EXPECT_EQ(back.transfers, run.transfers) << run.name;
    EXPECT_EQ(back.memory, run.memory) << run.name;
    EXPECT_EQ(back.devices, run.devices) << run.name;
    EXPECT_EQ(back, run) << run.name;
  }
  EXPECT_EQ(files(), std::vector<std::string>{"r.h5"});  // no temporary left behind
}

TEST_F(ResultsFileTest, RecordHoldsEveryOpTransferAndMemoryChange) {
  const RunRecord run = simulated("zb-h1", "zb-h1", 4, 8, 1);
  EXPECT_EQ(run.ops.size(), 3u * 4 * 8);
  // F crosses p-1 device boundaries forward and B as many backward, for every microbatch.
  EXPECT_EQ(run.transfers.size(), 2u * 3 * 8);
  for (const TransferRecord& t : run.transfers) {
    EXPECT_EQ(std::abs(t.src_device - t.dst_device), 1);
    EXPECT_EQ(t.bytes, 0);
    EXPECT_EQ(t.end_ns - t.start_ns, sim::ms_to_ns(0.05 * (t.src_device + 1)));
  }
  // Each device's memory rows are in time order and reach exactly the device's peak.
  ASSERT_EQ(run.memory.size(), run.ops.size());
  for (const DeviceRecord& d : run.devices) {
    double peak = 0;
    sim::TimeNs last = 0;
    for (const MemoryRecord& m : run.memory) {
      if (m.device != d.device) continue;
      EXPECT_GE(m.time_ns, last);
      last = m.time_ns;
      peak = std::max(peak, m.activation_memory);
    }
    EXPECT_EQ(peak, d.peak_activation_memory) << "device " << d.device;
  }
  EXPECT_EQ(run.summary.peak_activation_memory, 4 * 1.25);
}

TEST_F(ResultsFileTest, AppendsKeepOtherRunsAndAClashChangesNothing) {
  const RunRecord a = simulated("a", "1f1b", 2, 4, 1);
  const RunRecord b = simulated("b", "zb-h2", 3, 6, 1);
  write_runs(path("r.h5"), {a}, kWriter);
  write_runs(path("r.h5"), {b}, {"0.2.0", "second"});
  {
    const ResultsReader reader(path("r.h5"));
    EXPECT_EQ(reader.run_names(), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(reader.read_run("a"), a);
    EXPECT_EQ(reader.writer().command_line, "second");
  }

  const std::string before = read_bytes(path("r.h5"));
  RunRecord a2 = simulated("a", "gpipe", 2, 4, 1);
  try {
    write_runs(path("r.h5"), {b, a2}, kWriter);
    FAIL() << "expected RunExistsError";
  } catch (const RunExistsError& e) {
    EXPECT_EQ(std::string(e.what()), path("r.h5") + ": already holds a run named 'a'");
  }
  EXPECT_EQ(read_bytes(path("r.h5")), before);

  fs::permissions(path("r.h5"), fs::perms::owner_read | fs::perms::owner_write);
  write_runs(path("r.h5"), {a2}, kWriter, /*overwrite=*/true);
  EXPECT_EQ(fs::status(path("r.h5")).permissions(), fs::perms::owner_read | fs::perms::owner_write);
  const ResultsReader reader(path("r.h5"));
  EXPECT_EQ(reader.run_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(reader.read_run("a"), a2);
  EXPECT_EQ(reader.read_run("b"), b);
  EXPECT_EQ(files(), std::vector<std::string>{"r.h5"});
}

TEST_F(ResultsFileTest, OverwritingDoesNotGrowTheFile) {
  const RunRecord a = simulated("a", "zb-h1", 4, 16, 1);
  write_runs(path("r.h5"), {a}, kWriter);
  const auto size = fs::file_size(path("r.h5"));
  for (int i = 0; i < 3; ++i)
    write_runs(path("r.h5"), {a}, kWriter, true);
  EXPECT_EQ(fs::file_size(path("r.h5")), size);
}

TEST_F(ResultsFileTest, BadRunNamesAndUnwritablePathsLeaveNothing) {
  const RunRecord a = simulated("a", "1f1b", 2, 4, 1);
  write_runs(path("r.h5"), {a}, kWriter);
  const std::string before = read_bytes(path("r.h5"));
  for (const std::string bad : {"", ".", "..", "x/y"}) {
    RunRecord run = a;
    run.name = bad;
    EXPECT_THROW(write_runs(path("r.h5"), {run}, kWriter), InvalidArgument) << bad;
  }
  EXPECT_THROW(write_runs(path("r.h5"), {a, a}, kWriter, true), InvalidArgument);
  EXPECT_EQ(read_bytes(path("r.h5")), before);
  EXPECT_THROW(write_runs(path("missing-dir/r.h5"), {a}, kWriter), ResultsFileError);
  EXPECT_EQ(files(), std::vector<std::string>{"r.h5"});
  EXPECT_THROW(ResultsReader(path("r.h5")).read_run("nope"), ResultsFileError);
}

// Writes a minimal HDF5 file whose root has `format` (if not empty) and `format_version`.
void write_foreign(const std::string& path, const char* format, int version) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t space = H5Screate(H5S_SCALAR);
  if (format != nullptr) {
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, H5T_VARIABLE);
    const hid_t attribute = H5Acreate2(file, "format", type, space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attribute, type, &format);
    H5Aclose(attribute);
    H5Tclose(type);
  }
  const hid_t attribute =
      H5Acreate2(file, "format_version", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attribute, H5T_NATIVE_INT, &version);
  H5Aclose(attribute);
  H5Sclose(space);
  H5Gclose(H5Gcreate2(file, "runs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Fclose(file);
}

// Reading and appending both refuse `file` with a one-line message that starts with its path
// and contains `expected`; appending leaves it unchanged.
void expect_refused(const std::string& file, const std::string& expected) {
  const std::string before = read_bytes(file);
  for (const int how : {0, 1, 2}) {
    try {
      if (how == 1) {
        write_runs(file, {simulated("a", "1f1b", 2, 2, 1)}, kWriter);
      } else if (how == 2) {
        write_sweep_table(file, {}, kWriter);
      } else {
        const ResultsReader reader(file);
        for (const std::string& name : reader.run_names())
          reader.read_run(name);
      }
      ADD_FAILURE() << file << ": expected ResultsFileError";
    } catch (const ResultsFileError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(file + ": ", 0), 0u) << what;
      EXPECT_NE(what.find(expected), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  EXPECT_EQ(read_bytes(file), before);
}

TEST_F(ResultsFileTest, ForeignTruncatedAndNewerFilesGiveClearErrors) {
  std::ofstream(path("notes.txt")) << "not HDF5\n";
  expect_refused(path("notes.txt"), "not an HDF5 file");
  std::ofstream(path("empty.h5")).close();
  expect_refused(path("empty.h5"), "not an HDF5 file");

  write_foreign(path("other.h5"), nullptr, 1);
  expect_refused(path("other.h5"), "not a bubblesim results file (no root attribute 'format'");
  write_foreign(path("theirs.h5"), "something-else", 1);
  expect_refused(path("theirs.h5"), "its format is \"something-else\"");
  write_foreign(path("newer.h5"), kResultsFormat, 2);
  expect_refused(path("newer.h5"), "format_version 2 is not supported");

  // Cut a real results file at several points: every cut is refused, none crashes.
  write_runs(path("full.h5"), {simulated("big", "zb-h1", 8, 64, 1)}, kWriter);
  const std::string full = read_bytes(path("full.h5"));
  for (const double fraction : {0.1, 0.5, 0.9, 0.99}) {
    const std::string cut = path("cut" + std::to_string(static_cast<int>(fraction * 100)) + ".h5");
    std::ofstream(cut, std::ios::binary)
        << full.substr(0, static_cast<std::size_t>(fraction * static_cast<double>(full.size())));
    expect_refused(cut, "");
  }
  EXPECT_THROW(ResultsReader(path("absent.h5")), ResultsFileError);
  fs::create_directory(path("folder.h5"));
  expect_refused(path("folder.h5"), "not a regular file");
}

// What the reports index or draw is checked against the run's own tables when it is read (the
// results_values fuzzer's find: a pp of -2147483647 reached the timeline's row arithmetic).
TEST_F(ResultsFileTest, APipelineSizeBeyondTheRunsDevicesIsRefused) {
  const auto error_of = [&](std::int32_t pp) -> std::string {
    RunRecord run = simulated("a", "1f1b", 2, 2, 1);
    run.parameters.pp = pp;
    write_runs(path("pp.h5"), {run}, kWriter, true);
    try {
      ResultsReader(path("pp.h5")).read_run("a");
    } catch (const ResultsFileError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of(-2147483647),
            path("pp.h5") +
                ": run 'a': attribute 'pp' -2147483647 out of range (0 to the 2 rows of dataset "
                "'devices')");
  EXPECT_EQ(error_of(3), path("pp.h5") +
                             ": run 'a': attribute 'pp' 3 out of range (0 to the 2 rows of dataset "
                             "'devices')");
  EXPECT_EQ(error_of(2), "no error");
}

// The h5py/pandas snippet of docs/results-format.md, run on a file written here.
TEST_F(ResultsFileTest, DocumentedPythonSnippetReadsRunsWithoutBubblesim) {
  const char* python = "/usr/bin/python3";
  if (!fs::exists(python)) GTEST_SKIP() << python << " is missing";
  if (std::system((std::string(python) + " -c 'import h5py, pandas' 2>/dev/null").c_str()) != 0) {
    GTEST_SKIP() << "python3-h5py or python3-pandas is not installed "
                    "(apt-get install python3-h5py python3-pandas)";
  }
  std::ifstream doc(BUBBLESIM_SOURCE_DIR "/docs/results-format.md");
  ASSERT_TRUE(doc) << "docs/results-format.md";
  std::stringstream text;
  text << doc.rdbuf();
  const std::string markdown = text.str(), fence = "```python\n";
  const std::size_t begin = markdown.find(fence);
  ASSERT_NE(begin, std::string::npos) << "no python block in docs/results-format.md";
  const std::size_t end = markdown.find("```", begin + fence.size());
  ASSERT_NE(end, std::string::npos);
  std::ofstream(path("snippet.py"))
      << markdown.substr(begin + fence.size(), end - begin - fence.size());

  write_runs(path("r.h5"), {simulated("zb-h1", "zb-h1", 4, 8, 1), simulated("v", "zb-v", 4, 8, 2)},
             kWriter);
  const std::string command = std::string(python) + " " + path("snippet.py") + " " + path("r.h5") +
                              " > " + path("out.txt") + " 2>&1";
  const int status = std::system(command.c_str());
  const std::string out = read_bytes(path("out.txt"));
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("format_version 1, runs ['v', 'zb-h1']"), std::string::npos) << out;
  EXPECT_NE(out.find("zb-h1: zb-h1 p=4 m=8 bubble_rate="), std::string::npos) << out;
  EXPECT_NE(out.find("ops=96 kinds={'B': 32, 'F': 32, 'W': 32} transfers=48 peak=5.0"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("v: zb-v p=4 m=8"), std::string::npos) << out;
}

}  // namespace
}  // namespace bubblesim::analysis
