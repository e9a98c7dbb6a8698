// The error hierarchy. Exceptions are for malformed input only; an infeasible plan is a result.
// Every message names the field as a JSON-pointer path (e.g. /system/accelerator), the bad value
// and what is allowed. Python maps these onto exceptions with builtin bases (see python/src).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace capplan {

// Base of everything capplan throws.
class error : public std::runtime_error {
public:
    explicit error(const std::string& message) : std::runtime_error(message) {}
};

// Bad user or catalog input: a wrong value, a missing or unknown key, a wrong type.
class config_error : public error {
public:
    config_error(std::string field, std::string value, std::string problem, std::string allowed = {})
        : error(compose(field, value, problem, allowed)),
          field_(std::move(field)), value_(std::move(value)), problem_(std::move(problem)),
          allowed_(std::move(allowed)) {}

    const std::string& field() const { return field_; }
    const std::string& value() const { return value_; }
    const std::string& problem() const { return problem_; }
    const std::string& allowed() const { return allowed_; }

protected:
    // For subclasses whose problem text already quotes the value.
    struct value_in_problem {};
    config_error(value_in_problem, std::string field, std::string value, std::string problem, std::string allowed)
        : error(compose(field, "", problem, allowed)),
          field_(std::move(field)), value_(std::move(value)), problem_(std::move(problem)),
          allowed_(std::move(allowed)) {}

private:
    static std::string compose(const std::string& field, const std::string& value,
                               const std::string& problem, const std::string& allowed) {
        std::string m = (field.empty() ? std::string("/") : field) + ": " + problem;
        if (!value.empty()) m += " (got " + value + ")";
        if (!allowed.empty()) m += "; allowed: " + allowed;
        return m;
    }
    std::string field_, value_, problem_, allowed_;
};

// A quantity string that does not parse or has the wrong dimension ("80 GX", "3 GB" for a rate).
class unit_error : public config_error {
public:
    using config_error::config_error;
};

// Text that is not valid JSON (a scenario or catalog file).
class json_error : public config_error {
public:
    using config_error::config_error;
};

// A catalog name (model, accelerator, system, link, storage) that does not exist.
class unknown_name_error : public config_error {
public:
    unknown_name_error(std::string field, const std::string& name, std::string kind,
                       std::vector<std::string> suggestions)
        : config_error(value_in_problem{}, std::move(field), "'" + name + "'", problem(kind, name, suggestions),
                       "a name from `capplan list " + plural(kind) + "`, or an inline object"),
          kind_(std::move(kind)), suggestions_(std::move(suggestions)) {}

    const std::string& kind() const { return kind_; }
    const std::vector<std::string>& suggestions() const { return suggestions_; }

private:
    static std::string plural(const std::string& kind) {
        return kind == "storage" ? kind : kind + "s";
    }
    static std::string problem(const std::string& kind, const std::string& name, const std::vector<std::string>& s) {
        std::string p = "unknown " + kind + " '" + name + "'";
        for (std::size_t i = 0; i < s.size(); ++i) p += (i ? ", " : "; did you mean ") + s[i];
        return s.empty() ? p : p + "?";
    }
    std::string kind_;
    std::vector<std::string> suggestions_;
};

// The hardware a request needs is not there or cannot do it: no GPU or driver, the CUDA backend not
// built, a number format the device does not support. The message says which and what is allowed.
class device_error : public error {
public:
    explicit device_error(const std::string& message) : error(message) {}
};

// An operation asked to stop (progress::request_stop, Ctrl-C) before it had anything to return; Python sees a
// KeyboardInterrupt.
class stopped_early : public error {
public:
    explicit stopped_early(const std::string& message) : error(message) {}
};

// Internal invariant broken: a bug in capplan, never the user's fault.
class internal_error : public error {
public:
    explicit internal_error(const std::string& message) : error("internal error: " + message) {}
};

}  // namespace capplan
