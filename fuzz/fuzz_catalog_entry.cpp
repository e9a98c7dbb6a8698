// One catalog entry (accelerator, link, storage tier, system or site) through its reader, chosen by the input's first
// byte.
#include "../src/catalog_readers.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const int kind = data[0] % 5;
    return capplan::fuzz::run(data + 1, size - 1, [kind](std::string_view text) {
        using namespace capplan::detail;
        const json j = parse_json_text(text, "entry");
        object_reader r(j, "", true);
        const header h = read_header(r, kind == 0);
        switch (kind) {
            case 0: (void)read_accelerator(r, h); break;
            case 1:
                (void)read_link(r, h);
                (void)read_link_fabric(r);
                break;
            case 2: (void)read_storage(r, h); break;
            case 3: (void)read_system(r, h); break;
            default: (void)read_site(r, h);
        }
    });
}
