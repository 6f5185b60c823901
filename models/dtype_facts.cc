#include "models/dtype_facts.h"

#include "common/atomic_file.h"
#include "common/data_path.h"
#include "common/json_util.h"

namespace capplan::models {

namespace {

Status ReadDtypeField(JsonObject& o, std::string_view key, Dtype* out) {
  std::string s;
  CAPPLAN_RETURN_IF_ERROR(o.Get(key, &s, true));
  auto d = ParseDtype(s);
  if (!d.ok()) return o.Error(key, d.status().message());
  *out = *d;
  return Status::Ok();
}

}  // namespace

Result<DtypeFacts> ParseDtypeFacts(const std::string& json_text, const std::string& origin) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ParseJson(json_text, origin));
  JsonObject root(doc, origin, "");
  CAPPLAN_RETURN_IF_ERROR(root.CheckObject());
  root.Touch("format");
  root.Touch("comment");
  DtypeFacts f;
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject dts, root.Child("dtypes", true));
  for (Dtype d : {Dtype::kBf16, Dtype::kFp16, Dtype::kFp32, Dtype::kFp8E4m3, Dtype::kInt4}) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject e, dts.Child(DtypeName(d), true));
    int bits = 0;
    CAPPLAN_RETURN_IF_ERROR(e.Get("bits", &bits, true));
    CAPPLAN_RETURN_IF_ERROR(e.CheckRange("bits", bits, 1, 64));
    e.Touch("source");
    CAPPLAN_RETURN_IF_ERROR(e.Finish());
    f.bits[d] = bits;
  }
  CAPPLAN_RETURN_IF_ERROR(dts.Finish());

  CAPPLAN_ASSIGN_OR_RETURN(JsonObject rq, root.Child("requantize_formats", true));
  rq.Touch("comment");
  for (const char* name : kRequantizeFormats) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject e, rq.Child(name, true));
    WeightFormat w;
    CAPPLAN_RETURN_IF_ERROR(ReadDtypeField(e, "dtype", &w.dtype));
    CAPPLAN_RETURN_IF_ERROR(e.Get("block_rows", &w.block_rows));
    CAPPLAN_RETURN_IF_ERROR(e.Get("block_cols", &w.block_cols));
    CAPPLAN_RETURN_IF_ERROR(e.Get("group_size", &w.group_size));
    CAPPLAN_RETURN_IF_ERROR(e.Get("symmetric", &w.symmetric));
    if (e.Has("scale_dtype")) CAPPLAN_RETURN_IF_ERROR(ReadDtypeField(e, "scale_dtype", &w.scale_dtype));
    e.Touch("source");
    CAPPLAN_RETURN_IF_ERROR(e.Finish());
    f.requantize[name] = w;
  }
  CAPPLAN_RETURN_IF_ERROR(rq.Finish());

  CAPPLAN_ASSIGN_OR_RETURN(JsonObject kv, root.Child("kv_cache", true));
  CAPPLAN_RETURN_IF_ERROR(kv.Get("fp8_per_tensor_scale_bytes_per_token",
                                 &f.fp8_per_tensor_scale_bytes_per_token, true));
  CAPPLAN_RETURN_IF_ERROR(kv.Get("dsa_fp8_scale_block", &f.dsa_fp8_scale_block, true));
  CAPPLAN_RETURN_IF_ERROR(kv.CheckRange("dsa_fp8_scale_block", f.dsa_fp8_scale_block, 1, 1 << 20));
  CAPPLAN_RETURN_IF_ERROR(kv.Get("dsa_fp8_scale_bytes", &f.dsa_fp8_scale_bytes, true));
  CAPPLAN_RETURN_IF_ERROR(ReadDtypeField(kv, "dsa_fp8_rope_dtype", &f.dsa_fp8_rope_dtype));
  CAPPLAN_RETURN_IF_ERROR(ReadDtypeField(kv, "indexer_key_dtype", &f.indexer_key_dtype));
  CAPPLAN_RETURN_IF_ERROR(kv.Get("indexer_scale_block", &f.indexer_scale_block, true));
  CAPPLAN_RETURN_IF_ERROR(kv.CheckRange("indexer_scale_block", f.indexer_scale_block, 1, 1 << 20));
  CAPPLAN_RETURN_IF_ERROR(kv.Get("indexer_scale_bytes", &f.indexer_scale_bytes, true));
  for (const char* k : {"fp8_per_tensor_scale_source", "dsa_fp8_source", "indexer_source"}) {
    kv.Touch(k);
  }
  CAPPLAN_RETURN_IF_ERROR(kv.Finish());
  CAPPLAN_RETURN_IF_ERROR(root.Finish());
  return f;
}

Result<const DtypeFacts*> GetDtypeFacts() {
  static const Result<DtypeFacts> kFacts = []() -> Result<DtypeFacts> {
    const std::string path = DataPath("models/dtypes.json");
    CAPPLAN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    return ParseDtypeFacts(text, path);
  }();
  if (!kFacts.ok()) return kFacts.status();
  return &kFacts.value();
}

}  // namespace capplan::models
