// Reading a scenario from an already parsed JSON value, for callers that build many scenarios from one
// parsed document (a sweep patches its grid's keys into a copy per point instead of writing and parsing
// text). Needs nlohmann_json, which the rest of the public API does not.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "capplan/catalog.hpp"
#include "capplan/spec/scenario.hpp"

namespace capplan {

// JSON text parsed as read_scenario parses it: malformed text is a json_error naming `what`, its line and column.
nlohmann::json parse_scenario_json(std::string_view text, const std::string& what = "scenario");

// A scenario's model and system as read, with the JSON they were read from, kept for the next reading of a document
// that differs elsewhere (a sweep's next point, a replaced key): read_scenario_value takes them (moved) instead of
// reading the same JSON again (a catalog system costs more to read than most estimates' other parts). Each is
// read from its own JSON value alone, so the one kept is what reading it again would give.
struct scenario_sections {
    nlohmann::json model_doc, system_doc;
    std::optional<model_spec> model;
    std::optional<system_spec> system;

    // Keeps `s`'s model and system, which were read from `doc` (moved, or copied from a scenario kept as it is; a
    // caller about to change a section copies only the other, `model` / `system` false).
    void keep(scenario&& s, const nlohmann::json& doc);
    void keep(const scenario& s, const nlohmann::json& doc, bool model = true, bool system = true);

private:
    void keep_docs(const nlohmann::json& doc, bool model = true, bool system = true);
};

// read_scenario (spec/scenario_io.hpp) without the text: the same rules and errors. With `reuse`, its model and system
// are taken (moved out, their places emptied) where `doc`'s are the same JSON; keep() refills it.
scenario read_scenario_value(const nlohmann::json& doc, const catalog& cat, const std::filesystem::path& base_dir = {},
                             scenario_sections* reuse = nullptr);

// doc["a"]["b"] = value for the dotted key "a.b", making the objects on the way. A name standing where an object is
// needed becomes that object's preset ("system": "HGX-H200" refined by "system.count" is {"preset": "HGX-H200",
// "count": ...}), as the Python sweeps' capplan.batch.set_dotted does. `doc` must be an object.
void set_scenario_key(nlohmann::json& doc, std::string_view dotted_key, const nlohmann::json& value);

}  // namespace capplan
