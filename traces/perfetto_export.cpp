#include "traces/perfetto_export.h"

#include <rapidjson/internal/dtoa.h>
#include <rapidjson/internal/itoa.h>
#include <rapidjson/writer.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "sim/error.h"

namespace bubblesim::traces {

namespace {

// The trace's text, buffered and written to a file in large blocks. Built by hand rather than
// with rapidjson::Writer: every event holds only fixed identifiers and numbers, so nothing
// needs escaping, and the Writer's character-at-a-time output (escaping, or copying a raw
// value) was 70% of the export's time. RapidJSON still formats the numbers.
class JsonText {
 public:
  explicit JsonText(std::FILE* file) : file_(file), buffer_(kBufferBytes), end_(buffer_.data()) {}

  template <std::size_t N>
  JsonText& operator<<(const char (&text)[N]) {
    return append(text, N - 1);
  }
  JsonText& operator<<(std::string_view text) { return append(text.data(), text.size()); }
  JsonText& operator<<(std::int64_t value) {
    end_ = rapidjson::internal::i64toa(value, end_);
    return *this;
  }
  JsonText& operator<<(double value) {
    end_ = rapidjson::internal::dtoa(value, end_);
    return *this;
  }
  // Nanoseconds as microseconds with three decimals: exact.
  JsonText& us(sim::TimeNs ns) {
    if (ns < 0) *end_++ = '-';
    const std::uint64_t magnitude =
        ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
    end_ = rapidjson::internal::u64toa(magnitude / 1000, end_);
    const auto fraction = static_cast<unsigned>(magnitude % 1000);
    *end_++ = '.';
    *end_++ = static_cast<char>('0' + fraction / 100);
    *end_++ = static_cast<char>('0' + fraction / 10 % 10);
    *end_++ = static_cast<char>('0' + fraction % 10);
    return *this;
  }
  // "F3", "BW12": as in the zero-bubble paper's figures.
  JsonText& op_name(const sim::Op& op) {
    return *this << sim::to_string(op.kind) << static_cast<std::int64_t>(op.microbatch);
  }
  // Ends an event of the events array: a separator before the next one, and room for it.
  void end_event() {
    *end_++ = ',';
    if (end_ - buffer_.data() > kBufferBytes - kMaxEventBytes) flush();
  }
  // Writes what is buffered; false after a write error.
  bool flush() {
    const auto size = static_cast<std::size_t>(end_ - buffer_.data());
    ok_ = ok_ && std::fwrite(buffer_.data(), 1, size, file_) == size;
    end_ = buffer_.data();
    return ok_;
  }
  // Drops the separator after the last event.
  void drop_separator() {
    if (end_ > buffer_.data() && end_[-1] == ',') --end_;
  }

 private:
  static constexpr std::ptrdiff_t kBufferBytes = 1 << 20;
  static constexpr std::ptrdiff_t kMaxEventBytes = 1024;  // an event is about 300 characters

  JsonText& append(const char* text, std::size_t size) {
    std::memcpy(end_, text, size);
    end_ += size;
    return *this;
  }

  std::FILE* file_;
  std::vector<char> buffer_;
  char* end_;
  bool ok_ = true;
};

void metadata(JsonText& e, std::string_view what, int pid, int tid, std::string_view name) {
  (e << R"({"ph":"M","name":")" << what << R"(","pid":)" << std::int64_t{pid} << R"(,"tid":)"
     << std::int64_t{tid} << R"(,"args":{"name":")" << name << R"("}})")
      .end_event();
}

// The common fields of a complete event (a slice), without the closing brace.
void slice(JsonText& e, std::string_view category, const sim::Op& op, int pid, int tid,
           sim::TimeNs start_ns, sim::TimeNs end_ns) {
  (e << R"({"ph":"X","cat":")" << category << R"(","name":")").op_name(op)
      << R"(","pid":)" << std::int64_t{pid} << R"(,"tid":)" << std::int64_t{tid} << R"(,"ts":)";
  e.us(start_ns) << R"(,"dur":)";
  e.us(end_ns - start_ns);
}

// A flow arrow (Chrome's flow events v2) from a transfer to the op that consumes it, bound to
// both slices by an id: the consumer's dense op index, unique since an op has one input.
void flow(JsonText& e, std::size_t id, bool out) {
  e << R"(,"bind_id":)" << static_cast<std::int64_t>(id)
    << (out ? R"(,"flow_out":true)" : R"(,"flow_in":true)");
}

void write_events(JsonText& e, const sim::Schedule& schedule, const sim::Timeline& timeline,
                  const std::vector<sim::TransferEvent>& transfers, const sim::CostModel& costs) {
  const sim::OpSlots slots(schedule.num_stages(), schedule.num_microbatches);
  for (int d = 0; d < schedule.num_devices(); ++d) {
    metadata(e, "process_name", d, 0, "device " + std::to_string(d));
    metadata(e, "thread_name", d, 0, "compute");
    metadata(e, "thread_name", d, 1, "transfers");
    double memory = 0;
    const auto& ops = schedule.device_ops[static_cast<std::size_t>(d)];
    const auto& times = timeline.device_ops[static_cast<std::size_t>(d)];
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const sim::Op& op = ops[i];
      slice(e, "bubblesim_op", op, d, 0, times[i].start_ns, times[i].end_ns);
      sim::SlotRef input{};
      if (sim::data_input(op.kind, op.stage, schedule.route(op.microbatch), input) &&
          schedule.stage_device[static_cast<std::size_t>(input.stage)] != d) {
        flow(e, slots(op), false);
      }
      (e << R"(,"args":{"stage":)" << std::int64_t{op.stage} << R"(,"chunk":)"
         << std::int64_t{op.chunk} << R"(,"microbatch":)" << std::int64_t{op.microbatch}
         << R"(,"pass":")" << sim::to_string(op.kind) << R"("}})")
          .end_event();

      memory += costs.activation_delta(op, d);
      e << R"({"ph":"C","name":"activation memory","pid":)" << std::int64_t{d} << R"(,"ts":)";
      (e.us(times[i].start_ns) << R"(,"args":{"memory":)" << memory << "}}").end_event();
    }
  }

  for (const sim::TransferEvent& t : transfers) {
    const sim::Op& op = t.producer;
    slice(e, "bubblesim_transfer", op, t.src_device, 1, t.start_ns, t.end_ns);
    sim::SlotRef out[2];
    const int n = sim::data_outputs(op.kind, op.stage, schedule.route(op.microbatch), out);
    for (int k = 0; k < n; ++k) {
      if (schedule.stage_device[static_cast<std::size_t>(out[k].stage)] == t.dst_device) {
        flow(e, slots(out[k].slot, out[k].stage, op.microbatch), true);
      }
    }
    (e << R"(,"args":{"src_device":)" << std::int64_t{t.src_device} << R"(,"dst_device":)"
       << std::int64_t{t.dst_device} << R"(,"stage":)" << std::int64_t{op.stage}
       << R"(,"microbatch":)" << std::int64_t{op.microbatch} << R"(,"pass":")"
       << sim::to_string(op.kind) << R"("}})")
        .end_event();
  }
}

}  // namespace

void save_perfetto_trace(sim::OutputFile& out, const sim::Schedule& schedule,
                         const sim::Timeline& timeline,
                         const std::vector<sim::TransferEvent>& transfers,
                         const sim::CostModel& costs) {
  const auto fail = [&](const std::string& what) {
    throw Error(out.path() + ": cannot write the trace: " + what);
  };
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(out.temporary().c_str(), "wb"),
                                                       &std::fclose);
  if (!file) fail(std::strerror(errno));
  JsonText text(file.get());
  text << R"({"displayTimeUnit":"ns","otherData":{"generator":"bubblesim"},"traceEvents":[)";
  write_events(text, schedule, timeline, transfers, costs);
  text.drop_separator();
  text << "]}\n";
  const bool written = text.flush();
  if (std::fclose(file.release()) != 0 || !written) fail(std::strerror(errno));
}

void save_perfetto_trace(const std::string& path, const sim::Schedule& schedule,
                         const sim::Timeline& timeline,
                         const std::vector<sim::TransferEvent>& transfers,
                         const sim::CostModel& costs) {
  sim::OutputFile out(path);
  save_perfetto_trace(out, schedule, timeline, transfers, costs);
  out.commit();
}

}  // namespace bubblesim::traces
