// Runs one work function on several threads (the calling thread is one of them): `threads` > 0, or
// one per hardware thread. The work pulls its own items (e.g. from an atomic counter).
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>
#if defined(__linux__)
#include <sched.h>
#endif

namespace capplan::detail {

// The CPUs this process may run on: its affinity mask on Linux (a container or taskset limits it),
// else every hardware thread.
inline int available_cpus() {
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
#endif
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

inline int thread_count(int threads) { return threads > 0 ? threads : available_cpus(); }

// The first exception any thread of a run throws, rethrown on the caller once all have stopped.
class first_error {
public:
    template <class F>
    void capture(F&& f) noexcept {
        try {
            f();
        } catch (...) {
            std::lock_guard<std::mutex> lock(mu_);
            if (!error_) error_ = std::current_exception();
        }
    }
    void rethrow() const {
        if (error_) std::rethrow_exception(error_);
    }

private:
    std::mutex mu_;
    std::exception_ptr error_;
};

// work(k, n) for k = 0 .. n-1 (n threads), each on its own thread; returns when all are done. An
// exception in any of them (or in starting a thread) reaches the caller after every thread joined.
template <class Work>
void run_threads(int threads, Work&& work) {
    const int n = thread_count(threads);
    first_error error;
    std::vector<std::thread> pool;
    error.capture([&] {
        for (int k = 1; k < n; ++k) pool.emplace_back([&work, &error, k, n] { error.capture([&] { work(k, n); }); });
    });
    if (static_cast<int>(pool.size()) == n - 1) error.capture([&] { work(0, n); });
    for (auto& t : pool) t.join();
    error.rethrow();
}

// run_threads for many short runs (a probe times thousands): the threads start once, so a run
// costs a wake-up rather than a thread start. run(work) calls work(k, n) for k = 0 .. n-1, the
// caller being k = 0, and returns when all are done, rethrowing the first exception any of them threw.
class worker_pool {
public:
    explicit worker_pool(int threads) : n_(thread_count(threads)) {
        try {
            for (int k = 1; k < n_; ++k) workers_.emplace_back([this, k] { serve(k); });
        } catch (...) {
            stop_workers();  // joinable threads must not be destroyed
            throw;
        }
    }
    ~worker_pool() { stop_workers(); }
    worker_pool(const worker_pool&) = delete;
    worker_pool& operator=(const worker_pool&) = delete;

    int size() const { return n_; }

    template <class Work>
    void run(Work& work) {
        first_error error;
        {
            std::lock_guard<std::mutex> lock(mu_);
            work_ = &work;
            call_ = [](void* w, int k, int n) { (*static_cast<Work*>(w))(k, n); };
            error_ = &error;
            pending_ = n_ - 1;
            ++generation_;
        }
        wake_.notify_all();
        error.capture([&] { work(0, n_); });
        {
            // Always wait: the workers use `work` and `error`, which live in this frame.
            std::unique_lock<std::mutex> lock(mu_);
            done_.wait(lock, [this] { return pending_ == 0; });
        }
        error.rethrow();
    }

private:
    void stop_workers() {
        {
            std::lock_guard<std::mutex> lock(mu_);
            stop_ = true;
        }
        wake_.notify_all();
        for (auto& t : workers_) t.join();
    }

    void serve(int k) {
        for (std::uint64_t seen = 0;;) {
            void* work = nullptr;
            void (*call)(void*, int, int) = nullptr;
            first_error* error = nullptr;
            {
                std::unique_lock<std::mutex> lock(mu_);
                wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
                if (stop_) return;
                seen = generation_;
                work = work_;
                call = call_;
                error = error_;
            }
            error->capture([&] { call(work, k, n_); });
            std::lock_guard<std::mutex> lock(mu_);
            if (--pending_ == 0) done_.notify_one();
        }
    }

    const int n_;
    std::mutex mu_;
    std::condition_variable wake_, done_;
    void* work_ = nullptr;
    void (*call_)(void*, int, int) = nullptr;
    first_error* error_ = nullptr;
    std::uint64_t generation_ = 0;
    int pending_ = 0;
    bool stop_ = false;
    std::vector<std::thread> workers_;
};

}  // namespace capplan::detail
