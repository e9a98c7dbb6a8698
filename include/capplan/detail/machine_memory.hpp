// This machine's physical memory, for limits that keep a request from exhausting it (a sweep's table).
#pragma once

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

namespace capplan::detail {

// Bytes of physical memory; 0 where the system does not say.
inline double physical_memory_bytes() {
#if defined(__unix__) || defined(__APPLE__)
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && page > 0) return static_cast<double>(pages) * static_cast<double>(page);
#endif
    return 0.0;
}

}  // namespace capplan::detail
