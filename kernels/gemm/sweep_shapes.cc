#include "kernels/gemm/sweep_shapes.h"

#include "common/data_path.h"
#include "common/json_util.h"

namespace capplan::kernels {
namespace {

Status ReadInts(JsonObject* o, const char* key, std::vector<int>* out) {
  std::vector<double> v;
  CAPPLAN_RETURN_IF_ERROR(o->Get(key, &v, /*required=*/true));
  for (double d : v) {
    if (d < 1 || d > (1 << 20) || d != static_cast<int>(d)) {
      return o->Error(key, "entries must be integers in [1, 1048576]");
    }
    out->push_back(static_cast<int>(d));
  }
  return Status::Ok();
}

}  // namespace

Result<SweepShapes> LoadSweepShapes(const std::string& path) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  JsonObject root(doc, path, "");
  CAPPLAN_RETURN_IF_ERROR(root.CheckObject());
  std::string source;
  CAPPLAN_RETURN_IF_ERROR(root.CheckFormat("capplan.gemm_sweep.v1"));
  CAPPLAN_RETURN_IF_ERROR(root.Get("source", &source, true));
  SweepShapes s;
  CAPPLAN_RETURN_IF_ERROR(ReadInts(&root, "m_values", &s.m_values));
  CAPPLAN_RETURN_IF_ERROR(ReadInts(&root, "quick_m_values", &s.quick_m_values));
  CAPPLAN_RETURN_IF_ERROR(ReadInts(&root, "dry_m_values", &s.dry_m_values));
  const nlohmann::json* models = root.Raw("models");
  if (!models || !models->is_array()) return root.Error("models", "must be an array");
  for (size_t i = 0; i < models->size(); ++i) {
    const std::string mp = "/models/" + std::to_string(i);
    JsonObject m((*models)[i], path, mp);
    CAPPLAN_RETURN_IF_ERROR(m.CheckObject());
    SweepModel sm;
    std::string note;
    CAPPLAN_RETURN_IF_ERROR(m.Get("name", &sm.name, true));
    CAPPLAN_RETURN_IF_ERROR(m.Get("int4_group", &sm.int4_group, true));
    CAPPLAN_RETURN_IF_ERROR(
        m.CheckOneOf("int4_group", std::to_string(sm.int4_group), {"32", "128"}));
    CAPPLAN_RETURN_IF_ERROR(m.Get("int4_note", &note));
    const nlohmann::json* dense = m.Raw("dense");
    if (!dense || !dense->is_array()) return m.Error("dense", "must be an array");
    for (size_t j = 0; j < dense->size(); ++j) {
      JsonObject d((*dense)[j], path, mp + "/dense/" + std::to_string(j));
      CAPPLAN_RETURN_IF_ERROR(d.CheckObject());
      SweepDense sd;
      CAPPLAN_RETURN_IF_ERROR(d.Get("name", &sd.name, true));
      CAPPLAN_RETURN_IF_ERROR(d.Get("n", &sd.n, true));
      CAPPLAN_RETURN_IF_ERROR(d.Get("k", &sd.k, true));
      CAPPLAN_RETURN_IF_ERROR(d.CheckRange("n", sd.n, 1, 1 << 20));
      CAPPLAN_RETURN_IF_ERROR(d.CheckRange("k", sd.k, 128, 1 << 20));
      if (sd.k % 128 != 0)
        return d.Error("k", "must be a multiple of 128 (FP8 blocks, INT4 groups)");
      CAPPLAN_RETURN_IF_ERROR(d.Get("note", &note));
      CAPPLAN_RETURN_IF_ERROR(d.Finish());
      sm.dense.push_back(sd);
    }
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject mo, m.Child("moe", true));
    CAPPLAN_RETURN_IF_ERROR(mo.Get("hidden", &sm.moe.hidden, true));
    CAPPLAN_RETURN_IF_ERROR(mo.Get("intermediate", &sm.moe.intermediate, true));
    CAPPLAN_RETURN_IF_ERROR(mo.Get("total_experts", &sm.moe.total_experts, true));
    CAPPLAN_RETURN_IF_ERROR(mo.Get("ep", &sm.moe.ep, true));
    CAPPLAN_RETURN_IF_ERROR(mo.Get("top_k", &sm.moe.top_k, true));
    CAPPLAN_RETURN_IF_ERROR(mo.Get("note", &note));
    if (sm.moe.ep <= 0 || sm.moe.total_experts % sm.moe.ep != 0) {
      return mo.Error("ep", "must divide total_experts");
    }
    if (sm.moe.hidden % 128 != 0 || sm.moe.intermediate % 128 != 0) {
      return mo.Error("hidden", "hidden and intermediate must be multiples of 128");
    }
    CAPPLAN_RETURN_IF_ERROR(mo.Finish());
    CAPPLAN_RETURN_IF_ERROR(m.Finish());
    s.models.push_back(sm);
  }
  CAPPLAN_RETURN_IF_ERROR(root.Finish());
  return s;
}

Result<SweepShapes> LoadDefaultSweepShapes() {
  return LoadSweepShapes(DataPath("kernels/gemm/sweep_shapes.json"));
}

}  // namespace capplan::kernels
