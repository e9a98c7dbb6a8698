// The catalog in models/: one JSON file per model, accelerator, link, system, storage tier and site.
// Loaded once, validated strictly (unknown keys and broken cross-references are errors with the
// file and JSON pointer), and looked up by name or alias, case-insensitively.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "capplan/spec/cost_spec.hpp"
#include "capplan/spec/hardware_spec.hpp"
#include "capplan/spec/model_spec.hpp"
#include "capplan/spec/uncertainty.hpp"

namespace capplan {

enum class entry_kind { model, accelerator, link, system, storage, site };

// "model", "accelerator", ... as used in messages and `capplan list`.
std::string kind_name(entry_kind k);
// The folder under models/ holding entries of a kind ("llm", "accelerators", ...).
std::string kind_folder(entry_kind k);

// A node preset as written in the catalog, before its names are resolved.
struct system_entry {
    std::string name;
    std::string source;
    std::string accelerator;
    int per_node = 1;
    int nodes = 1;
    std::string scale_up_link;
    std::string scale_up_topology;
    int scale_up_domain = 1;
    bool scale_up_reduction = false;
    std::vector<int> torus_shape;
    std::string scale_out_link;  // empty: none
    int nics_per_node = 0;
    std::string scale_out_topology;
    double oversubscription = 1.0;
    int pod_nodes = 0;
    bool scale_out_reduction = false;
    std::string storage;  // empty: none
    std::optional<byte_rate> storage_network;  // the node's own storage links, all of them (system_spec's)
    std::string host_link;
    std::string host_memory;  // storage entry of kind host_dram, per socket
    int host_sockets = 0;     // 0: unknown
    system_economics economics;  // price, power and cloud offers of the preset as listed (per_node x nodes devices)
    std::optional<support_networks> support;  // storage and management networks, where a reference architecture counts them
};

class catalog {
public:
    // Reads every entry under `dir`; throws config_error naming the file and key on bad data.
    static catalog load(const std::filesystem::path& dir);
    // $CAPPLAN_CATALOG if set, else the source tree's models/ folder.
    static std::filesystem::path default_dir();

    const std::filesystem::path& dir() const { return dir_; }
    const std::string& version() const { return version_; }  // models/VERSION (read at load), "unversioned" if absent

    // Lookups by name or alias; unknown names throw unknown_name_error with suggestions,
    // naming `field` (the JSON pointer of the request).
    const model_spec& model(std::string_view name, std::string_view field = "/model") const;
    // An accelerator's "efficiency": {"as": NAME}: copies NAME's measured efficiencies into `a` (NAME must carry
    // its own), then `a`'s own matrix fractions over them format by format; calling it again gives the same part.
    // `field` is the accelerator's JSON pointer. Nothing when unset.
    void share_named_efficiencies(accelerator_spec& a, const std::string& field) const;
    const accelerator_spec& accelerator(std::string_view name, std::string_view field = "/system/accelerator") const;
    const link_spec& link(std::string_view name, std::string_view field = "/link") const;
    const storage_spec& storage(std::string_view name, std::string_view field = "/system/storage") const;
    const system_entry& system_preset(std::string_view name, std::string_view field = "/system/preset") const;
    const site_spec& site(std::string_view name, std::string_view field = "/cost/site") const;
    // models/uncertainty.json: the validated quantities' error bands (empty where the file is absent).
    const uncertainty_bands& uncertainty() const { return uncertainty_; }
    // The switch, NIC and optics a fabric of the link is built of; null where the catalog does not say.
    const fabric_parts* fabric(std::string_view link) const;
    // A preset with its accelerator, links and storage resolved, count = per_node * nodes.
    system_spec system(std::string_view name, std::string_view field = "/system/preset") const;

    // Canonical names of a kind, sorted.
    std::vector<std::string> names(entry_kind k) const;
    // Which kind a name (or alias) belongs to; throws unknown_name_error ("entry") if none.
    entry_kind kind_of(std::string_view name) const;
    // The entry's file, verbatim JSON text, and canonical name.
    std::string raw_json(std::string_view name) const;
    std::string canonical_name(std::string_view name) const;

private:
    struct entry {
        entry_kind kind;
        std::string name;
        std::filesystem::path file;
        std::string text;
    };
    const entry& find(entry_kind k, std::string_view name, std::string_view field) const;

    std::filesystem::path dir_;
    std::string version_ = "unversioned";
    std::vector<entry> entries_;
    std::map<std::string, std::size_t> index_;  // lower-case name/alias -> entries_ position
    // Name/alias as written -> entries_ position: the spelling presets and scenarios mostly use, found without
    // lower-casing a copy (a sweep looks names up for every point).
    std::map<std::string, std::size_t, std::less<>> exact_;
    std::map<std::string, model_spec> models_;  // by canonical name
    std::map<std::string, accelerator_spec> accelerators_;
    std::map<std::string, link_spec> links_;
    std::map<std::string, storage_spec> storage_;
    std::map<std::string, system_entry> systems_;
    std::map<std::string, site_spec> sites_;
    std::map<std::string, fabric_parts> fabrics_;  // by link name: what a scale-out fabric of it is built of
    uncertainty_bands uncertainty_;                // models/uncertainty.json
};

// A node of `acc`: the first catalog system preset built of it (its name in `preset`), else an inline
// 8-device node on the accelerator's own scale-up link. Sizing and disaggregated pools use it.
system_spec accelerator_node(const catalog& cat, const accelerator_spec& acc, std::string* preset = nullptr);

// The process-wide catalog, loaded on first use from the folder given to set_catalog_dir(),
// else from catalog::default_dir(). set_catalog_dir() only records the folder: errors in the
// files surface on first use, where the caller reports them.
const catalog& default_catalog();
void set_catalog_dir(const std::filesystem::path& dir);

}  // namespace capplan
