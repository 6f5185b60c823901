#include "models/dtype_facts.h"

#include <algorithm>

namespace capplan::models {

int64_t DtypeFacts::KvScaleBytes(Dtype kv, int64_t elements) const {
  const hw::NumberFormat& f = Row(kv);
  if (!f.has_kv_layout) return 0;
  if (f.kv_scale.granularity == "token_head") return Bytes(f.kv_scale.format, 1);
  if (f.kv_scale.granularity != "group") return 0;
  const int64_t groups = (elements + f.kv_scale.group_size - 1) / f.kv_scale.group_size;
  return groups * Bytes(f.kv_scale.format, 1);
}

Status DtypeFacts::CheckKvOnEngine(Dtype kv, const std::string& engine) const {
  const std::vector<std::string>& engines = Row(kv).kv_engines;
  if (engines.empty() || std::find(engines.begin(), engines.end(), engine) != engines.end()) {
    return Status::Ok();
  }
  std::string names;
  for (const std::string& e : engines) names += (names.empty() ? "" : ", ") + e;
  return Status::Usage("--kv: " + Row(kv).name + " is a KV cache format of " + names +
                       " only, not " + engine + "; use fp8 (per-tensor scales)");
}

DtypeFacts DtypeFactsOf(const hw::FormatTable& t) {
  DtypeFacts f;
  f.table = &t;
  for (const std::string& name : t.weight_choices) {
    f.requantize[name] = WeightFormatOf(t.Find(name).value());
  }
  f.dsa_fp8_scale_block = t.dsa_fp8_scale_block;
  f.dsa_fp8_scale_bytes = t.dsa_fp8_scale_bytes;
  f.dsa_fp8_rope_dtype = t.dsa_fp8_rope_dtype;
  f.indexer_key_dtype = t.indexer_key_dtype;
  f.indexer_scale_block = t.indexer_scale_block;
  f.indexer_scale_bytes = t.indexer_scale_bytes;
  return f;
}

Result<const DtypeFacts*> GetDtypeFacts() {
  CAPPLAN_ASSIGN_OR_RETURN(const hw::FormatTable* t, hw::GetFormatTable());
  static const DtypeFacts kFacts = DtypeFactsOf(*t);
  return &kFacts;
}

}  // namespace capplan::models
