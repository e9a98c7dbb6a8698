#include "capplan/analysis/inference_memory.hpp"

#include "capplan/spec/engine_profile.hpp"

namespace capplan {

runtime_reserve default_runtime_reserve(int model_parallel_ranks) {
    using namespace units;
    runtime_reserve r;
    // CUDA context with lazy module loading (the default since CUDA 12.2 on Linux): 287,047,680 B
    // measured in pytorch/pytorch PR #86509 (274 MiB).
    r.cuda_context = 287'047'680.0 * B;
    // cuBLAS/cuBLASLt workspace: 32 MiB recommended on Hopper, 4 MiB elsewhere (cuBLAS docs,
    // cublasSetWorkspace, as quoted in pytorch/pytorch PR #120925); the larger is assumed.
    r.workspaces = 32.0 * MiB;
    // NCCL communicators and custom all-reduce buffers with tp x pp > 1: 0.40 GiB measured as the
    // growth of vLLM's non-torch memory from TP=1 (0.14 GiB) to TP=2 (0.54 GiB), Qwen3-32B on H100
    // (llm-d/llm-d-benchmark config_explorer/empirical-vllm-memory-results.md @4f4d449).
    if (model_parallel_ranks > 1) r.communication = 0.40 * GiB;
    // CUDA graphs are captured after the cache is allocated, inside the (1 - utilization) headroom
    // (vllm/v1/worker/gpu_worker.py @35d5cda), so they take nothing from this budget.
    return r;
}

engine_defaults default_engine_limits(const accelerator_spec& a, const std::string& engine) {
    const engine_limits_tier& t = find_engine_profile(engine, "/inference/engine").limits(a);
    return {t.step_tokens, t.max_num_seqs};
}

inference_setup inference_setup::from(const scenario& s) { return from(s, shard_weights(s.model, s.parallelism)); }

inference_setup inference_setup::from(const scenario& s, const weight_sharding& weights) {
    inference_setup out;
    out.model = &s.model;
    out.parallelism = s.parallelism;
    out.precision = s.precision;
    out.capacity = s.system.accelerator.usable_memory().value_or(data_size{});
    const inference_spec& inf = *s.inference;
    out.memory_utilization = inf.memory_utilization;
    out.block_tokens = inf.kv_block_tokens;
    const engine_defaults d = default_engine_limits(s.system.accelerator, inf.engine);
    out.step_tokens = inf.prefill_chunk_tokens > 0 ? inf.prefill_chunk_tokens : d.step_tokens;
    out.max_num_seqs = inf.max_num_seqs > 0 ? inf.max_num_seqs : d.max_num_seqs;
    out.reserve_output = inf.kv_admission == "reserve";
    out.chunked_prefill = inf.chunked_prefill;
    out.reserve = inf.runtime_reserve.value_or(default_runtime_reserve(s.parallelism.tp * s.parallelism.pp).total());
    out.weights = weights;
    if (inf.prefix_cache) out.shared_prefix_tokens = inf.prefix_cache->shared_tokens(inf.input_tokens, out.block_tokens);
    if (inf.kv_offload)
        out.offload_capacity = inf.kv_offload->capacity / static_cast<double>(s.system.per_node);  // each device of a node its share
    if (inf.speculative && inf.speculative->draft_model) {
        const speculative_spec& sp = *inf.speculative;
        const model_spec& d = *sp.draft_model;
        out.drafter = &d;
        parallelism_spec p = s.parallelism;
        p.pp = 1;
        device_parameters params;
        if (sp.method == "draft") {
            params = shard_weights(d, p).per_device();  // a whole model: its embeddings and head too
        } else {
            // A head shares the target's embeddings and LM head; it adds its layer and the 2h x h joining
            // projection (serving_features.hpp).
            params = detail::layer_on_device(d, 0, p);
            params.block_linear += 2.0 * static_cast<double>(d.hidden) * static_cast<double>(d.hidden) / p.attention_tp();
        }
        out.drafter_weights = device_weight_bytes(params, s.precision.weights,
                                                  s.precision.expert_weights ? &*s.precision.expert_weights : nullptr);
    }
    return out;
}

}  // namespace capplan
