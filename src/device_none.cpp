#include "capplan/device.hpp"

namespace capplan {

device_status query_devices() { return {false, {}, "capplan was built without CUDA (nvcc not found at build time)"}; }

}  // namespace capplan
