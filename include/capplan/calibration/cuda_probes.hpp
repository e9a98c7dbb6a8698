// The CUDA probes of the calibration backend (issue 8.3), C++17 so that nvcc compiles them
// (src/cuda/calibration_probes.cu); calibration/cuda_backend.hpp wraps them in the harness.
//
// A probe allocates and fills its buffers once; run_once() does the work once and returns its
// time in seconds from CUDA events. Every CUDA or cuBLASLt failure is a probe_failure naming the
// call and the error, never a crash. cuBLASLt is opened at run time (dlopen), so the package
// imports where it is missing.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace capplan::cuda {

struct probe_failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct device_properties {
    std::string name;
    int major = 0, minor = 0, multiprocessors = 0;
    double memory_bytes = 0, l2_bytes = 0;
    double sm_clock_khz = 0, memory_clock_khz = 0;  // as the runtime reports them (0: not readable)
    int driver_version = 0, runtime_version = 0;    // e.g. 13000 = 13.0
};

class timed_probe {
public:
    virtual ~timed_probe() = default;
    virtual double run_once() = 0;  // seconds
    double flops = 0.0;             // per run
    double bytes = 0.0;             // moved per run (reads + writes)
};

device_properties properties(int device);

// GEMM formats this device runs through cuBLASLt: "bf16", "fp16" (compute capability 8.0+), "fp8"
// (E4M3 inputs, bf16 output; 8.9+).
std::vector<std::string> gemm_formats(int device);

// Y[m, n] = X[m, k] W[n, k]^T as a framework's linear layer: m tokens, n outputs, k inputs
// (cuBLASLt "TN", fp32 accumulation, the heuristic's first algorithm, 32 MiB workspace), the L2
// flushed before each run as in a model, whose every layer reads its own weights from memory.
std::unique_ptr<timed_probe> gemm(int device, std::int64_t m, std::int64_t n, std::int64_t k,
                                  const std::string& format);

// Device-to-device copy of `bytes`, the L2 cache flushed (a larger buffer overwritten) before each run.
std::unique_ptr<timed_probe> device_copy(int device, double bytes);

// Host-to-device (or back) copy from pinned or pageable host memory.
std::unique_ptr<timed_probe> host_copy(int device, double bytes, bool to_device, bool pinned);

// Decode attention: one query token per sequence reads its K and V cache (bf16) with an online
// softmax, split over the context (flash-decoding; far slower than cuDNN's kernel, see docs/formulas.md); bytes = K + V
// read once; L2 flushed before each run.
std::unique_ptr<timed_probe> decode_attention(int device, std::int64_t batch, std::int64_t context,
                                              std::int64_t kv_heads, std::int64_t head_dim);

// 1000 tiny kernels replayed from a CUDA graph, as decode steps run: run_once returns the time per
// kernel (launch, ramp and tail).
std::unique_ptr<timed_probe> launch(int device);

}  // namespace capplan::cuda
