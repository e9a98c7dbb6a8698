#include "capplan/dtype.hpp"

#include "capplan/detail/closest.hpp"
#include "capplan/error.hpp"

namespace capplan {

const std::vector<number_format>& number_formats() {
    static const std::vector<number_format> formats{
        {"fp32", 32, 0, 0, "fp32", "IEEE 754 binary32"},
        {"tf32", 32, 0, 0, "tf32", "stored as fp32; TF32 is a tensor-core compute mode (NVIDIA A100 whitepaper)"},
        {"bf16", 16, 0, 0, "bf16", "bfloat16: 1 sign, 8 exponent, 7 mantissa bits"},
        {"fp16", 16, 0, 0, "fp16", "IEEE 754 binary16"},
        {"fp8", 8, 0, 0, "fp8",
         "FP8 E4M3/E5M2 (Micikevicius et al. 2022, arXiv:2209.05433) with a per-tensor scale (negligible)"},
        {"mxfp8", 8, 32, 8, "fp8",
         "OCP Microscaling Formats (MX) v1.0: FP8 E4M3/E5M2 elements, blocks of 32 sharing an E8M0 scale (Transformer "
         "Engine's MXFP8BlockScaling; Blackwell tensor cores, at their fp8 rate)"},
        {"fp8_blockwise", 8, 128 * 128, 32, "fp8",
         "FP8 E4M3 with fine-grained scaling (DeepSeek-V3, arXiv:2412.19437 §3.3.2): an fp32 scale per 128 x 128 block of "
         "weights (this layout) and per 1 x 128 tile of activations ((8 + 32 / 128) / 8 B); Transformer Engine's "
         "Float8BlockScaling, at the fp8 rate",
         (8.0 + 32.0 / 128.0) / 8.0},
        {"int8", 8, 0, 0, "int8", "8-bit integer with per-channel scales (negligible per element)"},
        {"int4", 4, 128, 16 + 4, "int4",
         "4-bit integer, group size 128 with an fp16 scale and a 4-bit zero point per group "
         "(GPTQ, Frantar et al. 2022 arXiv:2210.17323; AWQ, Lin et al. 2023 arXiv:2306.00978)"},
        {"mxfp6", 6, 32, 8, "fp6",
         "OCP Microscaling Formats (MX) v1.0: FP6 E2M3/E3M2 elements, blocks of 32 sharing an E8M0 scale "
         "(runs at the accelerator's fp6 peak: MI355X at its fp4 rate, Blackwell at its fp8 rate)"},
        {"mxfp4", 4, 32, 8, "fp4",
         "OCP Microscaling Formats (MX) v1.0: FP4 E2M1 elements, blocks of 32 sharing an E8M0 scale"},
        {"nvfp4", 4, 16, 8, "fp4",
         "NVIDIA NVFP4: FP4 E2M1 elements, blocks of 16 sharing an FP8 E4M3 scale (+ one fp32 per tensor)"},
        // No tensor core runs NF4 (peak key "nf4" names none): the base of a QLoRA fine-tune, dequantised to
        // 16 bits before every GEMM.
        {"nf4", 4, 64, 8 + 32.0 / 256, "nf4",
         "bitsandbytes NF4 with double quantisation (QLoRA, Dettmers et al. 2023 arXiv:2305.14314 §3): 4-bit "
         "NormalFloat codes, blocks of 64 sharing an 8-bit absmax, itself scaled by an fp32 per 256 blocks: "
         "8/64 + 32/(64 x 256) = 0.127 bits of scale per weight (bnb Linear4bit default compress_statistics)"},
        {"nf4_nodq", 4, 64, 32, "nf4",
         "bitsandbytes NF4 without double quantisation (Hugging Face BitsAndBytesConfig default "
         "bnb_4bit_use_double_quant=False): an fp32 absmax per block of 64, 0.5 bits per weight (QLoRA §3)"},
    };
    return formats;
}

const number_format& find_format(std::string_view name, std::string_view field) {
    const std::string key = detail::lower(name);
    const std::string wanted = key == "fp4" ? "mxfp4" : key == "fp6" ? "mxfp6" : key == "float16" ? "fp16" : key == "bfloat16" ? "bf16"
                             : key == "float32" ? "fp32" : key == "float8" ? "fp8" : key;
    for (const auto& f : number_formats())
        if (f.name == wanted) return f;
    std::vector<std::string> names;
    std::string allowed;
    for (const auto& f : number_formats()) {
        names.push_back(f.name);
        allowed += (allowed.empty() ? "" : ", ") + f.name;
    }
    const auto near = detail::closest(name, names);
    std::string problem = "unknown number format";
    if (!near.empty()) problem += "; did you mean " + near.front() + "?";
    throw config_error(std::string(field), "'" + std::string(name) + "'", problem, allowed + " (fp4 = mxfp4, fp6 = mxfp6)");
}

}  // namespace capplan
