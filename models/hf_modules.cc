// The linear modules of a card as the checkpoint names them, and how the
// module patterns of quantization configs match those names.
#include <algorithm>
#include <regex>
#include <string>
#include <string_view>

#include "models/hf_import_internal.h"

namespace capplan::models::hf {

namespace {

// A hybrid's layer i is full attention when (i + 1) is a multiple of the
// interval (transformers Qwen3NextConfig layer_types).
bool IsLinearLayer(const ModelCard& c, int layer) {
  const int k = c.linear_attention.full_attention_interval;
  return c.IsHybridLinear() && layer < c.num_layers && (layer + 1) % k != 0;
}

void AddAttention(const ModelCard& c, const std::string& p, bool served, bool linear,
                  std::vector<HfModule>* out) {
  auto add = [&](const char* n) { out->push_back({p + "self_attn." + n, Component::kAttention, served}); };
  if (linear) {
    for (const char* n : {"in_proj_qkvz", "in_proj_ba", "out_proj"}) {
      out->push_back({p + "linear_attn." + n, Component::kAttention, served});
    }
    return;
  }
  if (c.attention == AttentionKind::kMla) {
    if (c.q_lora_rank > 0) {
      add("q_a_proj");
      add("q_b_proj");
    } else {
      add("q_proj");
    }
    add("kv_a_proj_with_mqa");
    add("kv_b_proj");
    add("o_proj");
    if (c.index_topk > 0) {
      add("indexer.wq_b");
      add("indexer.wk");
      add("indexer.weights_proj");
    }
  } else {
    add("q_proj");
    add("k_proj");
    add("v_proj");
    add("o_proj");
  }
}

void AddFfn(const ModelCard& c, const ModuleNaming& n, const std::string& p, bool dense,
            bool served, std::vector<HfModule>* out) {
  static const char* kProj[] = {"gate_proj", "up_proj", "down_proj"};
  const std::string ffn = p + n.ffn + ".";
  if (dense) {
    for (const char* k : kProj) out->push_back({ffn + k, Component::kDenseFfn, served});
    return;
  }
  if (n.fused_experts) {
    out->push_back({ffn + "experts.gate_up_proj", Component::kExperts, served});
    out->push_back({ffn + "experts.down_proj", Component::kExperts, served});
  } else {
    for (int e = 0; e < c.n_routed_experts; ++e) {
      const std::string ep = ffn + "experts." + std::to_string(e) + ".";
      for (const char* k : kProj) out->push_back({ep + k, Component::kExperts, served});
    }
  }
  if (c.n_shared_experts > 0) {
    for (const char* k : kProj) {
      out->push_back({p + n.shared_expert + "." + k, Component::kSharedExperts, served});
    }
  }
  if (!n.shared_expert_gate.empty()) {
    out->push_back({p + n.shared_expert_gate, Component::kRouter, served});
  }
  out->push_back({p + n.router, Component::kRouter, served});
}

// fnmatch-style: * any run, ? one character.
bool Glob(std::string_view pat, std::string_view s) {
  size_t p = 0, i = 0, star = std::string_view::npos, mark = 0;
  while (i < s.size()) {
    if (p < pat.size() && (pat[p] == '?' || pat[p] == s[i])) {
      ++p;
      ++i;
    } else if (p < pat.size() && pat[p] == '*') {
      star = p++;
      mark = i;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      i = ++mark;
    } else {
      return false;
    }
  }
  while (p < pat.size() && pat[p] == '*') ++p;
  return p == pat.size();
}

}  // namespace

std::vector<HfModule> ListHfModules(const ModelCard& c, const ModuleNaming& n) {
  std::vector<HfModule> out;
  const int total = c.num_layers + c.mtp_layers;
  for (int layer = 0; layer < total; ++layer) {
    const bool served = layer < c.num_layers;
    const std::string p = n.layer_prefix + std::to_string(layer) + ".";
    AddAttention(c, p, served, IsLinearLayer(c, layer), &out);
    // MTP layers are MoE layers in an MoE model. With interleaved MoE
    // (moe_layer_step k) layer i is MoE when (i + 1 - first_k_dense) % k == 0.
    const int step = std::max(1, c.moe_layer_step);
    const bool dense = !c.IsMoe() || (served && (layer < c.first_k_dense ||
                                                 (layer + 1 - c.first_k_dense) % step != 0));
    AddFfn(c, n, p, dense, served, &out);
  }
  out.push_back({n.embed_tokens, Component::kEmbeddings, true});
  if (!c.tie_word_embeddings) out.push_back({n.lm_head, Component::kEmbeddings, true});
  return out;
}

Result<ModulePattern> ModulePattern::Make(const std::string& text) {
  ModulePattern p;
  p.text_ = text;
  if (text.starts_with("re:")) {
    try {
      p.re_ = std::make_shared<const std::regex>(text.substr(3), std::regex::optimize);
    } catch (const std::regex_error& e) {
      return Status::Usage("'" + text + "' is not a valid regular expression: " + e.what());
    }
  }
  return p;
}

bool ModulePattern::Matches(const std::string& module) const {
  if (re_ != nullptr) {
    return std::regex_search(module, *re_, std::regex_constants::match_continuous);
  }
  const std::string& pattern = text_;
  if (pattern.find_first_of("*?") != std::string::npos) {
    if (Glob(pattern, module)) return true;
    for (size_t dot = module.find('.'); dot != std::string::npos; dot = module.find('.', dot + 1)) {
      if (Glob(pattern, std::string_view(module).substr(0, dot))) return true;
    }
    return false;
  }
  return ("." + module + ".").find("." + pattern + ".") != std::string::npos;
}

bool PatternMatches(const std::string& pattern, const std::string& module) {
  auto p = ModulePattern::Make(pattern);
  return p.ok() && p->Matches(module);
}

}  // namespace capplan::models::hf
