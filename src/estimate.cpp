#include "capplan/estimate.hpp"

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

    // Weights per device, sharded evenly: every weight over tp x pp, routed experts also over ep.
    // (Uneven pipeline stages and replicated dimensions are refined by the memory model.)
    const parameter_breakdown& p = r.model.breakdown;
    const data_size total = weight_bytes(p, s.precision.weights);
    parameter_breakdown experts_only;
    experts_only.routed_experts = p.routed_experts;
    const data_size experts = weight_bytes(experts_only, s.precision.weights);
    const double mp = static_cast<double>(par.tp) * par.pp;
    r.memory.weights_total = total;
    r.memory.weights = (total - experts) / mp + experts / (mp * par.ep);
    r.memory.capacity = s.system.accelerator.memory_capacity;
    r.notes.push_back("weights: block matrices in " + s.precision.weights.name + " (" +
                      format_number(s.precision.weights.bytes_per_element()) +
                      " B/parameter incl. block scales); embeddings, LM head, norms and routers in 16-bit when quantized");
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
    if (m.heads % par.tp != 0) {
        r.feasible = false;
        r.reasons.push_back("tp = " + std::to_string(par.tp) + " does not divide the " + std::to_string(m.heads) +
                            " attention heads of " + m.name);
    }
    if (m.layers < par.pp) {
        r.feasible = false;
        r.reasons.push_back("pp = " + std::to_string(par.pp) + " exceeds the " + std::to_string(m.layers) + " layers");
    }
    if (m.is_moe() && m.moe.routed_experts % par.ep != 0) {
        r.feasible = false;
        r.reasons.push_back("ep = " + std::to_string(par.ep) + " does not divide the " +
                            std::to_string(m.moe.routed_experts) + " routed experts");
    }
    return r;
}

}  // namespace capplan
