// Runs one work function on several threads (the calling thread is one of them): `threads` > 0, or
// one per hardware thread. The work pulls its own items (e.g. from an atomic counter).
#pragma once

#include <algorithm>
#include <thread>
#include <vector>

namespace capplan::detail {

inline int thread_count(int threads) {
    return threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// work(k, n) for k = 0 .. n-1 (n threads), each on its own thread; returns when all are done.
template <class Work>
void run_threads(int threads, Work&& work) {
    const int n = thread_count(threads);
    std::vector<std::thread> pool;
    for (int k = 1; k < n; ++k) pool.emplace_back([&work, k, n] { work(k, n); });
    work(0, n);
    for (auto& t : pool) t.join();
}

}  // namespace capplan::detail
