#include <nlohmann/json.hpp>

#include "capplan/analysis/bom.hpp"
#include "capplan/report/result.hpp"
#include "capplan/report/result_object.hpp"

namespace capplan {

namespace {
using json = nlohmann::ordered_json;

template <class Q>
void put(json& j, const char* key, const std::optional<Q>& q) {
    if (q) j[key] = q->si();
}
template <class Q>
json si_or_null(const std::optional<Q>& q) {
    return q ? json(q->si()) : json(nullptr);
}

json breakdown_json(const parameter_breakdown& b) {
    return {{"embedding", b.embedding},   {"position_embedding", b.position_embedding},
            {"lm_head", b.lm_head},       {"attention", b.attention},
            {"dense_mlp", b.dense_mlp},   {"routed_experts", b.routed_experts},
            {"shared_experts", b.shared_experts}, {"router", b.router},
            {"norms", b.norms}, {"vision", b.vision}};
}

// A money figure as "<key>" and "<key>_range": [low, high].
void put_usd(json& j, const std::string& key, const usd_estimate& e) {
    j[key] = e.usd;
    j[key + "_range"] = json::array({e.low, e.high});
}

json work_cost_json(const work_cost& w) {
    json j = json::object();
    if (w.own) put_usd(j, "own_usd", *w.own);
    if (w.rent) put_usd(j, "rent_usd", *w.rent);
    j["energy_kwh"] = w.facility_energy.in(units::kWh);
    if (w.emissions_kg) j["emissions_kg_co2e"] = *w.emissions_kg;
    return j;
}

// A site figure's source as "source (date)", or "the scenario" for an override.
std::string source_of(const sourced_number& n) {
    return n.from.date.empty() ? n.from.source : n.from.source + " (" + n.from.date + ")";
}

// The inputs a spreadsheet recomputes the cost from, keyed as a scenario's cost object names them.
json cost_inputs_json(const cost_inputs& in) {
    const site_spec& s = in.site;
    json j = {{"unit_devices", in.unit_devices}, {"other_capex_usd", in.other_capex_usd},
              {"other_power_w", in.other_power.si()},
              {"utilization", in.utilization}, {"commitment", in.commitment}};
    if (in.unit_price) j["unit_price_usd_range"] = json::array({in.unit_price->low, in.unit_price->high});
    if (in.unit_power) {
        j["unit_power_w"] = in.unit_power->si();
        j["unit_power_basis"] = in.unit_power_measured ? "measured" : "max";
        j["unit_provisioned_power_w"] = in.unit_provisioned->si();
    }
    json sources = json::object();
    for (const auto& [key, n] : {std::pair<const char*, const sourced_number*>{"pue", &s.pue},
                                 {"usd_per_kwh", &s.usd_per_kwh},
                                 {"hosting_usd_per_kw_month", &s.hosting_usd_per_kw_month},
                                 {"depreciation_years", &s.depreciation_years},
                                 {"cost_of_capital", &s.cost_of_capital},
                                 {"support_per_year", &s.support_per_year}}) {
        j[key] = n->value;
        sources[key] = source_of(*n);
    }
    if (s.carbon_kg_per_kwh) {
        j["carbon_kg_per_kwh"] = s.carbon_kg_per_kwh->value;
        sources["carbon_kg_per_kwh"] = source_of(*s.carbon_kg_per_kwh);
    }
    j["sources"] = sources;
    return j;
}

json cost_json(const cost_result& c) {
    json j = {{"currency", "USD"}, {"site", c.site}, {"preset", c.preset}, {"devices", c.devices},
              {"facility_power_w", c.facility_power.si()}, {"used_share", c.used_share},
              {"inputs", cost_inputs_json(c.inputs)}};
    if (c.own) {
        const ownership_cost& o = *c.own;
        json own = {{"units", o.units}, {"used_share", o.used_share}};
        put_usd(own, "capex_usd", o.capex);
        put_usd(own, "usd_per_hour", o.per_hour);
        own["capital_usd_per_hour"] = o.capital_per_hour;
        own["energy_usd_per_hour"] = o.energy_per_hour;
        own["hosting_usd_per_hour"] = o.hosting_per_hour;
        own["support_usd_per_hour"] = o.support_per_hour;
        own["it_power_w"] = o.it_power.si();
        own["provisioned_power_w"] = o.provisioned_power.si();
        j["own"] = own;
    }
    if (c.rent) {
        json rent = json::object();
        put_usd(rent, "usd_per_hour", c.rent->per_hour);
        rent["usd_per_device_hour"] = c.rent->usd_per_device_hour;
        rent["offers"] = c.rent->offers;
        j["rent"] = rent;
    }
    if (c.per_million_output_tokens) j["per_million_output_tokens"] = work_cost_json(*c.per_million_output_tokens);
    if (c.per_billion_tokens) j["per_billion_tokens"] = work_cost_json(*c.per_billion_tokens);
    if (c.per_run) j["per_run"] = work_cost_json(*c.per_run);
    j["notes"] = c.notes;
    return j;
}

json link_json(const link_spec& l) {
    return {{"name", l.name}, {"kind", l.kind}, {"scope", l.scope},
            {"bandwidth_per_direction_bytes_per_s", si_or_null(l.bandwidth_per_direction)},
            {"latency_s", si_or_null(l.latency)}, {"source", l.source}};
}

json accelerator_json(const accelerator_spec& a) {
    json peaks = json::object();
    for (const auto& [k, p] : a.peak_dense_flops)
        peaks[k] = p.status == peak_rate::state::known ? json(p.value.si())
                 : p.status == peak_rate::state::unsupported ? json("unsupported") : json(nullptr);
    return {{"name", a.name}, {"vendor", a.vendor},
            {"memory_bytes", si_or_null(a.memory_capacity)},
            {"memory_visible_bytes", si_or_null(a.memory_visible)},
            {"memory_bandwidth_bytes_per_s", si_or_null(a.memory_bandwidth)},
            {"peak_dense_flops_per_s", peaks}, {"tdp_w", si_or_null(a.tdp)},
            {"scale_up_link", a.scale_up_link},
            {"scale_up_bandwidth_per_direction_bytes_per_s", si_or_null(a.scale_up_bandwidth_per_direction)},
            {"host_link", a.host_link}, {"source", a.source}};
}
}  // namespace

std::string to_json(const model_spec& m, int indent) {
    const auto b = count_parameters(m);
    json j = {{"name", m.name}, {"model_type", m.model_type}, {"hidden_size", m.hidden},
              {"num_hidden_layers", m.layers}, {"num_attention_heads", m.heads},
              {"num_key_value_heads", m.kv_heads}, {"head_dim", m.head_dim},
              {"intermediate_size", m.intermediate}, {"vocab_size", m.vocab},
              {"max_position_embeddings", m.max_position ? json(m.max_position) : json(nullptr)},
              {"tie_word_embeddings", m.tied_embeddings}, {"gated_mlp", m.gated_mlp},
              {"attention", m.mla ? "mla" : (m.kv_heads == m.heads ? "mha" : (m.kv_heads == 1 ? "mqa" : "gqa"))},
              {"sliding_window", m.sliding_window ? json(m.sliding_window) : json(nullptr)},
              {"sliding_layers", m.sliding_layer_count()},
              {"local_attention", m.sliding_window ? json(m.chunked_local ? "chunked" : "sliding") : json(nullptr)},
              {"linear_attention_layers", m.linear_layer_count()},
              {"sparse_attention_topk", m.sparse.active() ? json(m.sparse.topk) : json(nullptr)},
              {"moe", m.is_moe() ? json{{"routed_experts", m.moe.routed_experts},
                                          {"experts_per_token", m.moe.experts_per_token},
                                          {"shared_experts", m.moe.shared_experts},
                                          {"expert_intermediate_size", m.moe.expert_intermediate},
                                          {"moe_layers", m.moe_layer_count()}}
                                  : json(nullptr)},
              {"parameters", b.total()}, {"active_parameters", b.active()},
              {"parameters_breakdown", breakdown_json(b)}, {"source", m.source}};
    if (m.mla)
        j["mla"] = {{"q_lora_rank", m.mla_dims.q_lora_rank}, {"kv_lora_rank", m.mla_dims.kv_lora_rank},
                    {"qk_nope_head_dim", m.mla_dims.qk_nope_head_dim}, {"qk_rope_head_dim", m.mla_dims.qk_rope_head_dim},
                    {"v_head_dim", m.mla_dims.v_head_dim}};
    return j.dump(indent);
}

std::string to_json(const accelerator_spec& a, int indent) { return accelerator_json(a).dump(indent); }

std::string to_json(const system_spec& s, int indent) {
    json j = {{"preset", s.preset.empty() ? json(nullptr) : json(s.preset)},
              {"accelerator", accelerator_json(s.accelerator)}, {"count", s.count},
              {"per_node", s.per_node}, {"nodes", s.nodes()},
              {"scale_up", s.scale_up ? link_json(*s.scale_up) : json(nullptr)},
              {"scale_up_topology", s.scale_up_topology}, {"scale_up_domain", s.scale_up_domain}};
    if (s.scale_out)
        j["scale_out"] = {{"link", link_json(s.scale_out->link)}, {"nics_per_node", s.scale_out->nics_per_node},
                          {"topology", s.scale_out->topology}, {"oversubscription", s.scale_out->oversubscription},
                          {"pod_nodes", s.scale_out->pod_nodes}};
    else
        j["scale_out"] = nullptr;
    if (s.storage)
        j["storage"] = {{"name", s.storage->name}, {"kind", s.storage->kind}, {"scope", s.storage->scope},
                        {"read_bandwidth_bytes_per_s", si_or_null(s.storage->read_bandwidth)},
                        {"write_bandwidth_bytes_per_s", si_or_null(s.storage->write_bandwidth)},
                        {"aggregate_read_bandwidth_bytes_per_s", si_or_null(s.storage->aggregate_read_bandwidth)},
                        {"aggregate_write_bandwidth_bytes_per_s", si_or_null(s.storage->aggregate_write_bandwidth)},
                        {"source", s.storage->source}};
    else
        j["storage"] = nullptr;
    j["storage_network_bytes_per_s"] = si_or_null(s.storage_network);
    return j.dump(indent);
}

std::string to_json(const cost_result& c, int indent) { return cost_json(c).dump(indent); }

std::string to_json(const bom_result& b, int indent) {
    json lines = json::array();
    for (const bom_line& l : b.lines) {
        json line = {{"item", l.item}, {"model", l.model}, {"count", l.count},
                     {"power_w", l.power_each ? json(l.power_each->si()) : json(nullptr)}};
        if (l.usd_each) {
            line["usd"] = l.usd_each->mid();
            line["usd_range"] = json::array({l.usd_each->low, l.usd_each->high});
        } else {
            line["usd"] = nullptr;
        }
        line["in_systems"] = l.in_systems;
        line["quoted"] = l.quoted;
        lines.push_back(line);
    }
    json j = {{"preset", b.preset}, {"devices", b.devices}, {"units", b.units}, {"nodes", b.nodes},
              {"racks", b.racks ? json(*b.racks) : json(nullptr)}};
    if (b.fabric) {
        const fat_tree_counts& t = *b.fabric;
        j["fabric"] = {{"tiers", t.tiers},           {"leaf", t.leaf},
                       {"spine", t.spine},           {"core", t.core},
                       {"node_links", t.node_links}, {"leaf_spine_links", t.leaf_spine_links},
                       {"spine_core_links", t.spine_core_links}, {"leaf_down_ports", t.leaf_down},
                       {"leaf_up_ports", t.leaf_up},          {"oversubscription", t.oversubscription}};
        if (t.pods > 0)
            j["fabric"].update({{"pods", t.pods}, {"pod_nodes", t.pod_nodes}, {"spine_down_ports", t.spine_down},
                                {"spine_up_ports", t.spine_up}});
    }
    j["lines"] = lines;
    j["known_power_w"] = b.known_power.si();
    if (b.known_usd) {
        j["known_usd"] = b.known_usd->mid();
        j["known_usd_range"] = json::array({b.known_usd->low, b.known_usd->high});
    }
    j["currency"] = "USD";
    j["notes"] = b.notes;
    return j.dump(indent);
}

nlohmann::ordered_json result_object(const estimate_result& r) {
    json j;
    j["model"] = {{"name", r.model.name},
                  {"model_type", r.model.model_type},
                  {"parameters", r.model.parameters},
                  {"active_parameters", r.model.active_parameters},
                  {"parameters_breakdown", breakdown_json(r.model.breakdown)},
                  {"source", r.model.source}};
    const auto& s = r.system;
    j["system"] = {{"accelerator", s.accelerator}, {"count", s.count},  {"per_node", s.per_node},
                   {"nodes", s.nodes},             {"weights_format", s.weights_format},
                   {"kv_cache_format", s.kv_cache_format},
                   {"parallelism", {{"tp", s.tp}, {"pp", s.pp}, {"dp", s.dp}, {"cp", s.cp}, {"ep", s.ep}}}};
    if (!s.preset.empty()) j["system"]["preset"] = s.preset;
    if (s.attention_dp) j["system"]["parallelism"]["attention_dp"] = true;
    j["system"]["storage_network_bytes_per_s"] = si_or_null(s.storage_network);
    j["system"]["storage_network_over"] = s.storage_network ? json(s.storage_network_over) : json(nullptr);

    json mem = json::object();
    put(mem, "per_device_bytes", r.memory.per_device);
    put(mem, "capacity_bytes", r.memory.capacity);
    put(mem, "visible_bytes", r.memory.visible);
    if (r.memory.fits) mem["fits"] = *r.memory.fits;
    put(mem, "weights_bytes", r.memory.weights);
    put(mem, "weights_total_bytes", r.memory.weights_total);
    put(mem, "kv_cache_bytes", r.memory.kv_cache);
    put(mem, "kv_cache_bytes_per_token", r.memory.kv_cache_per_token);
    put(mem, "kv_offloaded_bytes", r.memory.kv_offloaded);
    put(mem, "activations_bytes", r.memory.activations);
    put(mem, "logits_bytes", r.memory.logits);
    put(mem, "gradients_bytes", r.memory.gradients);
    put(mem, "optimizer_bytes", r.memory.optimizer);
    put(mem, "master_weights_bytes", r.memory.master_weights);
    put(mem, "host_offload_bytes", r.memory.host_offload);
    put(mem, "overhead_bytes", r.memory.overhead);
    put(mem, "usable_bytes", r.memory.usable);
    if (r.memory.stage) mem["pipeline_stage"] = *r.memory.stage;
    j["memory"] = mem;
    if (r.inference) {
        const auto& i = *r.inference;
        json inf = json::object();
        auto num = [&](const char* k, const auto& v) {
            if (v) inf[k] = *v;
        };
        num("ttft_s", i.ttft_s);
        num("tpot_s", i.tpot_s);
        num("e2e_latency_s", i.e2e_latency_s);
        num("throughput_tokens_per_s", i.throughput_tokens_per_s);
        num("throughput_tokens_per_s_per_device", i.throughput_tokens_per_s_per_device);
        num("tokens_per_s_per_user", i.tokens_per_s_per_user);
        num("batch", i.batch);
        num("context_tokens", i.context_tokens);
        num("max_batch", i.max_batch);
        num("max_context_tokens", i.max_context_tokens);
        num("smallest_tp", i.smallest_tp);
        num("ttft_p90_s", i.ttft_p90_s);
        num("ttft_p99_s", i.ttft_p99_s);
        num("tpot_p90_s", i.tpot_p90_s);
        num("tpot_p99_s", i.tpot_p99_s);
        num("e2e_p99_s", i.e2e_p99_s);
        num("ttft_mean_s", i.ttft_mean_s);
        num("tpot_mean_s", i.tpot_mean_s);
        num("e2e_mean_s", i.e2e_mean_s);
        num("itl_s", i.itl_s);
        num("itl_mean_s", i.itl_mean_s);
        num("itl_p90_s", i.itl_p90_s);
        num("itl_p99_s", i.itl_p99_s);
        num("busy_fraction", i.busy_fraction);
        num("kv_occupancy_mean", i.kv_occupancy_mean);
        num("preemptions", i.preemptions);
        num("simulated_requests", i.simulated_requests);
        if (!i.method.empty()) inf["method"] = i.method;
        if (!i.engine.empty()) inf["engine"] = i.engine;
        num("prefill_steps", i.prefill_steps);
        if (i.speculative_tokens_per_step) {
            json sp = {{"tokens_per_step", *i.speculative_tokens_per_step}, {"speedup", *i.speculative_speedup}};
            if (i.speculative_breakeven_batch) sp["breakeven_batch"] = *i.speculative_breakeven_batch;
            inf["speculative"] = sp;
        }
        if (i.prefill_replicas) {
            json d = {{"prefill_replicas", *i.prefill_replicas}, {"decode_replicas", *i.decode_replicas},
                      {"kv_transfer_s", *i.kv_transfer_s}};
            if (i.prefill_utilization) d["prefill_utilization"] = *i.prefill_utilization;
            if (i.decode_utilization) d["decode_utilization"] = *i.decode_utilization;
            inf["disaggregation"] = d;
        }
        if (i.kv_reload_bytes_per_s)
            inf["kv_offload"] = {{"reload_bytes_per_s", *i.kv_reload_bytes_per_s}, {"reload_per_step_s", *i.kv_reload_per_step_s}};
        if (i.prefix_cached_tokens)
            inf["prefix_cache"] = {{"cached_tokens", *i.prefix_cached_tokens}, {"computed_tokens", *i.prefix_computed_tokens}};
        j["inference"] = inf;
    }

    if (r.training) {
        const auto& t = *r.training;
        json terms = json::array();
        for (const auto& [term, time, exposed] : t.breakdown)
            terms.push_back({{"term", term}, {"time_s", time}, {"exposed_s", exposed}});
        json tr = {{"step_time_s", t.step_time_s}, {"tokens_per_s", t.tokens_per_s}, {"mfu", t.mfu}, {"hfu", t.hfu},
                   {"model_tflops_per_device", t.model_tflops_per_device}, {"micro_batches", t.micro_batches},
                   {"trainable_parameters", t.trainable_parameters},
                   {"breakdown", terms}};
        if (t.time_to_train_s) tr["time_to_train_s"] = *t.time_to_train_s;
        if (t.gpu_hours) tr["gpu_hours"] = *t.gpu_hours;
        if (t.cost) tr["cost"] = *t.cost;
        if (t.data_read_bytes_per_s) {
            tr["data"] = {{"read_bytes_per_s", *t.data_read_bytes_per_s}, {"bottleneck", t.data_bottleneck}};
            if (t.data_supply_bytes_per_s) tr["data"]["supply_bytes_per_s"] = *t.data_supply_bytes_per_s;
            if (t.data_wait_fraction) tr["data"]["wait_fraction"] = *t.data_wait_fraction;
        }
        j["training"] = tr;
    }
    if (r.flops) {
        json f = json::object();
        put(f, "prefill_flops", r.flops->prefill);
        put(f, "decode_token_flops", r.flops->decode_token);
        put(f, "model_step_flops", r.flops->model_step);
        put(f, "hardware_step_flops", r.flops->hardware_step);
        j["flops"] = f;
    }
    if (r.checkpoint) {
        const auto& c = *r.checkpoint;
        auto io = [&](double v) { return c.io ? json(v) : json(nullptr); };
        j["checkpoint"] = {{"size_bytes", c.size_bytes}, {"save_s", io(c.save_s)}, {"restore_s", io(c.restore_s)},
                           {"stall_s", io(c.stall_s)}, {"bottleneck", c.io ? json(c.bottleneck) : json(nullptr)},
                           {"interval_s", io(c.interval_s)}, {"mtbf_s", c.mtbf_s}, {"goodput", io(c.goodput)},
                           {"failures_per_day", c.failures_per_day}};
    }
    if (r.roofline) {
        const auto& rf = *r.roofline;
        json ops = json::array();
        for (const auto& o : rf.ops)
            ops.push_back({{"phase", o.phase}, {"op", o.op}, {"flops", o.flops}, {"bytes", o.bytes},
                           {"time_s", o.time_s}, {"bound", o.compute_bound ? "compute" : "memory"}});
        j["roofline"] = {{"peak_flops_per_s", rf.peak_flops_per_s}, {"memory_bytes_per_s", rf.memory_bytes_per_s},
                         {"gemm_efficiency", rf.gemm_efficiency}, {"memory_efficiency", rf.memory_efficiency},
                         {"ops", ops}};
    }
    if (r.cold_start) {
        json chain = json::array();
        for (const auto& c : r.cold_start->chain)
            chain.push_back({{"stage", c.stage}, {"time_s", c.time.si()}, {"utilization", c.utilization}});
        j["cold_start"] = {{"total_s", r.cold_start->total.si()}, {"load_s", r.cold_start->load.si()},
                           {"chain", chain}, {"bottleneck", r.cold_start->bottleneck}};
    }
    if (!r.chain.empty()) {
        json chain = json::array();
        for (const auto& c : r.chain)
            chain.push_back({{"stage", c.stage}, {"time_s", c.time.si()}, {"utilization", c.utilization}});
        j["chain"] = chain;
    }
    for (const auto& [key, range] : r.ranges) {  // "section.key": [low, high] as "<key>_range" in its section
        const auto dot = key.find('.');
        json& section = j[key.substr(0, dot)];
        section[key.substr(dot + 1) + "_range"] = json::array({range.first, range.second});
    }
    if (r.cost) j["cost"] = cost_json(*r.cost);
    if (r.bottleneck) j["bottleneck"] = *r.bottleneck;
    if (r.feasible) j["feasible"] = *r.feasible;
    if (!r.reasons.empty()) j["reasons"] = r.reasons;
    if (!r.warnings.empty()) j["warnings"] = r.warnings;
    j["notes"] = r.notes;
    if (!r.efficiency_table.empty()) j["efficiency_table"] = r.efficiency_table;
    j["catalog_version"] = r.catalog_version;
    return j;
}

std::string to_json(const estimate_result& r, int indent) { return result_object(r).dump(indent); }

}  // namespace capplan
