// The linear modules of a card as the checkpoint names them, and how the
// module patterns of quantization configs match those names.
#include <regex>
#include <string>
#include <string_view>

#include "models/hf_import_internal.h"

namespace capplan::models::hf {

namespace {

void AddAttention(const ModelCard& c, const std::string& p, bool served,
                  std::vector<HfModule>* out) {
  auto add = [&](const char* n) { out->push_back({p + "self_attn." + n, Component::kAttention, served}); };
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
  if (dense) {
    for (const char* k : kProj) out->push_back({p + "mlp." + k, Component::kDenseFfn, served});
    return;
  }
  if (n.fused_experts) {
    out->push_back({p + "mlp.experts.gate_up_proj", Component::kExperts, served});
    out->push_back({p + "mlp.experts.down_proj", Component::kExperts, served});
  } else {
    for (int e = 0; e < c.n_routed_experts; ++e) {
      const std::string ep = p + "mlp.experts." + std::to_string(e) + ".";
      for (const char* k : kProj) out->push_back({ep + k, Component::kExperts, served});
    }
  }
  if (c.n_shared_experts > 0) {
    for (const char* k : kProj) {
      out->push_back({p + "mlp.shared_experts." + k, Component::kSharedExperts, served});
    }
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
    AddAttention(c, p, served, &out);
    // MTP layers are MoE layers in an MoE model.
    const bool dense = !c.IsMoe() || (served && layer < c.first_k_dense);
    AddFfn(c, n, p, dense, served, &out);
  }
  out.push_back({"model.embed_tokens", Component::kEmbeddings, true});
  if (!c.tie_word_embeddings) out.push_back({"lm_head", Component::kEmbeddings, true});
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
