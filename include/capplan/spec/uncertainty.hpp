// How far capplan's predictions have landed from published measurements (issue #22 item 5; docs/validation.md): for
// each validated quantity, the 10th and 90th percentiles of the signed relative error e = modelled / published - 1
// over the held-out rows, which scripts/validation_report.py writes to models/uncertainty.json. A prediction v then
// says the measurement lies in [v / (1 + p90), v / (1 + p10)] for eight rows in ten.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>

namespace capplan {

struct error_band {
    double p10 = 0.0, p90 = 0.0;  // signed relative errors
    int rows = 0;                 // held-out rows they come from
};

struct uncertainty_bands {
    std::string method;                      // how the bands were computed, as the file states it
    // by quantity (ttft, tpot, throughput_static, training_step...) and by quantity and model family
    // (ttft.dense, throughput_saturated.moe...)
    std::map<std::string, error_band> bands;

    const error_band* find(const std::string& quantity) const {
        const auto it = bands.find(quantity);
        return it == bands.end() ? nullptr : &it->second;
    }
    // A model family's band ("<quantity>.dense" or "<quantity>.moe") where the file has one; none where only the
    // other family has one (the pooled rows would be mostly that family's); else the quantity's.
    const error_band* find(const std::string& quantity, bool moe) const {
        if (const auto it = bands.find(quantity + (moe ? ".moe" : ".dense")); it != bands.end()) return &it->second;
        if (bands.count(quantity + (moe ? ".dense" : ".moe"))) return nullptr;
        return find(quantity);
    }
};

// The range of the measured value behind a prediction `v` of a quantity with errors `b` (v > 0, p10 and p90 > -1).
inline std::pair<double, double> measured_range(double v, const error_band& b) {
    return {v / (1.0 + b.p90), v / (1.0 + b.p10)};
}

// The same for a quantity inversely proportional to the banded one (tokens per second or MFU of a step time):
// measured = v x (1 + e).
inline std::pair<double, double> measured_range_inverse(double v, const error_band& b) {
    return {v * (1.0 + b.p10), v * (1.0 + b.p90)};
}

}  // namespace capplan
