// bubblesim-workload: F, B (input gradient) and W (weight gradient) of a GPT-style transformer
// layer stack with cuBLAS GEMMs, one pipeline stage per GPU, NVTX-labelled PP:<stage><F|I|W><mb>
// (the labels of PyTorch's pipelining runtime that `bubblesim import` reads), with NCCL
// send/recv of activations and gradients between neighbouring stages when --gpus is above 1.
// Run it under `bubblesim profile` to get a profile of this GPU for `bubblesim simulate`.
//
// Per layer and microbatch of T = micro-batch x sequence tokens and hidden size H, four GEMMs
// with the shapes and FLOPs of a GPT layer's matrix products: QKV (T x H x 3H), attention output
// (T x H x H), MLP up (T x H x 4H) and down (T x 4H x H). F runs them forward; B runs each
// product's input gradient (T x N x K for a K -> N product), W its weight gradient (K x T x N),
// as in the zero-bubble split. The operand values are not a trained model's: only the shapes,
// hence the time, matter. Attention's softmax and the elementwise kernels are not modelled.
//
// Stages are processes (forked before CUDA is touched, RANK/LOCAL_RANK/WORLD_SIZE set, the
// NCCL id passed through pipes), as torchrun ranks are: the profiler labels launches per
// process. The schedule per step: F of every microbatch, then B and W of each microbatch (GPipe
// order, W right after B). Each step is an NVTX range "step<k>", which the profiler counts for
// BUBBLESIM_PROFILE_FLUSH_STEPS. Stage 0 prints each step's time and the mean after the warm-up
// steps: run with and without the profiler to measure its overhead.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#ifdef BUBBLESIM_HAVE_NCCL
#include <nccl.h>
#endif

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Options {
  int layers = 4;  // per stage
  int hidden = 2048;
  int seq = 1024;
  int micro_batch = 1;
  int microbatches = 8;
  int steps = 5;
  int warmup = 1;
  int gpus = 1;  // stages, one GPU and one process each
};

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "bubblesim-workload: %s\n", what.c_str());
  std::exit(1);
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail(std::string(what) + ": " + cudaGetErrorString(e));
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) fail(std::string(what) + ": cuBLAS status " + std::to_string(s));
}
#ifdef BUBBLESIM_HAVE_NCCL
void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) fail(std::string(what) + ": " + ncclGetErrorString(r));
}
#endif

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf(
          "usage: bubblesim-workload [--layers N] [--hidden H] [--seq S] [--micro-batch B]\n"
          "                          [--microbatches M] [--steps N] [--warmup N] [--gpus G]\n"
          "defaults: 4 layers, hidden 2048, seq 1024, micro-batch 1, 8 microbatches, 5 steps\n"
          "after 1 warm-up step, 1 GPU (G GPUs: G stages, one process each, NCCL between)\n");
      std::exit(0);
    }
    if (i + 1 >= argc) fail("option " + a + " needs a value");
    char* end = nullptr;
    const long v = std::strtol(argv[i + 1], &end, 10);
    if (*end != '\0' || v < 0 || v > (1 << 20)) fail("option " + a + ": expected a count");
    const int n = static_cast<int>(v);
    ++i;
    if (a == "--layers")
      o.layers = n;
    else if (a == "--hidden")
      o.hidden = n;
    else if (a == "--seq")
      o.seq = n;
    else if (a == "--micro-batch")
      o.micro_batch = n;
    else if (a == "--microbatches")
      o.microbatches = n;
    else if (a == "--steps")
      o.steps = n;
    else if (a == "--warmup")
      o.warmup = n;
    else if (a == "--gpus")
      o.gpus = n;
    else
      fail("unknown option " + a);
  }
  if (o.layers < 1 || o.hidden < 1 || o.seq < 1 || o.micro_batch < 1 || o.microbatches < 1 ||
      o.steps < 1 || o.gpus < 1) {
    fail(
        "--layers, --hidden, --seq, --micro-batch, --microbatches, --steps and --gpus must be "
        ">= 1");
  }
  return o;
}

// One product Y (T x N) = X (T x K) W (K x N).
struct Product {
  int k, n;
};

class Stage {
 public:
  Stage(const Options& o, int stage) : o_(o), stage_(stage) {
    check(cudaSetDevice(stage), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cublasCreate(&blas_), "cublasCreate");
    check(cublasSetStream(blas_, stream_), "cublasSetStream");
    const std::size_t t = static_cast<std::size_t>(o.micro_batch) * o.seq;
    const std::size_t h = static_cast<std::size_t>(o.hidden);
    products_ = {{o.hidden, 3 * o.hidden},
                 {o.hidden, o.hidden},
                 {o.hidden, 4 * o.hidden},
                 {4 * o.hidden, o.hidden}};
    for (int l = 0; l < o.layers; ++l) {
      for (const Product& p : products_) {
        weights_.push_back(alloc(static_cast<std::size_t>(p.k) * p.n));
        grads_.push_back(alloc(static_cast<std::size_t>(p.k) * p.n));
      }
    }
    act_a_ = alloc(t * 4 * h);
    act_b_ = alloc(t * 4 * h);
    boundary_ = alloc(t * h);
  }

  void gemm(int m, int n, int k, const __half* a, const __half* b, __half* c) {
    const float one = 1.0f, zero = 0.0f;
    check(cublasGemmEx(blas_, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a, CUDA_R_16F, m, b,
                       CUDA_R_16F, k, &zero, c, CUDA_R_16F, m, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  }

  // F, B (input gradient) or W (weight gradient) of every layer of this stage.
  void pass(char kind, int mb) {
    const std::string label = "PP:" + std::to_string(stage_) + kind + std::to_string(mb);
    nvtxRangePushA(label.c_str());
    const int t = o_.micro_batch * o_.seq;
    const std::size_t per_layer = products_.size();
    for (int li = 0; li < o_.layers; ++li) {
      const int l = kind == 'F' ? li : o_.layers - 1 - li;
      for (std::size_t pi = 0; pi < per_layer; ++pi) {
        const std::size_t p = kind == 'F' ? pi : per_layer - 1 - pi;
        const Product& pr = products_[p];
        const std::size_t w = static_cast<std::size_t>(l) * per_layer + p;
        if (kind == 'F') {
          gemm(pr.n, t, pr.k, weights_[w], act_a_, act_b_);  // Y = X W
        } else if (kind == 'I') {
          gemm(pr.k, t, pr.n, weights_[w], act_b_, act_a_);  // dX = dY W^T
        } else {
          gemm(pr.n, pr.k, t, act_b_, act_a_, grads_[w]);  // dW = X^T dY
        }
      }
    }
    nvtxRangePop();
  }

  void synchronize() { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

#ifdef BUBBLESIM_HAVE_NCCL
  void send(int peer, ncclComm_t comm) {
    check(ncclSend(boundary_, static_cast<std::size_t>(o_.micro_batch) * o_.seq * o_.hidden,
                   ncclHalf, peer, comm, stream_),
          "ncclSend");
  }
  void recv(int peer, ncclComm_t comm) {
    check(ncclRecv(boundary_, static_cast<std::size_t>(o_.micro_batch) * o_.seq * o_.hidden,
                   ncclHalf, peer, comm, stream_),
          "ncclRecv");
  }
#endif

 private:
  __half* alloc(std::size_t elements) {
    void* p = nullptr;
    check(cudaMalloc(&p, elements * sizeof(__half)), "cudaMalloc");
    check(cudaMemsetAsync(p, 0, elements * sizeof(__half), stream_), "cudaMemsetAsync");
    return static_cast<__half*>(p);
  }

  const Options& o_;
  int stage_;
  cudaStream_t stream_{};
  cublasHandle_t blas_{};
  std::vector<Product> products_;
  std::vector<__half*> weights_, grads_;
  __half* act_a_ = nullptr;
  __half* act_b_ = nullptr;
  __half* boundary_ = nullptr;
};

// One pipeline stage on GPU `s` of `stages`, in its own process (as a torchrun rank would be:
// the profiler labels launches per process, so stages running at once must be processes).
// `id_fd`: rank 0 writes the NCCL id to the others' pipes, the others read theirs.
int run_stage(const Options& o, int s, int stages, const std::vector<int>& write_fds, int read_fd) {
  int devices = 0;
  check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (devices < stages) {
    fail("--gpus " + std::to_string(stages) + " but " + std::to_string(devices) +
         " CUDA devices are visible");
  }
  Stage st(o, s);
#ifdef BUBBLESIM_HAVE_NCCL
  ncclComm_t comm = nullptr;
  if (stages > 1) {
    ncclUniqueId id;
    if (s == 0) {
      check(ncclGetUniqueId(&id), "ncclGetUniqueId");
      for (int fd : write_fds) {
        if (write(fd, &id, sizeof id) != static_cast<ssize_t>(sizeof id)) fail("writing the id");
      }
    } else if (read(read_fd, &id, sizeof id) != static_cast<ssize_t>(sizeof id)) {
      fail("reading the NCCL id from stage 0");
    }
    check(ncclCommInitRank(&comm, stages, id, s), "ncclCommInitRank");
  }
#else
  (void)write_fds;
  (void)read_fd;
#endif
  std::vector<double> step_ms;
  const int m = o.microbatches;
  for (int step = 0; step < o.warmup + o.steps; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string step_name = "step" + std::to_string(step);
    nvtxRangePushA(step_name.c_str());
    for (int mb = 0; mb < m; ++mb) {
#ifdef BUBBLESIM_HAVE_NCCL
      if (s > 0) st.recv(s - 1, comm);
#endif
      st.pass('F', mb);
#ifdef BUBBLESIM_HAVE_NCCL
      if (s < stages - 1) st.send(s + 1, comm);
#endif
    }
    for (int mb = 0; mb < m; ++mb) {
#ifdef BUBBLESIM_HAVE_NCCL
      if (s < stages - 1) st.recv(s + 1, comm);
#endif
      st.pass('I', mb);
#ifdef BUBBLESIM_HAVE_NCCL
      if (s > 0) st.send(s - 1, comm);
#endif
      st.pass('W', mb);
    }
    st.synchronize();
    nvtxRangePop();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (s == 0) {
      std::printf("step %d: %.3f ms%s\n", step, ms, step < o.warmup ? " (warm-up)" : "");
      std::fflush(stdout);
    }
    if (step >= o.warmup) step_ms.push_back(ms);
  }
  if (s == 0) {
    double total = 0;
    for (double ms : step_ms)
      total += ms;
    std::printf(
        "stages %d, layers per stage %d, hidden %d, tokens per microbatch %d, microbatches %d: "
        "mean step time %.3f ms over %zu steps\n",
        stages, o.layers, o.hidden, o.micro_batch * o.seq, m,
        total / static_cast<double>(step_ms.size()), step_ms.size());
  }
#ifdef BUBBLESIM_HAVE_NCCL
  if (comm != nullptr) ncclCommDestroy(comm);
#endif
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const int stages = o.gpus;
  if (stages == 1) return run_stage(o, 0, 1, {}, -1);
#ifndef BUBBLESIM_HAVE_NCCL
  fail("built without NCCL: one GPU only (--gpus 1)");
#endif
  // One process per stage, forked before anything touches CUDA, each with its rank in the
  // environment (the profiler names its file by RANK).
  std::vector<int> write_fds, read_fds(static_cast<std::size_t>(stages), -1);
  for (int s = 1; s < stages; ++s) {
    int fds[2];
    if (pipe(fds) != 0) fail("pipe: " + std::string(std::strerror(errno)));
    read_fds[static_cast<std::size_t>(s)] = fds[0];
    write_fds.push_back(fds[1]);
  }
  std::vector<pid_t> children;
  for (int s = 0; s < stages; ++s) {
    const pid_t pid = fork();
    if (pid < 0) fail("fork: " + std::string(std::strerror(errno)));
    if (pid == 0) {
      const std::string rank = std::to_string(s), world = std::to_string(stages);
      setenv("RANK", rank.c_str(), 1);
      setenv("LOCAL_RANK", rank.c_str(), 1);
      setenv("WORLD_SIZE", world.c_str(), 1);
      std::exit(run_stage(o, s, stages, s == 0 ? write_fds : std::vector<int>{},
                          read_fds[static_cast<std::size_t>(s)]));
    }
    children.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : children) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  if (failed != 0) fail(std::to_string(failed) + " stage processes failed");
  return 0;
}
