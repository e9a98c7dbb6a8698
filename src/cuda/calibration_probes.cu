// CUDA probes for calibration (issue 8.3); see include/capplan/calibration/cuda_probes.hpp.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "capplan/calibration/cuda_probes.hpp"

namespace capplan::cuda {

namespace {

void check(cudaError_t e, const std::string& what) {
    if (e != cudaSuccess) throw probe_failure(what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

// Device memory freed with its owner.
struct device_buffer {
    void* p = nullptr;
    std::size_t bytes = 0;
    explicit device_buffer(std::size_t n) : bytes(n) {
        check(cudaMalloc(&p, n == 0 ? 1 : n), "cudaMalloc " + std::to_string(n) + " B");
    }
    ~device_buffer() { cudaFree(p); }
    device_buffer(const device_buffer&) = delete;
    device_buffer& operator=(const device_buffer&) = delete;
};

// A CUDA handle destroyed with its owner (nothing to destroy while it is null).
template <class Handle, cudaError_t (*destroy)(Handle)>
struct cuda_handle {
    Handle h = nullptr;
    cuda_handle() = default;
    ~cuda_handle() {
        if (h) destroy(h);
    }
    cuda_handle(const cuda_handle&) = delete;
    cuda_handle& operator=(const cuda_handle&) = delete;
};

struct event_pair {
    cudaEvent_t start = nullptr, stop = nullptr;
    event_pair() {
        check(cudaEventCreate(&start), "cudaEventCreate");
        check(cudaEventCreate(&stop), "cudaEventCreate");
    }
    ~event_pair() {
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
    }
    template <class F>
    double time(F&& work) {
        check(cudaEventRecord(start), "cudaEventRecord");
        work();
        check(cudaGetLastError(), "kernel launch");
        check(cudaEventRecord(stop), "cudaEventRecord");
        check(cudaEventSynchronize(stop), "cudaEventSynchronize");
        float ms = 0.0f;
        check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
        return static_cast<double>(ms) * 1e-3;
    }
};

// Small values of the type, so no input is NaN or Inf (timing does not depend on the values).
template <class T>
__global__ void fill(T* p, std::size_t n) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        p[i] = T(static_cast<float>((i * 2654435761u >> 16) & 255u) / 512.0f - 0.25f);
}

template <class T>
void fill_buffer(device_buffer& b) {
    fill<T><<<1024, 256>>>(static_cast<T*>(b.p), b.bytes / sizeof(T));
    check(cudaGetLastError(), "fill kernel");
}

// A buffer twice the L2 size, overwritten to evict the probe's data before each timed run.
struct l2_flush {
    device_buffer buffer;
    explicit l2_flush(int device) : buffer(2 * static_cast<std::size_t>(properties(device).l2_bytes) + 1) {}
    void operator()() { check(cudaMemsetAsync(buffer.p, 0x5a, buffer.bytes), "cudaMemsetAsync (L2 flush)"); }
};

void use(int device) { check(cudaSetDevice(device), "cudaSetDevice " + std::to_string(device)); }

// cuBLASLt, opened at run time so that the module imports where the library is missing. The
// entry points used, each kept as a pointer of its own declared type.
// clang-format off
#define CAPPLAN_CUBLASLT_API(X)                                                                      \
    X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescSetAttribute) \
    X(cublasLtMatmulDescDestroy) X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy)            \
    X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceSetAttribute)                            \
    X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)
// clang-format on

struct lt_api {
    void* lib = nullptr;
#define CAPPLAN_DECLARE(f) decltype(&::f) f = nullptr;
    CAPPLAN_CUBLASLT_API(CAPPLAN_DECLARE)
#undef CAPPLAN_DECLARE

    static const lt_api& get() {
        static std::string error;
        static const lt_api api = [] {
            lt_api a;
            for (const char* name : {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"})
                if ((a.lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
            if (!a.lib) {
                const char* e = dlerror();
                error = std::string("cannot open libcublasLt (.so.13, .so.12): ") + (e ? e : "not found");
                return a;
            }
#define CAPPLAN_LOAD(f)                                       \
    a.f = reinterpret_cast<decltype(&::f)>(dlsym(a.lib, #f)); \
    if (!a.f && error.empty()) error = "libcublasLt lacks " #f;
            CAPPLAN_CUBLASLT_API(CAPPLAN_LOAD)
#undef CAPPLAN_LOAD
            return a;
        }();
        if (!error.empty()) throw probe_failure(error);
        return api;
    }
};

void lt_check(cublasStatus_t s, const std::string& what) {
    if (s != CUBLAS_STATUS_SUCCESS)
        throw probe_failure(what + ": cuBLAS status " + std::to_string(static_cast<int>(s)));
}

class gemm_probe final : public timed_probe {
public:
    gemm_probe(int device, std::int64_t m, std::int64_t n, std::int64_t k, const std::string& format)
        : device_(device), api_(lt_api::get()), flush_(device) {
        use(device);
        const bool fp8 = format == "fp8";
        const cudaDataType_t in = fp8 ? CUDA_R_8F_E4M3 : format == "fp16" ? CUDA_R_16F : CUDA_R_16BF;
        const cudaDataType_t out = format == "fp16" ? CUDA_R_16F : CUDA_R_16BF;
        const std::size_t in_size = fp8 ? 1 : 2;
        // Column-major cuBLAS view of Y[m, n] = X[m, k] W[n, k]^T: D(n x m) = op(A = W, k x n)^T B(X, k x m).
        a_ = std::make_unique<device_buffer>(static_cast<std::size_t>(n * k) * in_size);
        b_ = std::make_unique<device_buffer>(static_cast<std::size_t>(k * m) * in_size);
        d_ = std::make_unique<device_buffer>(static_cast<std::size_t>(n * m) * 2);
        workspace_ = std::make_unique<device_buffer>(std::size_t{32} << 20);
        if (fp8) {
            fill_buffer<__nv_fp8_e4m3>(*a_);
            fill_buffer<__nv_fp8_e4m3>(*b_);
        } else if (format == "fp16") {
            fill_buffer<__half>(*a_);
            fill_buffer<__half>(*b_);
        } else {
            fill_buffer<__nv_bfloat16>(*a_);
            fill_buffer<__nv_bfloat16>(*b_);
        }
        lt_check(api_.cublasLtCreate(&handle_), "cublasLtCreate");
        lt_check(api_.cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
        const cublasOperation_t t = CUBLAS_OP_T, nt = CUBLAS_OP_N;
        lt_check(api_.cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t), "TRANSA");
        lt_check(api_.cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &nt, sizeof nt), "TRANSB");
        const auto u = [](std::int64_t x) { return static_cast<std::uint64_t>(x); };
        lt_check(api_.cublasLtMatrixLayoutCreate(&la_, in, u(k), u(n), k), "layout A");
        lt_check(api_.cublasLtMatrixLayoutCreate(&lb_, in, u(k), u(m), k), "layout B");
        lt_check(api_.cublasLtMatrixLayoutCreate(&ld_, out, u(n), u(m), n), "layout D");
        lt_check(api_.cublasLtMatmulPreferenceCreate(&pref_), "cublasLtMatmulPreferenceCreate");
        const std::size_t ws = workspace_->bytes;
        lt_check(
            api_.cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
            "workspace");
        int found = 0;
        const cublasStatus_t hs =
            api_.cublasLtMatmulAlgoGetHeuristic(handle_, desc_, la_, lb_, ld_, ld_, pref_, 1, &algo_, &found);
        if (hs != CUBLAS_STATUS_SUCCESS || found == 0)
            throw probe_failure("no cuBLASLt algorithm for " + format + " " + std::to_string(m) + "x" +
                                std::to_string(n) + "x" + std::to_string(k) + " on this device");
        flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
        bytes = static_cast<double>(n * k + k * m) * static_cast<double>(in_size) + static_cast<double>(n * m) * 2.0;
        check(cudaDeviceSynchronize(), "GEMM set-up");
    }
    ~gemm_probe() override {
        if (pref_) api_.cublasLtMatmulPreferenceDestroy(pref_);
        if (la_) api_.cublasLtMatrixLayoutDestroy(la_);
        if (lb_) api_.cublasLtMatrixLayoutDestroy(lb_);
        if (ld_) api_.cublasLtMatrixLayoutDestroy(ld_);
        if (desc_) api_.cublasLtMatmulDescDestroy(desc_);
        if (handle_) api_.cublasLtDestroy(handle_);
    }
    double run_once() override {
        use(device_);
        const float alpha = 1.0f, beta = 0.0f;
        flush_();
        return events_.time([&] {
            lt_check(api_.cublasLtMatmul(handle_, desc_, &alpha, a_->p, la_, b_->p, lb_, &beta, d_->p, ld_, d_->p, ld_,
                                         &algo_.algo, workspace_->p, workspace_->bytes, nullptr),
                     "cublasLtMatmul");
        });
    }

private:
    int device_;
    const lt_api& api_;
    std::unique_ptr<device_buffer> a_, b_, d_, workspace_;
    cublasLtHandle_t handle_ = nullptr;
    cublasLtMatmulDesc_t desc_ = nullptr;
    cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, ld_ = nullptr;
    cublasLtMatmulPreference_t pref_ = nullptr;
    cublasLtMatmulHeuristicResult_t algo_{};
    l2_flush flush_;  // a real layer's weights come from memory: each layer has its own
    event_pair events_;
};

class device_copy_probe final : public timed_probe {
public:
    device_copy_probe(int device, double n)
        : device_(device), src_(static_cast<std::size_t>(n)), dst_(static_cast<std::size_t>(n)), flush_(device) {
        check(cudaMemset(src_.p, 1, src_.bytes), "cudaMemset");
        bytes = 2.0 * n;  // read + write
        check(cudaDeviceSynchronize(), "copy set-up");
    }
    double run_once() override {
        use(device_);
        flush_();
        return events_.time(
            [&] { check(cudaMemcpyAsync(dst_.p, src_.p, src_.bytes, cudaMemcpyDeviceToDevice), "cudaMemcpyAsync"); });
    }

private:
    int device_;
    device_buffer src_, dst_;
    l2_flush flush_;
    event_pair events_;
};

class host_copy_probe final : public timed_probe {
public:
    host_copy_probe(int device, double n, bool to_device, bool pinned)
        : device_(device), to_device_(to_device), pinned_(pinned), dev_(static_cast<std::size_t>(n)) {
        const auto size = static_cast<std::size_t>(n);
        if (pinned) {
            check(cudaMallocHost(&host_, size), "cudaMallocHost " + std::to_string(size) + " B");
        } else {
            host_ = std::malloc(size);
            if (!host_) throw probe_failure("malloc " + std::to_string(size) + " B failed");
        }
        for (std::size_t i = 0; i < size; i += 4096) static_cast<unsigned char*>(host_)[i] = 1;  // touch every page
        bytes = n;
    }
    ~host_copy_probe() override {
        if (pinned_)
            cudaFreeHost(host_);
        else
            std::free(host_);
    }
    double run_once() override {
        use(device_);
        return events_.time([&] {
            if (to_device_)
                check(cudaMemcpyAsync(dev_.p, host_, dev_.bytes, cudaMemcpyHostToDevice), "cudaMemcpyAsync H2D");
            else
                check(cudaMemcpyAsync(host_, dev_.p, dev_.bytes, cudaMemcpyDeviceToHost), "cudaMemcpyAsync D2H");
        });
    }

private:
    int device_;
    bool to_device_, pinned_;
    void* host_ = nullptr;
    device_buffer dev_;
    event_pair events_;
};

// Split-KV decode attention (flash-decoding, Dao et al. 2023): block (sequence x KV head, split)
// takes a chunk of the cached positions so the grid fills the device even at batch 1. Its 4 warps
// take every 4th position, their lanes split the head dimension; an online softmax (Milakov &
// Gimelshein 2018) per warp is merged in the block, and the splits' partials by a second kernel.
constexpr int decode_warps = 4;
constexpr int max_head_dim = 256;

struct decode_partial {
    float* max;  // [blocks x splits]
    float* sum;  // [blocks x splits]
    float* acc;  // [blocks x splits x head_dim]
};

__global__ void decode_attention_split(const __nv_bfloat16* k, const __nv_bfloat16* v, decode_partial part,
                                       int context, int head_dim, int chunk) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, split = blockIdx.y, splits = gridDim.y;
    const std::size_t base = static_cast<std::size_t>(blockIdx.x) * context * head_dim;
    const int per_lane = head_dim / 32, first = split * chunk, last = min(context, first + chunk);
    const float q = 0.01f, scale = rsqrtf(static_cast<float>(head_dim));
    float acc[max_head_dim / 32] = {};
    float running_max = -1e30f, running_sum = 0.0f;
    for (int j = first + warp; j < last; j += decode_warps) {
        const __nv_bfloat16* kj = k + base + static_cast<std::size_t>(j) * head_dim;
        float s = 0.0f;
        for (int e = 0; e < per_lane; ++e) s += q * __bfloat162float(kj[lane + 32 * e]);
        for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
        s *= scale;
        const float new_max = fmaxf(running_max, s), correction = __expf(running_max - new_max),
                    p = __expf(s - new_max);
        running_sum = running_sum * correction + p;
        const __nv_bfloat16* vj = v + base + static_cast<std::size_t>(j) * head_dim;
        for (int e = 0; e < per_lane; ++e) acc[e] = acc[e] * correction + p * __bfloat162float(vj[lane + 32 * e]);
        running_max = new_max;
    }
    __shared__ float maxes[decode_warps], sums[decode_warps], partial[decode_warps][max_head_dim];
    if (lane == 0) maxes[warp] = running_max, sums[warp] = running_sum;
    for (int e = 0; e < per_lane; ++e) partial[warp][lane + 32 * e] = acc[e];
    __syncthreads();
    if (warp == 0) {
        float m = maxes[0];
        for (int w = 1; w < decode_warps; ++w) m = fmaxf(m, maxes[w]);
        float total = 0.0f;
        for (int w = 0; w < decode_warps; ++w) total += sums[w] * __expf(maxes[w] - m);
        const std::size_t at = static_cast<std::size_t>(blockIdx.x) * splits + split;
        if (lane == 0) part.max[at] = m, part.sum[at] = total;
        for (int e = 0; e < per_lane; ++e) {
            float o = 0.0f;
            for (int w = 0; w < decode_warps; ++w) o += partial[w][lane + 32 * e] * __expf(maxes[w] - m);
            part.acc[at * head_dim + lane + 32 * e] = o;
        }
    }
}

// One warp per (sequence, KV head): the splits' partial softmaxes merged into the output.
__global__ void decode_attention_merge(decode_partial part, float* out, int splits, int head_dim) {
    const int lane = threadIdx.x;
    const std::size_t row = static_cast<std::size_t>(blockIdx.x) * splits;
    float m = -1e30f;
    for (int s = 0; s < splits; ++s) m = fmaxf(m, part.max[row + s]);
    float total = 0.0f;
    for (int s = 0; s < splits; ++s) total += part.sum[row + s] * __expf(part.max[row + s] - m);
    for (int e = lane; e < head_dim; e += 32) {
        float o = 0.0f;
        for (int s = 0; s < splits; ++s) o += part.acc[(row + s) * head_dim + e] * __expf(part.max[row + s] - m);
        out[static_cast<std::size_t>(blockIdx.x) * head_dim + e] = o / total;
    }
}

class decode_attention_probe final : public timed_probe {
public:
    decode_attention_probe(int device, std::int64_t batch, std::int64_t context, std::int64_t kv_heads,
                           std::int64_t head_dim)
        : device_(device),
          blocks_(static_cast<int>(batch * kv_heads)),
          context_(static_cast<int>(context)),
          head_dim_(static_cast<int>(head_dim)),
          splits_(split_count(device, blocks_, context_)),
          chunk_((context_ + splits_ - 1) / splits_),
          k_(static_cast<std::size_t>(batch * kv_heads * context * head_dim) * 2),
          v_(static_cast<std::size_t>(batch * kv_heads * context * head_dim) * 2),
          out_(static_cast<std::size_t>(batch * kv_heads * head_dim) * 4),
          partial_(static_cast<std::size_t>(blocks_) * splits_ * (2 + head_dim) * 4),
          flush_(device) {
        if (head_dim % 32 != 0 || head_dim > max_head_dim)
            throw probe_failure("decode attention head_dim " + std::to_string(head_dim) +
                                ": a multiple of 32 up to 256");
        fill_buffer<__nv_bfloat16>(k_);
        fill_buffer<__nv_bfloat16>(v_);
        float* p = static_cast<float*>(partial_.p);
        const std::size_t n = static_cast<std::size_t>(blocks_) * splits_;
        part_ = {p, p + n, p + 2 * n};
        bytes = static_cast<double>(k_.bytes + v_.bytes + out_.bytes);
        flops = 4.0 * static_cast<double>(batch * kv_heads * context * head_dim);
        check(cudaDeviceSynchronize(), "attention set-up");
    }
    double run_once() override {
        use(device_);
        flush_();
        return events_.time([&] {
            decode_attention_split<<<dim3(blocks_, splits_), 32 * decode_warps>>>(
                static_cast<const __nv_bfloat16*>(k_.p), static_cast<const __nv_bfloat16*>(v_.p), part_, context_,
                head_dim_, chunk_);
            decode_attention_merge<<<blocks_, 32>>>(part_, static_cast<float*>(out_.p), splits_, head_dim_);
        });
    }

private:
    // Enough splits for four blocks per multiprocessor, each split at least 256 positions.
    static int split_count(int device, int blocks, int context) {
        const int want = (4 * properties(device).multiprocessors + blocks - 1) / blocks;
        return std::max(1, std::min(want, (context + 255) / 256));
    }
    int device_, blocks_, context_, head_dim_, splits_, chunk_;
    device_buffer k_, v_, out_, partial_;
    decode_partial part_{};
    l2_flush flush_;
    event_pair events_;
};

// A kernel that does almost nothing: one warp adds to 32 floats.
__global__ void tiny_kernel(float* p) { p[threadIdx.x] += 1.0f; }

// A chain of tiny kernels captured in a CUDA graph and replayed, as engines run decode steps (vLLM,
// SGLang, TensorRT-LLM): per kernel, the launch, the ramp and the tail the step model charges each
// kernel (efficiency.kernel_launch), without the host's launch rate, which a graph does not pay.
class launch_probe final : public timed_probe {
public:
    explicit launch_probe(int device) : device_(device), buffer_(32 * sizeof(float)) {
        check(cudaMemset(buffer_.p, 0, buffer_.bytes), "cudaMemset");
        check(cudaStreamCreate(&stream_.h), "cudaStreamCreate");
        check(cudaStreamBeginCapture(stream_.h, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
        for (int i = 0; i < launches; ++i) tiny_kernel<<<1, 32, 0, stream_.h>>>(static_cast<float*>(buffer_.p));
        check(cudaStreamEndCapture(stream_.h, &graph_.h), "cudaStreamEndCapture");
        check(cudaGraphInstantiate(&exec_.h, graph_.h, 0), "cudaGraphInstantiate");
        check(cudaDeviceSynchronize(), "launch set-up");
    }
    double run_once() override {
        use(device_);
        return events_.time([&] { check(cudaGraphLaunch(exec_.h, 0), "cudaGraphLaunch"); }) / launches;
    }

private:
    static constexpr int launches = 1000;
    int device_;
    device_buffer buffer_;
    // Members, so that a set-up step that throws still destroys what the steps before it made.
    cuda_handle<cudaStream_t, cudaStreamDestroy> stream_;
    cuda_handle<cudaGraph_t, cudaGraphDestroy> graph_;
    cuda_handle<cudaGraphExec_t, cudaGraphExecDestroy> exec_;
    event_pair events_;
};

}  // namespace

device_properties properties(int device) {
    int count = 0;
    check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (device < 0 || device >= count)
        throw probe_failure("device " + std::to_string(device) + " out of range: " + std::to_string(count) +
                            " CUDA device(s)");
    cudaDeviceProp p{};
    check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
    device_properties out;
    out.name = p.name;
    out.major = p.major;
    out.minor = p.minor;
    out.multiprocessors = p.multiProcessorCount;
    out.memory_bytes = static_cast<double>(p.totalGlobalMem);
    out.l2_bytes = static_cast<double>(p.l2CacheSize);
    int clock = 0;
    if (cudaDeviceGetAttribute(&clock, cudaDevAttrClockRate, device) == cudaSuccess) out.sm_clock_khz = clock;
    if (cudaDeviceGetAttribute(&clock, cudaDevAttrMemoryClockRate, device) == cudaSuccess) out.memory_clock_khz = clock;
    cudaDriverGetVersion(&out.driver_version);
    cudaRuntimeGetVersion(&out.runtime_version);
    cudaGetLastError();  // attributes a runtime does not know leave an error behind; it is not the probe's
    return out;
}

std::vector<std::string> gemm_formats(int device) {
    const device_properties p = properties(device);
    std::vector<std::string> out;
    const int cc = p.major * 10 + p.minor;
    if (cc >= 80) out = {"bf16", "fp16"};
    if (cc >= 89) out.push_back("fp8");
    return out;
}

std::unique_ptr<timed_probe> gemm(int device, std::int64_t m, std::int64_t n, std::int64_t k,
                                  const std::string& format) {
    use(device);
    return std::make_unique<gemm_probe>(device, m, n, k, format);
}

std::unique_ptr<timed_probe> device_copy(int device, double bytes) {
    use(device);
    return std::make_unique<device_copy_probe>(device, bytes);
}

std::unique_ptr<timed_probe> host_copy(int device, double bytes, bool to_device, bool pinned) {
    use(device);
    return std::make_unique<host_copy_probe>(device, bytes, to_device, pinned);
}

std::unique_ptr<timed_probe> decode_attention(int device, std::int64_t batch, std::int64_t context,
                                              std::int64_t kv_heads, std::int64_t head_dim) {
    use(device);
    return std::make_unique<decode_attention_probe>(device, batch, context, kv_heads, head_dim);
}

std::unique_ptr<timed_probe> launch(int device) {
    use(device);
    return std::make_unique<launch_probe>(device);
}

}  // namespace capplan::cuda
