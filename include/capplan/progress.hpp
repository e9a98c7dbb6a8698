// How far a long operation has come, and a way to stop it early (issue #23 item 4): the layout search, sizing and
// calibration take an optional `progress*`. The operation adds the pieces it will do to total() (0 while unknown),
// counts each piece done, and checks stop_requested() between pieces; asked to stop, it returns what it has so far,
// marked stopped. A watcher on another thread (Python's progress bar, the CLI) reads done() and total() and asks
// for the stop (Ctrl-C), so every field is atomic.
#pragma once

#include <atomic>
#include <cstdint>

namespace capplan {

class progress {
public:
    void add_total(std::int64_t pieces) { total_ += pieces; }
    void advance(std::int64_t pieces = 1) { done_ += pieces; }
    void request_stop() { stop_ = true; }
    bool stop_requested() const { return stop_; }
    std::int64_t done() const { return done_; }
    std::int64_t total() const { return total_; }

private:
    std::atomic<std::int64_t> done_{0}, total_{0};
    std::atomic<bool> stop_{false};
};

// Whether an optional watcher asks the operation to stop.
inline bool stop_requested(const progress* watch) { return watch && watch->stop_requested(); }

}  // namespace capplan
