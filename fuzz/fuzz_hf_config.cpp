// A Hugging Face config.json through the model reader.
#include "capplan/spec/hf_config.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return capplan::fuzz::run(data, size, [](std::string_view text) { (void)capplan::model_from_hf_config(text, "fuzz"); });
}
