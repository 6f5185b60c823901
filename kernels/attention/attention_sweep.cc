#include "kernels/attention/attention_sweep.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "common/json_util.h"

namespace capplan::kernels {

namespace {
int IntOr(const nlohmann::json& j, const char* key, int fallback) {
  return j.contains(key) && j[key].is_number_integer() ? j[key].get<int>() : fallback;
}
}  // namespace

Result<std::vector<AttnHeadShape>> LoadAttentionShapesFromCards(const std::string& dir, int tp) {
  std::error_code ec;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  }
  if (ec) return Status::NotFound(dir + ": cannot list model cards: " + ec.message());
  std::sort(files.begin(), files.end());
  std::vector<AttnHeadShape> out;
  for (const auto& f : files) {
    CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json c, ReadJsonFile(f));
    if (!c.is_object() || !c.contains("attention") || !c["attention"].is_string()) continue;
    const std::string kind = c["attention"].get<std::string>();
    const std::string name = c.value("name", std::filesystem::path(f).stem().string());
    const int heads = IntOr(c, "num_heads", 0);
    if (heads <= 0 || heads % tp != 0) continue;
    AttnHeadShape s;
    s.cards = name;
    s.q_heads = heads / tp;
    if (kind == "mla") {
      const int latent = IntOr(c, "kv_lora_rank", 0), rope = IntOr(c, "qk_rope_head_dim", 0);
      const int nope = IntOr(c, "qk_nope_head_dim", 0);
      if (latent <= 0 || rope <= 0 || nope <= 0) continue;
      s.mla = true;
      s.kv_heads = 1;
      s.k_dim = latent + rope;
      s.v_dim = latent;
      s.topk = IntOr(c, "index_topk", 0);
      s.sm_scale = 1.0f / std::sqrt(static_cast<float>(nope + rope));
    } else {
      const int kv = IntOr(c, "num_kv_heads", heads), d = IntOr(c, "head_dim", 0);
      if (d <= 0 || kv <= 0) continue;
      s.kv_heads = std::max(1, kv / tp);
      if (s.q_heads % s.kv_heads != 0) continue;
      s.k_dim = s.v_dim = d;
      s.sm_scale = 1.0f / std::sqrt(static_cast<float>(d));
    }
    auto same = [&](const AttnHeadShape& o) {
      return o.mla == s.mla && o.q_heads == s.q_heads && o.kv_heads == s.kv_heads &&
             o.k_dim == s.k_dim && o.v_dim == s.v_dim && o.topk == s.topk;
    };
    auto it = std::find_if(out.begin(), out.end(), same);
    if (it != out.end()) {
      it->cards += "," + name;
    } else {
      out.push_back(s);
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const AttnHeadShape& a, const AttnHeadShape& b) { return !a.mla && b.mla; });
  return out;
}

}  // namespace capplan::kernels
