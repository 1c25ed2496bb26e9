// GCC 12 warns about std::regex's own code at -O1 (a false positive, GCC bug 105562).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "traces/kineto_handler.h"

#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "traces/kineto_stream.h"

namespace bubblesim::traces {

namespace {

// Bytes of one element of a PyTorch dtype name as the profiler records it ("Float", "BFloat16").
std::int64_t dtype_bytes(std::string_view dtype) {
  static const std::unordered_map<std::string_view, std::int64_t> kSizes = {
      {"Float", 4},        {"Double", 8},        {"Half", 2},          {"BFloat16", 2},
      {"Int", 4},          {"Long", 8},          {"Short", 2},         {"Char", 1},
      {"Byte", 1},         {"Bool", 1},          {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1},
      {"ComplexFloat", 8}, {"ComplexDouble", 16}};
  const auto it = kSizes.find(dtype);
  return it == kSizes.end() ? -1 : it->second;
}

// Parses a JSON number of microseconds into nanoseconds from its digits. False for a number
// it cannot represent that way (an exponent beyond what fits).
bool parse_us(std::string_view s, TimeNs& ns) {
  std::size_t i = 0;
  const bool negative = !s.empty() && s[0] == '-';
  if (negative) ++i;
  std::int64_t whole = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    if (whole > (INT64_MAX / 1000 - 9) / 10) return false;
    whole = whole * 10 + (s[i] - '0');
  }
  std::int64_t fraction = 0;  // in ns
  if (i < s.size() && s[i] == '.') {
    int digits = 0;
    bool round_up = false;
    for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++digits) {
      if (digits < 3) {
        fraction = fraction * 10 + (s[i] - '0');
      } else if (digits == 3) {
        round_up = s[i] >= '5';
      }
    }
    for (; digits < 3; ++digits)
      fraction *= 10;
    fraction += round_up ? 1 : 0;
  }
  if (i < s.size()) {  // an exponent: rare, so through floating point
    const double us = std::strtod(std::string(s).c_str(), nullptr);
    if (!(std::abs(us) < 9e12)) return false;
    ns = static_cast<TimeNs>(std::llround(us * 1000));
    return true;
  }
  ns = whole * 1000 + fraction;
  if (negative) ns = -ns;
  return true;
}

bool parse_int(std::string_view s, std::int64_t& value) {
  std::size_t i = s.size() > 0 && s[0] == '-' ? 1 : 0;
  if (i == s.size() || s.size() - i > 18) return false;
  std::int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  value = s[0] == '-' ? -v : v;
  return true;
}

enum class Category : std::uint8_t {
  Other,
  Kernel,
  Memcpy,
  Memset,
  Runtime,
  Annotation,
  GpuAnnotation,
  BubblesimOp,
  Recorder  // a complete event without "cat": PiPPy's own event recorder
};

// Kineto's categories; older PyTorch profilers (1.8) wrote Kernel, Memcpy, Memset, Runtime.
// s == literal, as a length check and a fixed-size comparison that the compiler expands
// inline: string_view's operator== calls compare() out of line, and the handler compares
// every key of every event (12% of an import before).
template <std::size_t N>
bool is(std::string_view s, const char (&literal)[N]) {
  return s.size() == N - 1 && __builtin_memcmp(s.data(), literal, N - 1) == 0;
}

Category category_of(std::string_view cat) {
  if (is(cat, "kernel") || is(cat, "Kernel")) return Category::Kernel;
  if (is(cat, "gpu_memcpy") || is(cat, "Memcpy")) return Category::Memcpy;
  if (is(cat, "gpu_memset") || is(cat, "Memset")) return Category::Memset;
  if (is(cat, "cuda_runtime") || is(cat, "cuda_driver") || is(cat, "Runtime"))
    return Category::Runtime;
  if (is(cat, "user_annotation")) return Category::Annotation;
  if (is(cat, "gpu_user_annotation")) return Category::GpuAnnotation;
  if (is(cat, "bubblesim_op")) return Category::BubblesimOp;
  return Category::Other;
}

// The fields of one event that the importer reads.
enum class Field : std::uint8_t {
  None,
  Ph,
  Cat,
  Name,
  Pid,
  Tid,
  Ts,
  Dur,
  Args,
  // args.*
  Correlation,
  Device,
  CollectiveName,
  InNelems,
  OutNelems,
  Dtype,
  Stage,
  Chunk,
  Microbatch,
  Pass,
  // deviceProperties[*].*
  DeviceId,
  DeviceName
};

struct Event {
  bool complete = false;  // "ph": "X"
  bool has_category = false;
  Category category = Category::Other;
  std::string name;
  std::int64_t pid = 0;
  std::int64_t tid = 0;
  std::optional<TimeNs> ts_ns, dur_ns;
  std::uint64_t correlation = kNoCorrelation;
  std::optional<std::int64_t> device;
  std::string collective_name, dtype, pass;
  std::int64_t in_nelems = -1, out_nelems = -1;
  std::int64_t stage = kNoNumber, chunk = kNoNumber, microbatch = kNoNumber;
};

// The SAX handler. Levels count open objects and arrays: the events are the objects inside
// the events array (at events_level_), their args one level deeper.
class Handler : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, Handler> {
 public:
  Handler(const RangeLabeller& labeller, const std::regex& iteration, TraceRecords& records)
      : labeller_(labeller), iteration_(iteration), records_(records) {}

  const std::string& error() const { return error_; }
  bool found_events() const { return events_level_ != 0; }

  bool StartObject() {
    if (++level_ > kMaxJsonDepth) return too_deep();
    if (in_events_ && level_ == events_level_ + 1) {
      event_ = Event{};
      event_.name.swap(name_buffer_);  // keeps the capacity
      event_.name.clear();
    } else if (in_devices_ && level_ == 3) {
      device_id_.reset();
      device_name_.clear();
    } else if (pending_ == Field::Args && in_events_ && level_ == events_level_ + 2) {
      in_args_ = true;
    } else if (expecting_events_) {
      return fail("\"traceEvents\" must be an array of events");
    }
    pending_ = Field::None;
    return true;
  }

  bool EndObject(rapidjson::SizeType) {
    if (in_events_ && level_ == events_level_ + 1) {
      if (!finish_event()) return false;
      name_buffer_.swap(event_.name);
    } else if (in_devices_ && level_ == 3 && device_id_) {
      records_.device_names[static_cast<std::int32_t>(*device_id_)] = device_name_;
    } else if (in_args_ && level_ == events_level_ + 2) {
      in_args_ = false;
    }
    --level_;
    return true;
  }

  bool StartArray() {
    if (++level_ > kMaxJsonDepth) return too_deep();
    if (level_ == 1) {  // a bare array of events
      top_is_array_ = true;
      events_level_ = 1;
      in_events_ = true;
    } else if (expecting_events_) {
      events_level_ = level_;
      in_events_ = true;
      expecting_events_ = false;
    } else if (level_ == 2 && top_key_ == TopKey::Devices) {
      in_devices_ = true;
    } else if (in_events_ && level_ == events_level_ + 1) {
      return fail("expected an event object in \"traceEvents\"");
    }
    pending_ = Field::None;
    return true;
  }

  bool EndArray(rapidjson::SizeType) {
    if (in_events_ && level_ == events_level_) in_events_ = false;
    if (in_devices_ && level_ == 2) in_devices_ = false;
    --level_;
    return true;
  }

  bool Key(const char* str, rapidjson::SizeType length, bool) {
    const std::string_view key(str, length);
    pending_ = Field::None;
    if (level_ == 1 && !top_is_array_) {
      top_key_ = is(key, "traceEvents")        ? TopKey::Events
                 : is(key, "deviceProperties") ? TopKey::Devices
                                               : TopKey::Other;
      expecting_events_ = top_key_ == TopKey::Events;
      if (expecting_events_ && events_level_ != 0) return fail("\"traceEvents\" appears twice");
    } else if (in_events_ && level_ == events_level_ + 1) {
      pending_ = is(key, "ph")     ? Field::Ph
                 : is(key, "cat")  ? Field::Cat
                 : is(key, "name") ? Field::Name
                 : is(key, "pid")  ? Field::Pid
                 : is(key, "tid")  ? Field::Tid
                 : is(key, "ts")   ? Field::Ts
                 : is(key, "dur")  ? Field::Dur
                 : is(key, "args") ? Field::Args
                                   : Field::None;
    } else if (in_args_ && level_ == events_level_ + 2) {
      pending_ = is(key, "correlation")       ? Field::Correlation
                 : is(key, "device")          ? Field::Device
                 : is(key, "Collective name") ? Field::CollectiveName
                 : is(key, "In msg nelems")   ? Field::InNelems
                 : is(key, "Out msg nelems")  ? Field::OutNelems
                 : is(key, "dtype")           ? Field::Dtype
                 : is(key, "stage")           ? Field::Stage
                 : is(key, "chunk")           ? Field::Chunk
                 : is(key, "microbatch")      ? Field::Microbatch
                 : is(key, "pass")            ? Field::Pass
                                              : Field::None;
    } else if (in_devices_ && level_ == 3) {
      pending_ = is(key, "id")     ? Field::DeviceId
                 : is(key, "name") ? Field::DeviceName
                                   : Field::None;
    }
    return true;
  }

  bool String(const char* str, rapidjson::SizeType length, bool) {
    if (!scalar()) return false;
    const std::string_view s(str, length);
    switch (std::exchange(pending_, Field::None)) {
      case Field::Ph:
        event_.complete = is(s, "X");
        break;
      case Field::Cat:
        event_.category = category_of(s);
        event_.has_category = true;
        break;
      case Field::Name:
        event_.name.assign(s);
        break;
      case Field::Pid:
        event_.pid = intern(s);
        break;
      case Field::Tid:
        event_.tid = intern(s);
        break;
      case Field::Ts:
      case Field::Dur:
        return fail("\"ts\" and \"dur\" must be numbers");
      case Field::CollectiveName:
        event_.collective_name.assign(s);
        break;
      case Field::Dtype:
        event_.dtype.assign(s);
        break;
      case Field::Pass:
        event_.pass.assign(s);
        break;
      case Field::DeviceName:
        device_name_.assign(s);
        break;
      default:
        break;
    }
    return true;
  }

  bool RawNumber(const char* str, rapidjson::SizeType length, bool) {
    if (!scalar()) return false;
    const std::string_view s(str, length);
    std::int64_t value = 0;
    const Field field = std::exchange(pending_, Field::None);
    switch (field) {
      case Field::Ts:
      case Field::Dur: {
        TimeNs ns = 0;
        if (!parse_us(s, ns)) return fail("time " + std::string(s) + " is out of range");
        (field == Field::Ts ? event_.ts_ns : event_.dur_ns) = ns;
        return true;
      }
      case Field::None:
        return true;
      default:
        break;
    }
    if (!parse_int(s, value)) return true;  // not an integer: not one of ours
    switch (field) {
      case Field::Pid:
        event_.pid = value;
        break;
      case Field::Tid:
        event_.tid = value;
        break;
      case Field::Correlation:
        event_.correlation = static_cast<std::uint64_t>(value);
        break;
      case Field::Device:
        event_.device = value;
        break;
      case Field::InNelems:
        event_.in_nelems = value;
        break;
      case Field::OutNelems:
        event_.out_nelems = value;
        break;
      case Field::Stage:
        event_.stage = value;
        break;
      case Field::Chunk:
        event_.chunk = value;
        break;
      case Field::Microbatch:
        event_.microbatch = value;
        break;
      case Field::DeviceId:
        device_id_ = value;
        break;
      default:
        break;
    }
    return true;
  }

  bool Default() { return scalar(); }  // null, booleans

 private:
  enum class TopKey : std::uint8_t { Other, Events, Devices };

  bool fail(std::string message) {
    error_ = std::move(message);
    return false;
  }

  bool too_deep() {
    return fail("objects and arrays nested more than " + std::to_string(kMaxJsonDepth) +
                " deep (a Chrome trace needs 4)");
  }

  // A scalar value: only its key's field may take it.
  bool scalar() {
    if (expecting_events_) return fail("\"traceEvents\" must be an array of events");
    if (in_events_ && level_ == events_level_) {
      return fail("expected an event object in \"traceEvents\"");
    }
    return true;
  }

  // A string id: its number when it is one ("0", as PiPPy's recorder writes), else a
  // negative id of its own.
  std::int64_t intern(std::string_view s) {
    if (std::int64_t value = 0; parse_int(s, value) && value >= 0) return value;
    const auto [it, fresh] =
        string_pids_.emplace(std::string(s), -1 - static_cast<std::int64_t>(string_pids_.size()));
    return it->second;
  }

  bool finish_event() {
    Event& e = event_;
    ++event_index_;
    // A complete event without "cat" counts only as a range of PiPPy's recorder, with times.
    if (e.complete && !e.has_category && e.ts_ns && e.dur_ns) e.category = Category::Recorder;
    if (!e.complete || e.category == Category::Other) return true;
    if (!e.ts_ns || !e.dur_ns) {
      return fail("event " + std::to_string(event_index_ - 1) + " ('" + e.name.substr(0, 80) +
                  "') has no \"ts\" or no \"dur\"");
    }
    if (*e.dur_ns < 0 || *e.dur_ns > kMaxDurationNs) {
      return fail("event " + std::to_string(event_index_ - 1) + " ('" + e.name.substr(0, 80) +
                  "') has a \"dur\" out of range (expected 0 to 1e12 us)");
    }
    TimeNs end = 0;
    if (__builtin_add_overflow(*e.ts_ns, *e.dur_ns, &end)) {
      return fail("event " + std::to_string(event_index_ - 1) + " ('" + e.name.substr(0, 80) +
                  "') ends after the largest time bubblesim represents (\"ts\" + \"dur\")");
    }
    const TimeNs start = *e.ts_ns;
    switch (e.category) {
      case Category::Kernel:
      case Category::Memcpy:
      case Category::Memset: {
        GpuOpType type = e.category == Category::Memcpy   ? GpuOpType::Memcpy
                         : e.category == Category::Memset ? GpuOpType::Memset
                                                          : GpuOpType::Kernel;
        if (type == GpuOpType::Kernel && is_nccl_kernel(e.name)) {
          type = GpuOpType::Nccl;
          const std::int64_t size = dtype_bytes(e.dtype);
          const auto bytes = [&](std::int64_t nelems) {
            return nelems >= 0 && size > 0 ? nelems * size : -1;
          };
          append(records_.nccl,
                 NcclKernel{static_cast<std::uint32_t>(records_.ops.size()),
                            collective_of_kernel(e.name), collective_of_text(e.collective_name),
                            Collective::Unknown, bytes(e.in_nelems), bytes(e.out_nelems)});
        }
        append(records_.ops, GpuOp{start, *e.dur_ns, e.correlation,
                                   static_cast<std::int32_t>(e.device.value_or(e.pid)), type});
        break;
      }
      case Category::Runtime:
        if (e.correlation != kNoCorrelation && (e.name.find("Launch") != std::string::npos ||
                                                e.name.find("Memcpy") != std::string::npos ||
                                                e.name.find("Memset") != std::string::npos)) {
          append(records_.launches, Launch{e.correlation, start, e.pid});
        }
        break;
      case Category::Annotation:
        if (e.name.compare(0, 5, "nccl:") == 0) {
          append(records_.nccl_ranges, Range{start, end, e.pid, {}, collective_of_text(e.name)});
        } else if (const auto label = label_of(e.name)) {
          append(records_.cpu_ranges, Range{start, end, e.pid, *label, Collective::Unknown});
        } else if (is_boundary(e.name)) {
          append(records_.boundaries, start);
        }
        break;
      case Category::Recorder:
        if (const auto label = label_of(e.name)) {
          append(records_.cpu_ranges, Range{start, end, e.pid, *label, Collective::Unknown, e.tid});
        }
        break;
      case Category::GpuAnnotation:
        if (const auto label = label_of(e.name)) {
          append(records_.gpu_ranges, Range{start, end, e.pid, *label, Collective::Unknown});
        }
        break;
      case Category::BubblesimOp: {
        const std::optional<sim::OpKind> pass = pass_of(e.pass);
        if (!pass) {
          return fail("bubblesim op " + e.name + " has pass '" + e.pass +
                      "' (expected F, B, W or BW)");
        }
        for (const std::int64_t n : {e.stage, e.microbatch, e.chunk}) {
          if (n < kNoNumber || n > kMaxLabelNumber) {
            return fail("bubblesim op " + e.name + " has a stage, microbatch or chunk of " +
                        std::to_string(n) + " (expected 0 to " + std::to_string(kMaxLabelNumber) +
                        ")");
          }
        }
        const RangeLabel label{*pass, static_cast<std::int32_t>(e.stage),
                               static_cast<std::int32_t>(e.microbatch),
                               static_cast<std::int32_t>(e.chunk)};
        append(records_.direct, PassSample{label, 0, e.pid, start, end, *e.dur_ns, 1});
        break;
      }
      case Category::Other:
        break;
    }
    return true;
  }

  // The labeller, through a cache: range names repeat.
  std::optional<RangeLabel> label_of(const std::string& name) {
    const auto it = labels_.find(name);
    if (it != labels_.end()) return it->second;
    return labels_.emplace(name, labeller_.label(name)).first->second;
  }

  // Whether a range starts an iteration, through a cache.
  bool is_boundary(const std::string& name) {
    const auto it = boundaries_.find(name);
    if (it != boundaries_.end()) return it->second;
    return boundaries_.emplace(name, std::regex_match(name, iteration_)).first->second;
  }

  const RangeLabeller& labeller_;
  const std::regex& iteration_;
  TraceRecords& records_;
  std::string error_;
  int level_ = 0;
  int events_level_ = 0;  // level of the events array; 0 until found
  bool top_is_array_ = false;
  bool expecting_events_ = false;  // after the key "traceEvents"
  bool in_events_ = false;         // inside the events array (at any depth)
  bool in_args_ = false;
  bool in_devices_ = false;
  TopKey top_key_ = TopKey::Other;
  Field pending_ = Field::None;
  Event event_;
  std::string name_buffer_;
  std::size_t event_index_ = 0;
  std::optional<std::int64_t> device_id_;
  std::string device_name_;
  std::unordered_map<std::string, std::int64_t> string_pids_;
  std::unordered_map<std::string, std::optional<RangeLabel>> labels_;
  std::unordered_map<std::string, bool> boundaries_;
};

}  // namespace

void read_trace(const std::string& path, const RangeLabeller& labeller, const std::regex& iteration,
                TraceRecords& records) {
  InflatingStream stream(path);
  Handler handler(labeller, iteration, records);
  rapidjson::Reader reader;
  const rapidjson::ParseResult result =
      reader.Parse<rapidjson::kParseNumbersAsStringsFlag>(stream, handler);
  if (result.IsError()) {
    const std::string why =
        !handler.error().empty()
            ? handler.error()
            : std::string("not valid JSON: ") + rapidjson::GetParseError_En(result.Code());
    throw TraceFormatError(stream.at(result.Offset()) + ": " + why);
  }
  if (!handler.found_events()) {
    throw TraceFormatError(stream.at(stream.Tell()) +
                           ": not a Chrome trace: no \"traceEvents\" array of events");
  }
}

}  // namespace bubblesim::traces
