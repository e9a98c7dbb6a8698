#include "capplan/estimate.hpp"

#include "capplan/analysis/sharding.hpp"

#include "capplan/units_parse.hpp"

namespace capplan {


estimate_result estimate(const scenario& s, const catalog& cat) {
    estimate_result r;
    r.catalog_version = cat.version();

    const model_spec& m = s.model;
    r.model.name = m.name;
    r.model.model_type = m.model_type;
    r.model.source = m.source;
    r.model.breakdown = count_parameters(m);
    r.model.parameters = r.model.breakdown.total();
    r.model.active_parameters = r.model.breakdown.active();

    const parallelism_spec& par = s.parallelism;
    r.system = {s.system.preset, s.system.accelerator.name, s.system.count, s.system.per_node, s.system.nodes(),
                s.precision.weights.name, s.precision.kv_cache.name, par.tp, par.pp, par.dp, par.cp, par.ep};

    // Weights per device: the largest pipeline stage's share on one tensor/expert-parallel rank.
    const weight_sharding shards = shard_weights(m, par);
    r.memory.weights_total = weight_bytes(r.model.breakdown, s.precision.weights);
    r.memory.weights = device_weight_bytes(shards.per_device(), s.precision.weights);
    r.memory.capacity = s.system.accelerator.memory_capacity;
    r.notes.push_back("weights: block matrices in " + s.precision.weights.name + " (" +
                      format_number(s.precision.weights.bytes_per_element()) +
                      " B/parameter incl. block scales); embeddings, LM head, norms and routers in 16-bit when quantized");
    for (const auto& problem : shards.problems) {
        r.feasible = false;
        r.reasons.push_back(problem);
    }
    if (r.memory.capacity && *r.memory.weights > *r.memory.capacity) {
        r.feasible = false;
        r.reasons.push_back("weights alone need " + format(*r.memory.weights) + " per device, more than the " +
                            format(*r.memory.capacity) + " of one " + s.system.accelerator.name);
    }
    const number_format& compute = s.precision.compute;
    const peak_rate peak = s.system.accelerator.peak(compute.peak_key);
    if (peak.status == peak_rate::state::unsupported) {
        r.feasible = false;
        r.reasons.push_back(s.system.accelerator.name + " has no " + compute.peak_key +
                            " matrix units; compute in another format (e.g. precision.compute \"bf16\" with " +
                            s.precision.weights.name + " weights dequantized on the fly)");
    } else if (peak.status == peak_rate::state::unknown) {
        r.notes.push_back("the catalog does not know " + s.system.accelerator.name + "'s " + compute.peak_key +
                          " peak; speed estimates for it need a calibration or an inline value");
    }
    return r;
}

}  // namespace capplan
