// Runs one work function on several threads (the calling thread is one of them): `threads` > 0, or
// one per hardware thread. The work pulls its own items (e.g. from an atomic counter).
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <mutex>
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

// run_threads for many short runs (a probe times thousands): the threads start once, so a run
// costs a wake-up rather than a thread start. run(work) calls work(k, n) for k = 0 .. n-1, the
// caller being k = 0, and returns when all are done; work must not throw.
class worker_pool {
public:
    explicit worker_pool(int threads) : n_(thread_count(threads)) {
        for (int k = 1; k < n_; ++k) workers_.emplace_back([this, k] { serve(k); });
    }
    ~worker_pool() {
        {
            std::lock_guard<std::mutex> lock(mu_);
            stop_ = true;
        }
        wake_.notify_all();
        for (auto& t : workers_) t.join();
    }
    worker_pool(const worker_pool&) = delete;
    worker_pool& operator=(const worker_pool&) = delete;

    int size() const { return n_; }

    template <class Work>
    void run(Work& work) {
        {
            std::lock_guard<std::mutex> lock(mu_);
            work_ = &work;
            call_ = [](void* w, int k, int n) { (*static_cast<Work*>(w))(k, n); };
            pending_ = n_ - 1;
            ++generation_;
        }
        wake_.notify_all();
        work(0, n_);
        std::unique_lock<std::mutex> lock(mu_);
        done_.wait(lock, [this] { return pending_ == 0; });
    }

private:
    void serve(int k) {
        for (std::uint64_t seen = 0;;) {
            void* work = nullptr;
            void (*call)(void*, int, int) = nullptr;
            {
                std::unique_lock<std::mutex> lock(mu_);
                wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
                if (stop_) return;
                seen = generation_;
                work = work_;
                call = call_;
            }
            call(work, k, n_);
            std::lock_guard<std::mutex> lock(mu_);
            if (--pending_ == 0) done_.notify_one();
        }
    }

    const int n_;
    std::mutex mu_;
    std::condition_variable wake_, done_;
    void* work_ = nullptr;
    void (*call_)(void*, int, int) = nullptr;
    std::uint64_t generation_ = 0;
    int pending_ = 0;
    bool stop_ = false;
    std::vector<std::thread> workers_;
};

}  // namespace capplan::detail
