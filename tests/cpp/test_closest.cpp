// detail/closest.hpp: edit distance and suggestion ranking.
#include <doctest/doctest.h>

#include "capplan/detail/closest.hpp"

using capplan::detail::closest;
using capplan::detail::edit_distance;

TEST_CASE("edit distance, case-insensitive") {
    CHECK(edit_distance("kitten", "sitting") == 3);  // the textbook example
    CHECK(edit_distance("H100", "h100") == 0);
    CHECK(edit_distance("", "abc") == 3);
}

TEST_CASE("suggestions: substring matches first, far names dropped") {
    const std::vector<std::string> names{"H100-SXM", "H100-PCIe", "H200", "MI300X", "Llama-3.1-8B"};
    const auto s = closest("h100", names);
    REQUIRE(s.size() >= 2);
    CHECK(s[0].rfind("H100", 0) == 0);
    CHECK(s[1].rfind("H100", 0) == 0);
    CHECK(closest("Lama-3.1-8B", names) == std::vector<std::string>{"Llama-3.1-8B"});
    CHECK(closest("zzzzzzzz", names).empty());
}
