// Where an analysis writes the explanations beside its figures: a list, or nowhere. An estimate that shows no notes
// (a columnar sweep, a headline estimate) passes nowhere, and then the notes' text (formatted quantities, joined
// strings) is never built: a note is given as a literal, or as a function that makes its text when it is kept.
#pragma once

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace capplan::detail {

class note_sink {
public:
    note_sink() = default;  // nowhere
    explicit note_sink(std::vector<std::string>& to) : to_(&to) {}
    // The list when `keep`, else nowhere.
    note_sink(std::vector<std::string>& to, bool keep) : to_(keep ? &to : nullptr) {}

    explicit operator bool() const { return to_ != nullptr; }

    void operator()(const char* text) const {
        if (to_) to_->emplace_back(text);
    }
    template <class Make, class = std::enable_if_t<std::is_invocable_r_v<std::string, Make&>>>
    void operator()(Make&& make) const {
        if (to_) to_->push_back(make());
    }

private:
    std::vector<std::string>* to_ = nullptr;
};

}  // namespace capplan::detail
