// Which accelerators this process can see. Built with CUDA when nvcc was found at build time;
// otherwise (and on machines without a GPU or driver) it reports none, with the reason.
#pragma once

#include <string>
#include <vector>

namespace capplan {

struct device_info {
    std::string name;
    int compute_major = 0, compute_minor = 0;
    double memory_bytes = 0.0;
};

struct device_status {
    bool built_with_cuda = false;
    std::vector<device_info> devices;
    std::string reason;  // why the list is empty: not built with CUDA, no driver, no device
};

device_status query_devices();

}  // namespace capplan
