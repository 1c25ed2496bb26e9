#include "traces/perfetto_export.h"

#include <rapidjson/filewritestream.h>
#include <rapidjson/writer.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "sim/error.h"

namespace bubblesim::traces {

namespace {

using Writer = rapidjson::Writer<rapidjson::FileWriteStream>;

// Nanoseconds as microseconds with three decimals, written as a raw JSON number.
void write_us(Writer& w, sim::TimeNs ns) {
  char text[32];
  const bool negative = ns < 0;
  const std::uint64_t magnitude =
      negative ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  const int n = std::snprintf(text, sizeof text, "%s%llu.%03llu", negative ? "-" : "",
                              static_cast<unsigned long long>(magnitude / 1000),
                              static_cast<unsigned long long>(magnitude % 1000));
  w.RawValue(text, static_cast<std::size_t>(n), rapidjson::kNumberType);
}

// "F3", "BW12".
rapidjson::SizeType op_name(const sim::Op& op, char (&text)[24]) {
  const std::string_view kind = sim::to_string(op.kind);
  return static_cast<rapidjson::SizeType>(std::snprintf(text, sizeof text, "%.*s%d",
                                                        static_cast<int>(kind.size()), kind.data(),
                                                        static_cast<int>(op.microbatch)));
}

void metadata(Writer& w, const char* what, int pid, int tid, const std::string& name) {
  w.StartObject();
  w.Key("ph");
  w.String("M");
  w.Key("name");
  w.String(what);
  w.Key("pid");
  w.Int(pid);
  w.Key("tid");
  w.Int(tid);
  w.Key("args");
  w.StartObject();
  w.Key("name");
  w.String(name.c_str());
  w.EndObject();
  w.EndObject();
}

void write_events(Writer& w, const sim::Schedule& schedule, const sim::Timeline& timeline,
                  const std::vector<sim::TransferEvent>& transfers, const sim::CostModel& costs) {
  const sim::OpSlots slots(schedule.num_stages(), schedule.num_microbatches);
  std::vector<sim::TimeNs> start_of(slots.size(), 0);
  for (int d = 0; d < schedule.num_devices(); ++d) {
    metadata(w, "process_name", d, 0, "device " + std::to_string(d));
    metadata(w, "thread_name", d, 0, "compute");
    metadata(w, "thread_name", d, 1, "transfers");
    double memory = 0;
    const auto& ops = schedule.device_ops[static_cast<std::size_t>(d)];
    const auto& times = timeline.device_ops[static_cast<std::size_t>(d)];
    char name[24];
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const sim::Op& op = ops[i];
      start_of[slots(op)] = times[i].start_ns;
      w.StartObject();
      w.Key("ph");
      w.String("X");
      w.Key("cat");
      w.String("bubblesim_op");
      w.Key("name");
      w.String(name, op_name(op, name));
      w.Key("pid");
      w.Int(d);
      w.Key("tid");
      w.Int(0);
      w.Key("ts");
      write_us(w, times[i].start_ns);
      w.Key("dur");
      write_us(w, times[i].end_ns - times[i].start_ns);
      w.Key("args");
      w.StartObject();
      w.Key("stage");
      w.Int(op.stage);
      w.Key("chunk");
      w.Int(op.chunk);
      w.Key("microbatch");
      w.Int(op.microbatch);
      const std::string_view pass = sim::to_string(op.kind);
      w.Key("pass");
      w.String(pass.data(), static_cast<rapidjson::SizeType>(pass.size()));
      w.EndObject();
      w.EndObject();

      memory += costs.activation_delta(op, d);
      w.StartObject();
      w.Key("ph");
      w.String("C");
      w.Key("name");
      w.String("activation memory");
      w.Key("pid");
      w.Int(d);
      w.Key("ts");
      write_us(w, times[i].start_ns);
      w.Key("args");
      w.StartObject();
      w.Key("memory");
      w.Double(memory);
      w.EndObject();
      w.EndObject();
    }
  }

  char name[24];
  std::uint64_t flow = 0;
  for (const sim::TransferEvent& t : transfers) {
    const sim::Op& op = t.producer;
    const std::string_view pass = sim::to_string(op.kind);
    w.StartObject();
    w.Key("ph");
    w.String("X");
    w.Key("cat");
    w.String("bubblesim_transfer");
    w.Key("name");
    w.String(name, op_name(op, name));
    w.Key("pid");
    w.Int(t.src_device);
    w.Key("tid");
    w.Int(1);
    w.Key("ts");
    write_us(w, t.start_ns);
    w.Key("dur");
    write_us(w, t.end_ns - t.start_ns);
    w.Key("args");
    w.StartObject();
    w.Key("src_device");
    w.Int(t.src_device);
    w.Key("dst_device");
    w.Int(t.dst_device);
    w.Key("stage");
    w.Int(op.stage);
    w.Key("microbatch");
    w.Int(op.microbatch);
    w.Key("pass");
    w.String(pass.data(), static_cast<rapidjson::SizeType>(pass.size()));
    w.EndObject();
    w.EndObject();

    // The arrow ends at the consumer on the destination device.
    sim::SlotRef out[2];
    const int n = sim::data_outputs(op.kind, op.stage, schedule.num_stages(), out);
    for (int k = 0; k < n; ++k) {
      if (schedule.stage_device[static_cast<std::size_t>(out[k].stage)] != t.dst_device) continue;
      const sim::TimeNs consumer_start = start_of[slots(out[k].slot, out[k].stage, op.microbatch)];
      for (const bool begin : {true, false}) {
        w.StartObject();
        w.Key("ph");
        w.String(begin ? "s" : "f");
        w.Key("cat");
        w.String("bubblesim_flow");
        w.Key("name");
        w.String("transfer");
        w.Key("id");
        w.Uint64(flow);
        w.Key("pid");
        w.Int(begin ? t.src_device : t.dst_device);
        w.Key("tid");
        w.Int(begin ? 1 : 0);
        w.Key("ts");
        write_us(w, begin ? t.start_ns : consumer_start);
        if (!begin) {
          w.Key("bp");
          w.String("e");
        }
        w.EndObject();
      }
      ++flow;
    }
  }
}

}  // namespace

void save_perfetto_trace(const std::string& path, const sim::Schedule& schedule,
                         const sim::Timeline& timeline,
                         const std::vector<sim::TransferEvent>& transfers,
                         const sim::CostModel& costs) {
  const std::string temporary = path + ".tmp";
  const auto fail = [&](const std::string& what) {
    std::remove(temporary.c_str());
    throw Error(path + ": cannot write the trace: " + what);
  };
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(temporary.c_str(), "wb"),
                                                       &std::fclose);
  if (!file) fail(std::strerror(errno));
  std::vector<char> buffer(1 << 16);
  rapidjson::FileWriteStream stream(file.get(), buffer.data(), buffer.size());
  Writer w(stream);
  w.StartObject();
  w.Key("displayTimeUnit");
  w.String("ns");
  w.Key("otherData");
  w.StartObject();
  w.Key("generator");
  w.String("bubblesim");
  w.EndObject();
  w.Key("traceEvents");
  w.StartArray();
  write_events(w, schedule, timeline, transfers, costs);
  w.EndArray();
  w.EndObject();
  stream.Flush();
  const bool written = std::ferror(file.get()) == 0;
  if (std::fclose(file.release()) != 0 || !written) fail(std::strerror(errno));
  if (std::rename(temporary.c_str(), path.c_str()) != 0) fail(std::strerror(errno));
}

}  // namespace bubblesim::traces
