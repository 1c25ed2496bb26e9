// bubblesim_cupti_probe: a host process for the injection tests (injection_test.cpp), run as a
// child so that libcupti's state never enters the test process.
//   cupti_probe dlopen LIB  dlopens LIB, calls InitializeInjection as the CUDA driver would,
//                           prints its return value and the library's status, flushes, and
//                           prints "host continues" (exit 0) when control came back.
//   cupti_probe nvtx LIB    NVTX ranges from two threads and the NCCL domain (run with
//                           NVTX_INJECTION64_PATH=LIB), then the library's flush.
//   cupti_probe steps       (NVTX injected, BUBBLESIM_PROFILE_FLUSH_STEPS=1) a pass range and a
//                           step range; waits for the file, then _exits (no atexit write).
//   cupti_probe signal      (NVTX injected, BUBBLESIM_PROFILE_FLUSH_SIGNAL=10) a pass range,
//                           then raises SIGUSR1; waits for the file, then _exits.
//   cupti_probe devices     exit 0 when libcuda finds a device, 77 otherwise.
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

namespace {

int fail(const std::string& what) {
  std::printf("probe: %s\n", what.c_str());
  return 1;
}

int run_dlopen(const char* lib) {
  void* handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return fail(std::string("dlopen: ") + dlerror());
  using Init = int (*)();
  using Status = const char* (*)();
  using Flush = void (*)();
  const auto init = reinterpret_cast<Init>(dlsym(handle, "InitializeInjection"));
  const auto status = reinterpret_cast<Status>(dlsym(handle, "bubblesim_profiler_status"));
  const auto flush = reinterpret_cast<Flush>(dlsym(handle, "bubblesim_profiler_flush"));
  if (init == nullptr || status == nullptr || flush == nullptr) return fail("missing symbols");
  std::printf("InitializeInjection returned %d\n", init());
  std::printf("second call returned %d\n", init());
  std::printf("status: %s\n", status());
  flush();
  std::printf("host continues\n");
  std::fflush(stdout);
  return 0;
}

int run_nvtx(const char* lib) {
  nvtxRangePushA("PP:1F2");
  std::thread autograd([] {
    const nvtxRangeId_t id = nvtxRangeStartA("PP:1W0");
    nvtxRangePushA("aten::mm");
    nvtxRangePop();
    nvtxRangeEnd(id);
  });
  autograd.join();
  const nvtxDomainHandle_t nccl = nvtxDomainCreateA("NCCL");
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = nvtxDomainRegisterStringA(nccl, "ncclSend");
  nvtxDomainRangePushEx(nccl, &a);
  nvtxDomainRangePop(nccl);
  nvtxRangePop();
  nvtxRangePushA("PP:1F3");  // still open at the flush
  void* handle = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return fail("the library was not injected through NVTX");
  const auto flush = reinterpret_cast<void (*)()>(dlsym(handle, "bubblesim_profiler_flush"));
  if (flush == nullptr) return fail("missing bubblesim_profiler_flush");
  flush();
  std::printf("flushed\n");
  return 0;
}

// Waits up to 20 s for a profile file in $BUBBLESIM_PROFILE_DIR; then leaves without atexit.
int wait_for_file(const char* what) {
  const char* dir = std::getenv("BUBBLESIM_PROFILE_DIR");
  if (dir == nullptr) return fail("BUBBLESIM_PROFILE_DIR is not set");
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < until) {
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().extension() == ".json") {
        std::printf("written %s\n", what);
        std::fflush(stdout);
        _exit(0);
      }
    }
    usleep(10000);
  }
  return fail(std::string("no file written ") + what);
}

int run_steps() {
  nvtxRangePushA("PP:0F0");
  nvtxRangePop();
  nvtxRangePushA("step0");
  nvtxRangePop();
  return wait_for_file("after a step");
}

int run_signal() {
  nvtxRangePushA("PP:0F0");
  nvtxRangePop();
  std::raise(SIGUSR1);
  return wait_for_file("on the signal");
}

int run_devices() {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (cuda == nullptr) return 77;
  using CuInit = int (*)(unsigned);
  using CuCount = int (*)(int*);
  const auto cu_init = reinterpret_cast<CuInit>(dlsym(cuda, "cuInit"));
  const auto cu_count = reinterpret_cast<CuCount>(dlsym(cuda, "cuDeviceGetCount"));
  int count = 0;
  if (cu_init == nullptr || cu_count == nullptr || cu_init(0) != 0 || cu_count(&count) != 0) {
    return 77;
  }
  return count > 0 ? 0 : 77;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "dlopen") == 0) return run_dlopen(argv[2]);
  if (argc == 3 && std::strcmp(argv[1], "nvtx") == 0) return run_nvtx(argv[2]);
  if (argc == 2 && std::strcmp(argv[1], "devices") == 0) return run_devices();
  if (argc == 2 && std::strcmp(argv[1], "steps") == 0) return run_steps();
  if (argc == 2 && std::strcmp(argv[1], "signal") == 0) return run_signal();
  std::fprintf(stderr,
               "usage: bubblesim_cupti_probe dlopen LIB | nvtx LIB | steps | signal | devices\n");
  return 2;
}
