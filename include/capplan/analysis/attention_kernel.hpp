// A training attention kernel's published rate (catalog efficiency.attention_kernels; training.attention_kernel):
// FlashAttention v1, v2 and Tri Dao's Triton port as FlashAttention-2's benchmark measured them forward + backward
// (Dao 2023, arXiv:2307.08691 §4.1, Fig. 4 and 7). The attention core of a training step runs at that rate instead
// of the matrix units' efficiency ("fused", the default: FlashAttention-3, cuDNN and Transformer Engine kernels).
#pragma once

#include <cmath>
#include <optional>
#include <vector>

#include "capplan/spec/scenario.hpp"

namespace capplan {

// The rate at (head_dim, seq_len): linear in the head dimension between the measured ones around it, linear in log2
// of the sequence between the measured lengths; clamped at the ends (no extrapolation). `points` sorted by head
// dimension, then sequence (as the catalog reader leaves them), not empty.
inline flop_rate attention_kernel_rate(const std::vector<attention_rate_point>& points, double head_dim, double seq_len) {
    // The rate along the sequence at one measured head dimension d.
    auto along_sequence = [&](double d) {
        const attention_rate_point* below = nullptr;
        for (const auto& p : points) {
            if (p.head_dim != d) continue;
            if (p.seq_len >= seq_len) {
                if (!below || p.seq_len == seq_len) return p.rate.si();
                const double w = std::log2(seq_len / below->seq_len) / std::log2(p.seq_len / below->seq_len);
                return below->rate.si() + w * (p.rate.si() - below->rate.si());
            }
            below = &p;
        }
        return below->rate.si();
    };
    double lo = points.front().head_dim, hi = points.back().head_dim;
    for (const auto& p : points) {
        if (p.head_dim <= head_dim) lo = p.head_dim;
        if (p.head_dim >= head_dim && p.head_dim < hi) hi = p.head_dim;
    }
    if (head_dim >= points.back().head_dim) lo = hi = points.back().head_dim;
    if (head_dim <= points.front().head_dim) lo = hi = points.front().head_dim;
    const double r_lo = along_sequence(lo), r_hi = along_sequence(hi);
    const double w = hi > lo ? (head_dim - lo) / (hi - lo) : 0.0;
    return (r_lo + w * (r_hi - r_lo)) * units::FLOP / units::s;
}

// The head dimension an attention kernel runs at: the model's, or MLA's query-key width (no-PE + RoPE parts).
inline double attention_head_dim(const model_spec& m) {
    return static_cast<double>(m.mla ? m.mla_dims.qk_nope_head_dim + m.mla_dims.qk_rope_head_dim : m.head_dim);
}

// The sequence one kernel call runs over: ring context parallelism splits each sequence into cp chunks a rank
// attends block by block; all-gather and all-to-all (Ulysses) context parallelism attend whole sequences; packed samples
// attend within themselves (a variable-length kernel over samples of packed_sample_tokens). Sliding-window layers are
// looked up at the same length (one rate a step).
inline double attention_kernel_seq_len(const scenario& s) {
    const training_spec& t = *s.training;
    const double seq = static_cast<double>(t.packed_sample_tokens > 0 ? t.packed_sample_tokens : t.seq_len);  // <= seq_len (read_training)
    return s.parallelism.cp > 1 && s.parallelism.cp_algorithm == "ring" ? seq / s.parallelism.cp : seq;
}

// The published rate of the scenario's training.attention_kernel at its model's head dimension and its sequence; none
// for "fused" (the matrix units' efficiency). The scenario reader has checked that the accelerator has the kernel.
inline std::optional<flop_rate> training_attention_rate(const scenario& s) {
    if (!s.training || s.training->attention_kernel == "fused") return std::nullopt;
    const auto& rates = s.system.accelerator.attention_kernel_rates.at(s.training->attention_kernel);
    return attention_kernel_rate(rates.points, attention_head_dim(s.model), attention_kernel_seq_len(s));
}

}  // namespace capplan
