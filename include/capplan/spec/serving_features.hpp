// Serving features that change how much work a request costs: speculative decoding (tokens gained per
// target step) and prefix caching (prompt tokens not computed again). The scenario, the roofline
// estimate, the memory model and the serving simulation all read them from here.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "capplan/spec/model_spec.hpp"

namespace capplan {

// Speculative decoding (Leviathan et al. 2023, arXiv:2211.17192; Chen et al. 2023, arXiv:2302.01318):
// a drafter proposes `tokens` tokens, the target model checks them and one more position in a single
// step, and keeps the accepted run plus its own next token.
inline const std::vector<std::string> speculative_methods{"draft", "eagle", "mtp", "ngram"};
struct speculative_spec {
    // draft: a smaller model of the same vocabulary (draft_model); eagle: an EAGLE head (one decoder
    // layer over the target's features, arXiv:2401.15077); mtp: the model's own multi-token-prediction
    // module (one more layer, DeepSeek-V3 arXiv:2412.19437 §2.2); ngram: prompt lookup, no model.
    std::string method;
    std::optional<model_spec> draft_model;
    std::int64_t tokens = 0;   // k: tokens drafted per step
    double acceptance = 0.0;   // a: the chance that a drafted token is accepted, given the ones before it were
    // Expected tokens a request gains per target step: 1 + a + ... + a^k = (1 - a^(k+1)) / (1 - a)
    // (Leviathan et al. 2023, eq. 1, with i.i.d. acceptance).
    double tokens_per_step() const {
        double sum = 0.0, term = 1.0;
        for (std::int64_t i = 0; i <= tokens; ++i, term *= acceptance) sum += term;
        return sum;
    }
};

// Prefix caching (vLLM automatic prefix caching, SGLang RadixAttention arXiv:2312.07104): prompt tokens
// whose KV blocks are already cached are not computed again, and a prefix every request shares is
// stored once.
struct prefix_cache_spec {
    double hit_rate = 0.0;                    // share of each prompt's tokens found in the cache
    std::int64_t shared_prefix_tokens = 0;    // a prefix common to every request (a system prompt)
    // With KV offload: hits beyond the shared prefix (earlier turns, evicted between them) come back
    // from the offload tier over the host link rather than from GPU memory.
    bool hits_offloaded = false;
    // Prompt tokens of an `input`-token prompt served from the cache: the larger of the hit rate's
    // share and the shared prefix, and never the last one (an engine recomputes it for its logits,
    // vLLM v1/core/kv_cache_manager.py get_computed_blocks).
    std::int64_t cached_tokens(std::int64_t input) const {
        const double by_rate = std::floor(hit_rate * static_cast<double>(input));
        const std::int64_t hits = std::max(static_cast<std::int64_t>(by_rate), std::min(shared_prefix_tokens, input));
        return std::clamp<std::int64_t>(hits, 0, std::max<std::int64_t>(0, input - 1));
    }
    // Of an `input`-token prompt's hits, those reloaded from the offload tier (the shared prefix stays in GPU memory).
    std::int64_t reloaded_tokens(std::int64_t input) const {
        if (!hits_offloaded) return 0;
        const std::int64_t hits = cached_tokens(input);
        return hits - std::min(hits, shared_prefix_tokens);
    }
    // Tokens of the shared prefix stored once for an `input`-token prompt: whole blocks only (vLLM hashes
    // full blocks), and never the block of the prompt's last token (recomputed, so the request's own).
    std::int64_t shared_tokens(std::int64_t input, std::int64_t block_tokens) const {
        const std::int64_t b = std::max<std::int64_t>(1, block_tokens);
        return std::clamp<std::int64_t>(std::min(shared_prefix_tokens, input - 1), 0, input) / b * b;
    }
};

// The drafter an EAGLE head or an MTP module is: one decoder layer of the target's own shape (the
// last layer's kind: DeepSeek-V3's MTP module is an MoE layer), reading the target's embeddings and
// LM head; it adds a 2h x h projection that joins the token embedding to the target's hidden state
// (EAGLE arXiv:2401.15077 §4.1, DeepSeek-V3 arXiv:2412.19437 §2.2 M_k).
inline model_spec drafter_head(const model_spec& target, const std::string& method) {
    model_spec head = target;
    head.name = target.name + " " + method + " head";
    head.layers = 1;
    const std::size_t last = static_cast<std::size_t>(std::max<std::int64_t>(0, target.layers - 1));
    head.moe_layer = {last < target.moe_layer.size() && target.moe_layer[last]};
    head.sliding_layer = {false};
    head.linear_layer = {false};  // the head is a full-attention layer with its feed-forward
    head.mixer_free_layer = {false};
    head.ffn_free_layer = {false};
    head.vision_parameters = 0;
    return head;
}

}  // namespace capplan
