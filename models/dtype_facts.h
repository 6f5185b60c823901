// The format facts models/ reads (bits per element, scale and KV layouts,
// the layouts re-quantization produces), as one view of the format table
// (hw/formats.json, loaded by hw/formats.h): no dtype fact is a literal here.
#ifndef CAPPLAN_MODELS_DTYPE_FACTS_H_
#define CAPPLAN_MODELS_DTYPE_FACTS_H_

#include <cstdint>
#include <map>
#include <string>

#include "common/status.h"
#include "hw/formats.h"
#include "models/types.h"

namespace capplan::models {

struct DtypeFacts {
  const hw::FormatTable* table = nullptr;
  std::map<std::string, WeightFormat> requantize;  // weight choice -> its layout
  // KV cache layouts (SGLang memory_pool.py; DSA FP8 layout of the NSA backend).
  int dsa_fp8_scale_block = 0;   // latent elements per fp32 scale
  int dsa_fp8_scale_bytes = 0;
  Dtype dsa_fp8_rope_dtype = Dtype::kBf16;
  Dtype indexer_key_dtype = Dtype::kFp8E4m3;
  int indexer_scale_block = 0;
  int indexer_scale_bytes = 0;

  const hw::NumberFormat& Row(Dtype d) const { return table->Row(d); }
  int Bits(Dtype d) const { return table->Row(d).bits; }
  // Bytes of `n` elements of `d` (rounded up to whole bytes).
  int64_t Bytes(Dtype d, int64_t n) const { return table->Bytes(d, n); }
  // Scale bytes one token's `elements` KV values of `kv` carry beside them
  // (per-tensor scales: none).
  int64_t KvScaleBytes(Dtype kv, int64_t elements) const;
  // A usage error when `kv` is a KV format only some engines have
  // (hw/formats.json kv.engines) and `engine` is not one of them.
  Status CheckKvOnEngine(Dtype kv, const std::string& engine) const;
};

// The view of a parsed table (exposed for tests).
DtypeFacts DtypeFactsOf(const hw::FormatTable& table);
// The shipped table's view, built once. A broken data file is reported on
// every call.
Result<const DtypeFacts*> GetDtypeFacts();

}  // namespace capplan::models

#endif  // CAPPLAN_MODELS_DTYPE_FACTS_H_
