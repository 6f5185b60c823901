#include "engine/numerics.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "engine/cpu_backend.h"
#include "engine/integrity_selftest.h"
#include "engine/serve_bench.h"

namespace capplan::engine {
namespace {

struct Accum {
  std::vector<double> diff2, ref2;  // per layer
  double logit_diff2 = 0, logit_ref2 = 0;
};

Result<std::unique_ptr<CpuBackend>> Make(const models::ModelCard& card, const NumericsOptions& o,
                                         const std::string& weights, models::Dtype kv,
                                         int32_t pages) {
  models::PrecisionChoice choice;
  choice.weights = weights;
  choice.kv_cache = kv;
  CAPPLAN_ASSIGN_OR_RETURN(SliceConfig s,
                           MakeSliceConfig(card, o.tp, o.layers, o.dims, choice, o.seed));
  return CpuBackend::Create(s, pages, /*page_size=*/16);
}

// Runs one stream through both backends in lockstep: prefill the prompt in
// one chunk, then feed `tokens` one at a time; compares every layer output
// and the logits of every position that samples.
Status CompareStream(CpuBackend* ref, CpuBackend* var, const std::vector<int32_t>& prompt,
                     const std::vector<int32_t>& tokens, KvPageManager* kv, int64_t id,
                     Accum* acc, FormatComparison* cmp) {
  std::vector<std::vector<float>> ref_layers(ref->config().layers);
  ref->set_probe([&](int l, const std::vector<float>& rows, int) { ref_layers[l] = rows; });
  var->set_probe([&](int l, const std::vector<float>& rows, int) {
    for (size_t i = 0; i < rows.size(); ++i) {
      const double d = rows[i] - ref_layers[l][i];
      acc->diff2[l] += d * d;
      acc->ref2[l] += static_cast<double>(ref_layers[l][i]) * ref_layers[l][i];
    }
  });
  CAPPLAN_RETURN_IF_ERROR(kv->AddRequest(id));
  int64_t pos = 0;
  std::vector<int32_t> feed = prompt;
  for (size_t step = 0; step <= tokens.size(); ++step) {
    CAPPLAN_RETURN_IF_ERROR(kv->Reserve(id, pos + static_cast<int64_t>(feed.size())));
    StepRequest r;
    r.request = id;
    r.tokens = feed;
    r.start_position = pos;
    r.pages = &kv->PageTable(id);
    r.want_token = true;
    std::vector<int32_t> a, b;
    CAPPLAN_RETURN_IF_ERROR(ref->Forward({r}, nullptr, &a));
    CAPPLAN_RETURN_IF_ERROR(var->Forward({r}, nullptr, &b));
    const auto& la = ref->last_logits().at(0);
    const auto& lb = var->last_logits().at(0);
    for (size_t i = 0; i < la.size(); ++i) {
      acc->logit_diff2 += (lb[i] - la[i]) * static_cast<double>(lb[i] - la[i]);
      acc->logit_ref2 += static_cast<double>(la[i]) * la[i];
    }
    ++cmp->positions;
    if (a[0] == b[0]) ++cmp->top1_agree;
    pos += static_cast<int64_t>(feed.size());
    if (step == tokens.size()) break;
    feed = {tokens[step]};  // teacher forcing: both see the same next token
  }
  ref->set_probe(nullptr);
  var->set_probe(nullptr);
  return kv->Release(id);
}

}  // namespace

Result<NumericsReport> RunNumerics(const models::ModelCard& card, const NumericsOptions& o) {
  if (o.streams < 1 || o.prompt_tokens < 1 || o.generated_tokens < 0) {
    return Status::Usage("engine numerics: --streams and --prompt-tokens must be >= 1");
  }
  struct Pair {
    std::string name, ref_w, var_w;
    models::Dtype ref_kv, var_kv;
  };
  const std::vector<Pair> pairs = {
      {"kv_fp8_vs_bf16", "default", "default", models::Dtype::kBf16, models::Dtype::kFp8E4m3},
      {"weights_int4_vs_fp8", "fp8", "int4", models::Dtype::kBf16, models::Dtype::kBf16},
  };
  const int64_t len = o.prompt_tokens + o.generated_tokens + 1;
  const int32_t pages = static_cast<int32_t>(2 + (len + 15) / 16);
  NumericsReport rep;
  rep.model = card.name;
  for (const Pair& p : pairs) {
    CAPPLAN_ASSIGN_OR_RETURN(auto ref, Make(card, o, p.ref_w, p.ref_kv, pages));
    CAPPLAN_ASSIGN_OR_RETURN(auto var, Make(card, o, p.var_w, p.var_kv, pages));
    if (rep.slice.is_null()) rep.slice = SliceToJson(ref->config());
    FormatComparison cmp;
    cmp.name = p.name;
    cmp.reference = ref->config().Describe();
    cmp.variant = var->config().Describe();
    Accum acc;
    acc.diff2.assign(o.layers, 0.0);
    acc.ref2.assign(o.layers, 0.0);
    const auto prompts = SyntheticRequests(o.streams, o.prompt_tokens, o.prompt_tokens, 1,
                                           ref->config().vocab, o.seed + 100);
    for (const EngineRequest& pr : prompts) {
      // The stream: the reference's own greedy continuation of the prompt.
      std::vector<int32_t> stream;
      {
        KvPageManager kv(pages, 16);
        CAPPLAN_RETURN_IF_ERROR(kv.AddRequest(0));
        std::vector<int32_t> feed = pr.prompt;
        int64_t pos = 0;
        for (int t = 0; t < o.generated_tokens; ++t) {
          CAPPLAN_RETURN_IF_ERROR(kv.Reserve(0, pos + static_cast<int64_t>(feed.size())));
          StepRequest r{0, feed, pos, &kv.PageTable(0), true};
          std::vector<int32_t> next;
          CAPPLAN_RETURN_IF_ERROR(ref->Forward({r}, nullptr, &next));
          pos += static_cast<int64_t>(feed.size());
          stream.push_back(next[0]);
          feed = {next[0]};
        }
      }
      KvPageManager kv(pages, 16);
      CAPPLAN_RETURN_IF_ERROR(
          CompareStream(ref.get(), var.get(), pr.prompt, stream, &kv, pr.id, &acc, &cmp));
    }
    for (int l = 0; l < o.layers; ++l) {
      cmp.layer_rel_err.push_back(acc.ref2[l] > 0 ? std::sqrt(acc.diff2[l] / acc.ref2[l]) : 0);
    }
    cmp.logits_rel_err = acc.logit_ref2 > 0 ? std::sqrt(acc.logit_diff2 / acc.logit_ref2) : 0;
    rep.comparisons.push_back(std::move(cmp));
  }
  return rep;
}

nlohmann::json NumericsReport::ToJson() const {
  nlohmann::json j;
  j["label"] = kNumericsLabel;
  j["backend"] = "cpu";
  j["model"] = model;
  j["slice"] = slice;
  j["comparisons"] = nlohmann::json::array();
  for (const auto& c : comparisons) {
    j["comparisons"].push_back({{"name", c.name},
                                {"reference", c.reference},
                                {"variant", c.variant},
                                {"layer_rel_err", c.layer_rel_err},
                                {"logits_rel_err", c.logits_rel_err},
                                {"positions", c.positions},
                                {"top1_agreement", c.Top1Agreement()}});
  }
  return j;
}

std::string NumericsReport::ToText() const {
  std::ostringstream os;
  os << model << " (" << kNumericsLabel << ")\n";
  char buf[256];
  for (const auto& c : comparisons) {
    os << "\n" << c.name << "\n  reference: " << c.reference << "\n  variant:   " << c.variant
       << "\n";
    for (size_t l = 0; l < c.layer_rel_err.size(); ++l) {
      std::snprintf(buf, sizeof(buf), "  layer %zu output rel. error  %.3e\n", l,
                    c.layer_rel_err[l]);
      os << buf;
    }
    std::snprintf(buf, sizeof(buf),
                  "  logits rel. error          %.3e\n  top-1 agreement            %.4f "
                  "(%d of %d positions)\n",
                  c.logits_rel_err, c.Top1Agreement(), c.top1_agree, c.positions);
    os << buf;
  }
  return os.str();
}

}  // namespace capplan::engine
