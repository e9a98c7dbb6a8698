// The CUDA calibration backend (issue 8.3): the probes of calibration/cuda_probes.hpp run under
// the harness (warm-up, stopping rule, median) and returned as measurements with provenance.
// Built when nvcc is found; where it was not, or where no GPU or driver answers, every call throws
// device_error saying why; a format the device cannot run is a device_error naming the ones it can.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "capplan/calibration/efficiency_fit.hpp"
#include "capplan/calibration/harness.hpp"

namespace capplan {

bool cuda_backend_built();

// cuBLASLt GEMM formats of the device (bf16, fp16 from compute capability 8.0; fp8 from 8.9).
std::vector<std::string> cuda_gemm_formats(int device = 0);

// Y[m, n] = X[m, k] W[n, k]^T as a linear layer (m tokens): 2mnk FLOPs.
measurement cuda_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& format,
                      const measure_options& options = {}, int device = 0);
// Device-to-device copy with the L2 flushed before each run: bytes = read + write.
measurement cuda_memory_copy(data_size size, const measure_options& options = {}, int device = 0);
// Host to device (to_device) or back, from pinned or pageable memory: bytes = the copy.
measurement cuda_host_copy(data_size size, bool to_device, bool pinned, const measure_options& options = {},
                           int device = 0);
// One decode token per sequence reading its K and V cache (bf16), kind "decode_attention".
measurement cuda_decode_attention(std::int64_t batch, std::int64_t context, std::int64_t kv_heads,
                                  std::int64_t head_dim, const measure_options& options = {}, int device = 0);
// Time per kernel of a chain of tiny kernels replayed from a CUDA graph (what the step model charges
// each kernel: efficiency.kernel_launch), kind "launch".
measurement cuda_launch_latency(const measure_options& options = {}, int device = 0);

provenance cuda_provenance(int device = 0);

struct cuda_calibration_options {
    std::vector<std::int64_t> gemm_tokens{1, 16, 128, 512, 2048};  // the layer's GEMMs at these token counts
    std::int64_t layer_tokens = 2048;                              // the prompt of the GEMM-operator check
    std::vector<std::string> formats;   // empty: every format both the device and the accelerator's peaks have
    std::vector<data_size> copy_sizes;  // device copies; empty: 1 MiB .. 4 GiB by factors of 4 (within memory)
    data_size host_copy = data_size::from_si(256.0 * 1048576.0);
    measure_options probe;
    int device = 0;
    // Called with the measurements before the fit, so that a fit that fails does not lose them.
    std::function<void(const calibration_run&)> on_measured;
};

// Measures the device as the catalog accelerator `a` (its peaks are the references): the layer's
// GEMMs per format, device copies, host copies pinned and pageable, decode attention over the
// model's KV heads, launch latency; fits the table (kernel launch = the measured latency) and
// checks the layer's GEMM operators (projections, MLP) at `layer_tokens`, before and after.
calibration_run calibrate_cuda(const model_spec& m, const accelerator_spec& a, const cuda_calibration_options& o);

}  // namespace capplan
