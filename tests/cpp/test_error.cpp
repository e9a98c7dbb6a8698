// error.hpp: the hierarchy and the message layout (field, problem, value, allowed).
#include <doctest/doctest.h>

#include "capplan/error.hpp"

using namespace capplan;

TEST_CASE("config_error message names field, value and allowed values") {
    const config_error e("/system/count", "-1", "must be at least 1", "an integer >= 1");
    CHECK(std::string(e.what()) == "/system/count: must be at least 1 (got -1); allowed: an integer >= 1");
    CHECK(e.field() == "/system/count");
    CHECK(e.value() == "-1");
}

TEST_CASE("unknown_name_error suggests names and is a config_error") {
    const unknown_name_error e("/system/accelerator", "H1000", "accelerator", {"H100-SXM", "H200"});
    const std::string m = e.what();
    CHECK(m.rfind("/system/accelerator: unknown accelerator 'H1000'; did you mean H100-SXM, H200?", 0) == 0);
    CHECK(m.find("capplan list accelerators") != std::string::npos);
    CHECK(e.suggestions().size() == 2);
    const config_error& base = e;
    CHECK(base.field() == "/system/accelerator");
    CHECK(base.value() == "'H1000'");
}

TEST_CASE("the hierarchy") {
    CHECK_THROWS_AS(throw unit_error("/x", "'1 GX'", "unknown unit"), config_error);
    CHECK_THROWS_AS(throw json_error("/", "f.json", "malformed JSON"), error);
    CHECK_THROWS_AS(throw internal_error("bug"), std::runtime_error);
    CHECK_THROWS_AS(throw unknown_name_error("/model", "x", "model", {}), error);
}
