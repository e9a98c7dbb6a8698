// CUDA device enumeration (C++17). Any runtime error means "no usable GPU", never a crash.
#include <cuda_runtime.h>

#include <string>
#include <vector>

namespace capplan::cuda {

struct raw_device {
    std::string name;
    int major, minor;
    double memory_bytes;
};

int list_devices(std::vector<raw_device>& out, std::string& reason) {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        reason = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
        return 0;
    }
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp p{};
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
        out.push_back({p.name, p.major, p.minor, static_cast<double>(p.totalGlobalMem)});
    }
    if (out.empty()) reason = "no CUDA device found";
    return static_cast<int>(out.size());
}

}  // namespace capplan::cuda
