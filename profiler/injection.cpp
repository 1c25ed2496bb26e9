// libbubblesim_cupti.so: the CUPTI tracer injected into unmodified CUDA processes.
//
// Entry points (all extern "C"):
// - InitializeInjection: called by the CUDA driver at cuInit when CUDA_INJECTION64_PATH names
//   this library. Sets up CUPTI; always returns 1 (the driver's init must never fail because of
//   the profiler); on any CUPTI error it logs one line to stderr, disables itself and returns.
// - InitializeInjectionNvtx2: called by NVTX (NVTX_INJECTION64_PATH) on the first NVTX call of
//   each NVTX instance; hooks push/pop, start/end, domains and registered strings.
// - bubblesim_profiler_flush(): flushes CUPTI and writes the file now (for ctypes).
// - bubblesim_profiler_status(): "ok", "not initialised" or "disabled: <why>".
//
// Process-global state: an injected library has no owner that could hold it, so this file
// holds the one instance (created on first use, never destroyed: atexit handlers and CUPTI
// threads may still use it while static destructors run). Everything else is in the
// CUDA-independent classes it drives (collector.h, buffer_pool.h, chrome_writer.h).
//
// Environment (read once):
//   BUBBLESIM_PROFILE_DIR          output folder (default "."); the file is
//                                  bubblesim-profile.rank<RANK>.pid<PID>.json
//   BUBBLESIM_PROFILE_LABEL_REGEX  a --label-regex (traces/labels.h); default
//   PP:<stage><F|I|W|B><mb> BUBBLESIM_PROFILE_FLUSH_STEPS  write the file every N steps (ranges
//   named STEP_PREFIX*) BUBBLESIM_PROFILE_STEP_PREFIX  default "step"
//   BUBBLESIM_PROFILE_FLUSH_SIGNAL a signal number (e.g. 10 for SIGUSR1): write the file on it
//   BUBBLESIM_PROFILE_BUFFERS, BUBBLESIM_PROFILE_BUFFER_MB   host buffer pool (32 x 4 MiB)
//   BUBBLESIM_PROFILE_DEVICE_BUFFER_MB  CUPTI device buffer (32 MiB)
//   BUBBLESIM_PROFILE_EXIT_TIMEOUT_S    bound on the flush at exit (10 s)
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>
#include <poll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "profiler/buffer_pool.h"
#include "profiler/chrome_writer.h"
#include "profiler/collector.h"
#include "profiler/cupti_decode.h"
#include "profiler/nccl_payload.h"

namespace bubblesim::profiler {
namespace {

std::uint32_t this_thread() {
  thread_local const auto tid = static_cast<std::uint32_t>(::syscall(SYS_gettid));
  return tid;
}

std::int64_t clock_ns(clockid_t id) {
  timespec t{};
  clock_gettime(id, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

std::int64_t now_ns() {
  std::uint64_t ts = 0;
  if (cuptiGetTimestamp(&ts) != CUPTI_SUCCESS) return clock_ns(CLOCK_REALTIME);
  return static_cast<std::int64_t>(ts);
}

std::int64_t env_int(const char* name, std::int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  return end != nullptr && *end == '\0' && x >= 0 ? x : fallback;
}

std::string env_string(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

void log_line(const std::string& line) {
  const std::string text = "bubblesim-profiler[" + std::to_string(getpid()) + "]: " + line + "\n";
  [[maybe_unused]] const auto n = ::write(STDERR_FILENO, text.data(), text.size());
}

std::string cupti_error(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s != nullptr ? s : "CUPTI error " + std::to_string(static_cast<int>(r));
}

struct NvtxDomain {
  std::string name;
  bool nccl = false;
};

// Resolved at write time from whatever the process has loaded (never linked: the library must
// load where libcuda, libcudart or NCCL are absent): the global scope first, then `library`
// (a soname) if the process has loaded it. libcudart loads libcuda with RTLD_LOCAL, and Python
// loads PyTorch's extensions (and the NCCL they link) the same way, so their symbols are not
// in the global scope: on an H200 under CUDA 13.0 the driver's were missing from every file
// (no device names, driver version 0) until the library's own handle was asked.
template <class F>
F loaded(const char* symbol, const char* library) {
  if (void* f = dlsym(RTLD_DEFAULT, symbol)) return reinterpret_cast<F>(f);
  void* handle = dlopen(library, RTLD_NOW | RTLD_NOLOAD);  // never loads it
  if (handle == nullptr) return nullptr;
  void* f = dlsym(handle, symbol);
  dlclose(handle);  // drops the reference NOLOAD took; the library stays loaded
  return reinterpret_cast<F>(f);
}
constexpr const char* kDriver = "libcuda.so.1";

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                         CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2,
                                         CUPTI_ACTIVITY_KIND_MEMSET};

class Injection {
 public:
  Injection()
      : collector_(make_labeller(),
                   CollectorOptions{
                       env_string("BUBBLESIM_PROFILE_STEP_PREFIX", "step"),
                       static_cast<std::uint64_t>(env_int("BUBBLESIM_PROFILE_FLUSH_STEPS", 0))}),
        dir_(env_string("BUBBLESIM_PROFILE_DIR", ".")) {
    header_.pid = getpid();
    header_.rank = static_cast<std::int32_t>(env_int("RANK", -1));
    header_.local_rank = static_cast<std::int32_t>(env_int("LOCAL_RANK", -1));
    header_.world_size = static_cast<std::int32_t>(env_int("WORLD_SIZE", -1));
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    header_.hostname = host;
    header_.built_cuda_version = CUDA_VERSION;
    header_.clock_start = clocks();
    header_.status = "not initialised";
    start_flusher();
  }

  Collector& collector() { return collector_; }
  bool active() const { return active_.load(std::memory_order_acquire); }

  // InitializeInjection's work. Returns 1 always.
  int initialize_cuda() {
    const std::lock_guard lock(init_mutex_);
    if (cuda_initialised_) return 1;
    cuda_initialised_ = true;
    std::atexit([] { instance().at_exit(); });
    cuptiGetVersion(&header_.cupti_api_version);
    const auto check = [&](CUptiResult r, const char* what) {
      if (r == CUPTI_SUCCESS) return true;
      disable(std::string(what) + ": " + cupti_error(r));
      return false;
    };
    // The host buffers: allocated (and zeroed) here, once, not in the processes that only
    // load the library for NVTX.
    pool_ = std::make_unique<BufferPool>(
        static_cast<std::size_t>(env_int("BUBBLESIM_PROFILE_BUFFERS", 32)),
        static_cast<std::size_t>(env_int("BUBBLESIM_PROFILE_BUFFER_MB", 4)) << 20);
    std::size_t device_bytes =
        static_cast<std::size_t>(env_int("BUBBLESIM_PROFILE_DEVICE_BUFFER_MB", 32)) << 20;
    std::size_t one = 1;
    std::size_t size = sizeof(std::size_t);
    // Tuning only: a failure is logged and collection goes on with CUPTI's defaults.
    const auto tune = [&](CUpti_ActivityAttribute attribute, std::size_t* value, const char* name) {
      const CUptiResult r = cuptiActivitySetAttribute(attribute, &size, value);
      if (r != CUPTI_SUCCESS) {
        log_line(std::string("cuptiActivitySetAttribute(") + name + "): " + cupti_error(r) +
                 "; continuing with CUPTI's default");
      }
    };
    tune(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &device_bytes, "DEVICE_BUFFER_SIZE");
    tune(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &one, "ZEROED_OUT_ACTIVITY_BUFFER");
    if (!check(cuptiActivityRegisterCallbacks(&request_buffer, &complete_buffer),
               "cuptiActivityRegisterCallbacks")) {
      return 1;
    }
    char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {};
    CUpti_SubscriberParams params{};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "bubblesim-profiler";
    params.oldSubscriberName = other;
    params.oldSubscriberSize = sizeof other - 1;
    const CUptiResult sub = cuptiSubscribe_v2(&subscriber_, &on_callback, nullptr, &params);
    if (sub == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
      disable(std::string("another CUPTI subscriber holds this process (") +
              (other[0] != '\0' ? other : "unknown") + "): " + cupti_error(sub));
      return 1;
    }
    if (!check(sub, "cuptiSubscribe_v2")) return 1;
    subscribed_ = true;
    // Launch callbacks: every runtime and driver function that launches a kernel, a graph, a
    // memcpy or a memset, by name.
    for (const auto& [domain, count] :
         {std::pair{CUPTI_CB_DOMAIN_RUNTIME_API, std::uint32_t{CUPTI_RUNTIME_TRACE_CBID_SIZE}},
          std::pair{CUPTI_CB_DOMAIN_DRIVER_API, std::uint32_t{CUPTI_DRIVER_TRACE_CBID_SIZE}}}) {
      auto& table = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? runtime_api_ : driver_api_;
      table.assign(count, 0);
      for (std::uint32_t cbid = 1; cbid < count; ++cbid) {
        const char* name = nullptr;
        if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) {
          continue;
        }
        const std::optional<LaunchApi> api = launch_api_of(name);
        if (!api) continue;
        table[cbid] = static_cast<std::uint8_t>(static_cast<int>(*api) + 1);
        if (!check(cuptiEnableCallback(1, subscriber_, domain, cbid), "cuptiEnableCallback")) {
          return 1;
        }
      }
    }
    if (!check(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE,
                                   CUPTI_CBID_RESOURCE_CONTEXT_CREATED),
               "cuptiEnableCallback(CONTEXT_CREATED)")) {
      return 1;
    }
    for (const CUpti_ActivityKind kind : kKinds) {
      if (!check(cuptiActivityEnable(kind), "cuptiActivityEnable")) return 1;
      ++enabled_kinds_;
    }
    header_.status = "ok";
    active_.store(true, std::memory_order_release);
    return 1;
  }

  // Logs once, stops CUPTI collection; the host process continues.
  void disable(const std::string& why) {
    bool expected = false;
    if (!disabled_.compare_exchange_strong(expected, true)) return;
    active_.store(false, std::memory_order_release);
    Counters c;
    c.cupti_errors = 1;
    collector_.add_counters(c);
    {
      const std::lock_guard lock(header_mutex_);
      header_.status = "disabled: " + why;
    }
    log_line(why + "; profiling disabled, the process continues");
    for (int i = 0; i < enabled_kinds_; ++i)
      cuptiActivityDisable(kKinds[i]);
    if (subscribed_) cuptiUnsubscribe(subscriber_);
    subscribed_ = false;
  }

  std::string status() {
    const std::lock_guard lock(header_mutex_);
    return header_.status;
  }

  // Flushes CUPTI's buffers (forced) and rewrites the file. `timeout_s` bounds the wait for
  // CUPTI (0: no bound); past it the file gets what arrived so far.
  void flush(int timeout_s) {
    const std::lock_guard lock(flush_mutex_);
    if (active()) {
      auto task = std::make_shared<std::packaged_task<void()>>([] {
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        std::size_t dropped = 0;
        if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) {
          Counters c;
          c.dropped_records = dropped;
          instance().collector().add_counters(c);
        }
      });
      std::future<void> done = task->get_future();
      std::thread([task] { (*task)(); }).detach();
      if (timeout_s > 0 &&
          done.wait_for(std::chrono::seconds(timeout_s)) == std::future_status::timeout) {
        log_line("CUPTI flush did not return within " + std::to_string(timeout_s) +
                 " s; writing the records that arrived");
      } else {
        done.wait();
      }
    }
    write_file();
  }

  void request_flush() {
    const char byte = 1;
    if (flush_pipe_[1] < 0) return;
    [[maybe_unused]] const auto n = ::write(flush_pipe_[1], &byte, 1);
  }

  static Injection& instance() {
    static Injection* const injection = new Injection();  // never destroyed (see the top)
    return *injection;
  }

  // NVTX registered strings and domains live as long as the process.
  const std::string* intern(const char* text) {
    const std::lock_guard lock(strings_mutex_);
    return &strings_.emplace_back(text != nullptr ? text : "");
  }
  NvtxDomain* domain(const char* name) {
    const std::lock_guard lock(strings_mutex_);
    NvtxDomain& d = domains_.emplace_back();
    d.name = name != nullptr ? name : "";
    d.nccl = d.name == "NCCL";
    return &d;
  }

  void on_context_created() {
    const std::lock_guard lock(header_mutex_);
    if (!header_.devices.empty()) return;
    using GetCount = CUresult (*)(int*);
    using Get = CUresult (*)(CUdevice*, int);
    using GetName = CUresult (*)(char*, int, CUdevice);
    const auto get_count = loaded<GetCount>("cuDeviceGetCount", kDriver);
    const auto get = loaded<Get>("cuDeviceGet", kDriver);
    const auto get_name = loaded<GetName>("cuDeviceGetName", kDriver);
    int count = 0;
    if (get_count == nullptr || get == nullptr || get_name == nullptr || get_count(&count) != 0) {
      return;
    }
    for (int i = 0; i < count; ++i) {
      CUdevice device{};
      char name[256] = {};
      if (get(&device, i) == 0 && get_name(name, sizeof name - 1, device) == 0) {
        header_.devices.push_back(DeviceName{static_cast<std::uint32_t>(i), name});
      }
    }
  }

  LaunchApi* api_of(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, LaunchApi& api) const {
    const auto& table = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? runtime_api_ : driver_api_;
    if (cbid >= table.size() || table[cbid] == 0) return nullptr;
    api = static_cast<LaunchApi>(table[cbid] - 1);
    return &api;
  }

 private:
  static std::unique_ptr<traces::RangeLabeller> make_labeller() {
    const char* regex = std::getenv("BUBBLESIM_PROFILE_LABEL_REGEX");
    if (regex != nullptr && *regex != '\0') {
      try {
        return std::make_unique<traces::RegexLabeller>(regex);
      } catch (const std::exception& e) {
        log_line(std::string("BUBBLESIM_PROFILE_LABEL_REGEX: ") + e.what() +
                 "; using the PP:<stage><pass><microbatch> labels");
      }
    }
    return std::make_unique<traces::PipeliningLabeller>();
  }

  static ClockTriple clocks() {
    return ClockTriple{now_ns(), clock_ns(CLOCK_REALTIME), clock_ns(CLOCK_MONOTONIC)};
  }

  void at_exit() {
    if (active()) {
      for (int i = 0; i < enabled_kinds_; ++i)
        cuptiActivityDisable(kKinds[i]);
    }
    flush(static_cast<int>(env_int("BUBBLESIM_PROFILE_EXIT_TIMEOUT_S", 10)));
  }

  void write_file() {
    // A child forked after the library loaded inherits the records and the atexit handler:
    // the file is its parent's to write.
    if (getpid() != header_.pid) return;
    CaptureHeader header;
    {
      const std::lock_guard lock(header_mutex_);
      header = header_;
    }
    header.clock_end = clocks();
    using Version = int (*)(int*);
    if (const auto f = loaded<Version>("cudaRuntimeGetVersion", "libcudart.so.13"))
      f(&header.cuda_runtime_version);
    if (const auto f = loaded<Version>("cuDriverGetVersion", kDriver))
      f(&header.cuda_driver_version);
    if (const auto f = loaded<Version>("ncclGetVersion", "libnccl.so.2")) f(&header.nccl_version);
    Capture capture = collector_.snapshot(header.clock_end.cupti_ns);
    capture.header = header;
    if (pool_) capture.counters.pool_exhausted = pool_->stats().exhausted;
    const std::string path = dir_ + "/" + profile_file_name(header);
    try {
      write_chrome_trace_file(capture, path);
      if (!wrote_once_.exchange(true)) log_line("writing " + path);
    } catch (const std::exception& e) {
      log_line(e.what());
    }
  }

  void start_flusher() {
    if (::pipe2(flush_pipe_, O_CLOEXEC) != 0) {
      flush_pipe_[0] = flush_pipe_[1] = -1;
      return;
    }
    const std::int64_t signal = env_int("BUBBLESIM_PROFILE_FLUSH_SIGNAL", 0);
    if (signal > 0 && signal < NSIG) {
      flush_signal_fd_ = flush_pipe_[1];
      struct sigaction action {};
      action.sa_handler = [](int) {
        const char byte = 1;
        [[maybe_unused]] auto n = ::write(flush_signal_fd_, &byte, 1);
      };
      sigemptyset(&action.sa_mask);
      action.sa_flags = SA_RESTART;
      sigaction(static_cast<int>(signal), &action, nullptr);
    }
    const int fd = flush_pipe_[0];
    std::thread([fd] {
      char byte = 0;
      for (;;) {
        const auto n = ::read(fd, &byte, 1);
        if (n == 1) {
          instance().flush(0);
        } else if (n < 0 && errno == EINTR) {
          continue;
        } else {
          return;
        }
      }
    }).detach();
  }

  Collector collector_;
  std::unique_ptr<BufferPool> pool_;
  std::string dir_;
  std::mutex init_mutex_, header_mutex_, flush_mutex_, strings_mutex_;
  CaptureHeader header_;
  bool cuda_initialised_ = false;
  std::atomic<bool> active_{false}, disabled_{false}, wrote_once_{false};
  bool subscribed_ = false;
  int enabled_kinds_ = 0;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  std::vector<std::uint8_t> runtime_api_, driver_api_;  // cbid -> 1 + LaunchApi; 0: none
  std::deque<std::string> strings_;
  std::deque<NvtxDomain> domains_;
  int flush_pipe_[2] = {-1, -1};
  static inline volatile int flush_signal_fd_ = -1;

  static void CUPTIAPI request_buffer(std::uint8_t** buffer, std::size_t* size,
                                      std::size_t* max_records) {
    Injection& self = instance();
    *buffer = self.pool_->acquire();
    *size = *buffer != nullptr ? self.pool_->buffer_bytes() : 0;
    *max_records = 0;
  }

  static void CUPTIAPI complete_buffer(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                                       std::size_t valid) {
    Injection& self = instance();
    try {
      self.collector_.add_records(decode_activity_buffer(buffer, valid));
    } catch (const std::exception& e) {
      self.disable(std::string("decoding an activity buffer: ") + e.what());
    }
    self.pool_->release(buffer, valid);
  }

  static void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                   const void* data) {
    Injection& self = instance();
    if (!self.active()) return;
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
      if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) self.on_context_created();
      return;
    }
    const auto* cb = static_cast<const CUpti_CallbackData*>(data);
    LaunchApi api{};
    if (cb->callbackSite != CUPTI_API_ENTER || self.api_of(domain, cbid, api) == nullptr) return;
    try {
      self.collector_.launch(this_thread(), cb->correlationId, api, now_ns());
    } catch (const std::exception& e) {
      self.disable(std::string("recording a launch: ") + e.what());
    }
  }
};

// --- NVTX hooks -----------------------------------------------------------------------------

std::string message_of(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return {};
  if (a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii != nullptr) {
    return a->message.ascii;
  }
  if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED && a->message.registered != nullptr) {
    return *reinterpret_cast<const std::string*>(a->message.registered);
  }
  return {};
}

std::optional<NcclCall> nccl_call_of(const std::string& function, const nvtxEventAttributes_t* a) {
  if (a == nullptr || a->payloadType != NVTX_PAYLOAD_TYPE_EXT || a->reserved0 < 1) return {};
  const auto* data =
      reinterpret_cast<const nvtxPayloadData_t*>(static_cast<std::uintptr_t>(a->payload.ullValue));
  if (data == nullptr) return {};
  return decode_nccl_payload(function, data->schemaId, data->payload, data->size);
}

// The hooks never throw into the application: NVTX calls come from any code.
template <class F>
void guarded(F f) {
  try {
    f();
  } catch (...) {
  }
}

int NVTX_API push_a(const char* message) {
  guarded([&] {
    Injection::instance().collector().range_push(this_thread(), message ? message : "", now_ns());
  });
  return 0;
}
int NVTX_API push_ex(const nvtxEventAttributes_t* a) {
  guarded([&] {
    Injection::instance().collector().range_push(this_thread(), message_of(a), now_ns());
  });
  return 0;
}
int NVTX_API pop() {
  guarded([&] {
    Injection& self = Injection::instance();
    if (self.collector().range_pop(this_thread(), now_ns())) self.request_flush();
  });
  return 0;
}
nvtxRangeId_t NVTX_API start_a(const char* message) {
  nvtxRangeId_t id = 0;
  guarded([&] {
    id = Injection::instance().collector().range_start(this_thread(), message ? message : "",
                                                       now_ns());
  });
  return id;
}
nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t* a) {
  nvtxRangeId_t id = 0;
  guarded([&] {
    id = Injection::instance().collector().range_start(this_thread(), message_of(a), now_ns());
  });
  return id;
}
void NVTX_API end(nvtxRangeId_t id) {
  guarded([&] {
    Injection& self = Injection::instance();
    if (self.collector().range_end(id, now_ns())) self.request_flush();
  });
}
nvtxDomainHandle_t NVTX_API domain_create_a(const char* name) {
  NvtxDomain* d = nullptr;
  guarded([&] { d = Injection::instance().domain(name); });
  return reinterpret_cast<nvtxDomainHandle_t>(d);
}
void NVTX_API domain_destroy(nvtxDomainHandle_t) {}
nvtxStringHandle_t NVTX_API register_string_a(nvtxDomainHandle_t, const char* text) {
  const std::string* s = nullptr;
  guarded([&] { s = Injection::instance().intern(text); });
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<std::string*>(s));
}
bool is_nccl(nvtxDomainHandle_t d) {
  return d != nullptr && reinterpret_cast<const NvtxDomain*>(d)->nccl;
}
int NVTX_API domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  guarded([&] {
    Collector& c = Injection::instance().collector();
    const std::string name = message_of(a);
    if (is_nccl(d)) {
      c.nccl_push(this_thread(), name, nccl_call_of(name, a));
    } else {
      c.range_push(this_thread(), name, now_ns());
    }
  });
  return 0;
}
int NVTX_API domain_pop(nvtxDomainHandle_t d) {
  guarded([&] {
    Injection& self = Injection::instance();
    if (is_nccl(d)) {
      self.collector().nccl_pop(this_thread());
    } else if (self.collector().range_pop(this_thread(), now_ns())) {
      self.request_flush();
    }
  });
  return 0;
}
nvtxRangeId_t NVTX_API domain_start_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) {
  return start_ex(a);
}
void NVTX_API domain_end(nvtxDomainHandle_t, nvtxRangeId_t id) {
  end(id);
}

template <class F>
void hook(NvtxFunctionTable table, unsigned size, unsigned slot, F function) {
  if (table != nullptr && slot < size && table[slot] != nullptr) {
    *table[slot] = reinterpret_cast<NvtxFunctionPointer>(function);
  }
}

}  // namespace
}  // namespace bubblesim::profiler

using bubblesim::profiler::Injection;

extern "C" {

__attribute__((visibility("default"))) int InitializeInjection(void) {
  try {
    return Injection::instance().initialize_cuda();
  } catch (const std::exception& e) {
    bubblesim::profiler::log_line(std::string("initialisation failed: ") + e.what() +
                                  "; profiling disabled, the process continues");
  } catch (...) {
  }
  return 1;
}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  using namespace bubblesim::profiler;
  try {
    const auto* callbacks =
        static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
    if (callbacks == nullptr) return 0;
    NvtxFunctionTable core = nullptr, core2 = nullptr;
    unsigned core_size = 0, core2_size = 0;
    if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) == 0 ||
        callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size) == 0) {
      return 0;
    }
    Injection::instance();  // reads the environment before the first range
    hook(core, core_size, NVTX_CBID_CORE_RangePushA, &push_a);
    hook(core, core_size, NVTX_CBID_CORE_RangePushEx, &push_ex);
    hook(core, core_size, NVTX_CBID_CORE_RangePop, &pop);
    hook(core, core_size, NVTX_CBID_CORE_RangeStartA, &start_a);
    hook(core, core_size, NVTX_CBID_CORE_RangeStartEx, &start_ex);
    hook(core, core_size, NVTX_CBID_CORE_RangeEnd, &end);
    hook(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, &domain_create_a);
    hook(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, &domain_destroy);
    hook(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, &register_string_a);
    hook(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, &domain_push_ex);
    hook(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, &domain_pop);
    hook(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, &domain_start_ex);
    hook(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, &domain_end);
    return 1;
  } catch (...) {
    return 0;
  }
}

__attribute__((visibility("default"))) void bubblesim_profiler_flush(void) {
  try {
    Injection::instance().flush(0);
  } catch (...) {
  }
}

__attribute__((visibility("default"))) const char* bubblesim_profiler_status(void) {
  thread_local std::string status;
  try {
    status = Injection::instance().status();
  } catch (...) {
    status = "unknown";
  }
  return status.c_str();
}

}  // extern "C"
