// Hugging Face config.json -> model_spec, for the families capplan models.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "capplan/spec/model_spec.hpp"

namespace capplan {

// The HF model_type values capplan understands.
const std::vector<std::string>& supported_model_types();
// Every config key capplan reads or knowingly ignores (mirrors models/schema/llm.schema.json).
const std::vector<std::string>& hf_config_known_keys();

// Builds a model from config.json text. Keys capplan does not use are ignored, as HF configs
// carry many (tokenizer ids, rope scaling, ...); an unsupported model_type, a missing or
// invalid field is a config_error naming `field` + the key.
model_spec model_from_hf_config(std::string_view json_text, std::string name = {}, std::string field = "/model");

}  // namespace capplan
