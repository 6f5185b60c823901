// Number-format facts (bits per element, KV scale layouts, the formats a
// re-quantization produces), loaded once from models/dtypes.json so no dtype
// fact is a literal in logic.
#ifndef CAPPLAN_MODELS_DTYPE_FACTS_H_
#define CAPPLAN_MODELS_DTYPE_FACTS_H_

#include <cstdint>
#include <map>
#include <string>

#include "common/status.h"
#include "models/types.h"

namespace capplan::models {

struct DtypeFacts {
  std::map<Dtype, int> bits;                        // bits per element
  std::map<std::string, WeightFormat> requantize;   // "bf16" | "fp8" | "int4"
  // KV cache layouts (SGLang memory_pool.py; DSA FP8 layout of the NSA backend).
  int dsa_fp8_scale_block = 0;   // latent elements per fp32 scale
  int dsa_fp8_scale_bytes = 0;
  Dtype dsa_fp8_rope_dtype = Dtype::kBf16;
  Dtype indexer_key_dtype = Dtype::kFp8E4m3;
  int indexer_scale_block = 0;
  int indexer_scale_bytes = 0;
  int fp8_per_tensor_scale_bytes_per_token = 0;

  // Bytes of `n` elements of `d` (rounded up to whole bytes).
  int64_t Bytes(Dtype d, int64_t n) const { return (n * bits.at(d) + 7) / 8; }
};

// Parses dtypes.json text (exposed for tests).
Result<DtypeFacts> ParseDtypeFacts(const std::string& json_text, const std::string& origin);
// DataPath("models/dtypes.json"), loaded once (thread-safe static). A broken
// data file is reported on every call.
Result<const DtypeFacts*> GetDtypeFacts();

}  // namespace capplan::models

#endif  // CAPPLAN_MODELS_DTYPE_FACTS_H_
