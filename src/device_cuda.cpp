#include <string>
#include <vector>

#include "capplan/device.hpp"

namespace capplan::cuda {
struct raw_device {
    std::string name;
    int major, minor;
    double memory_bytes;
};
int list_devices(std::vector<raw_device>& out, std::string& reason);
}  // namespace capplan::cuda

namespace capplan {

device_status query_devices() {
    device_status s;
    s.built_with_cuda = true;
    std::vector<cuda::raw_device> raw;
    cuda::list_devices(raw, s.reason);
    for (const auto& d : raw) s.devices.push_back({d.name, d.major, d.minor, d.memory_bytes});
    return s;
}

}  // namespace capplan
