// detail::run_threads and detail::worker_pool: every item runs once, and an exception on any thread
// reaches the caller after all threads stopped (it must never end the process).
#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "capplan/detail/threads.hpp"

using namespace capplan::detail;

TEST_CASE("run_threads runs each of n slices once and rethrows a worker's exception on the caller") {
    std::vector<std::atomic<int>> hits(4);
    run_threads(4, [&](int k, int n) {
        CHECK(n == 4);
        ++hits[k];
    });
    for (auto& h : hits) CHECK(h == 1);

    std::atomic<int> ran{0};
    CHECK_THROWS_WITH_AS(run_threads(3, [&](int k, int) {
                             ++ran;
                             if (k == 2) throw std::runtime_error("slice 2 failed");
                         }),
                         "slice 2 failed", std::runtime_error);
    CHECK(ran == 3);  // the others finished before the rethrow
}

TEST_CASE("worker_pool rethrows the first exception of a run and stays usable") {
    worker_pool pool(3);
    REQUIRE(pool.size() == 3);
    auto failing = [](int k, int) {
        if (k != 0) throw std::invalid_argument("worker failed");
    };
    CHECK_THROWS_AS(pool.run(failing), std::invalid_argument);
    auto caller_fails = [](int k, int) {
        if (k == 0) throw std::out_of_range("caller failed");
    };
    CHECK_THROWS_AS(pool.run(caller_fails), std::out_of_range);
    std::atomic<int> sum{0};
    auto add = [&](int k, int) { sum += k + 1; };
    pool.run(add);
    CHECK(sum == 1 + 2 + 3);
}

TEST_CASE("thread_count: a positive request as given, 0 the CPUs this process may use") {
    CHECK(thread_count(5) == 5);
    CHECK(thread_count(0) == available_cpus());
    CHECK(available_cpus() >= 1);
}
