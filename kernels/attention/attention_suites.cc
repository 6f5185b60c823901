// Measurement suites for the attention-side kernels. Each suite sweeps its
// kernel over shapes taken from the shipped model cards at TP8 (one 8xH200
// box, the deployment capplan plans for; attention_sweep.h), batch 1-256 and context
// 256-128K, checks small cases against the CPU reference and times every
// case with the CUDA event timer. In --dry-run the same suites run the CPU
// references on tiny shapes and record CPU wall-clock time (file marked
// dry_run), which exercises the JSON shape without a GPU.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/data_path.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/attention_sweep.h"
#include "kernels/attention/elementwise.h"
#include "kernels/attention/paged_kv.h"
#include "kernels/attention/suite_cases.h"
#include "kernels/formats/fp8.h"
#include "kernels/harness/all_suites.h"
#include "kernels/harness/suite.h"

namespace capplan::kernels {

namespace {

constexpr int kTp = 8;  // 8xH200 at TP8 (the deployment capplan plans for)
// Cap on KV tokens per timed case (batch * context): 8M tokens is 4 GB of
// BF16 GQA KV (1 KV head, d=128) or 9.7 GB of MLA latent, enough to be far
// past the 60 MB L2 and small enough to allocate and fill in milliseconds.
constexpr int64_t kMaxKvTokens = 8LL << 20;

Result<std::vector<AttnHeadShape>> CardShapes() {
  return LoadAttentionShapesFromCards(DataPath("models/cards"), kTp);
}

bool IsMissionCard(const AttnHeadShape& h) {
  return h.cards.find("kimi-k2.6") != std::string::npos ||
         h.cards.find("glm-5.2") != std::string::npos;
}

std::vector<AttnCaseSpec> DecodeCases(const SuiteOptions& o, const std::vector<AttnHeadShape>& hs,
                                      bool want_mla, bool want_dsa) {
  std::vector<AttnCaseSpec> out;
  std::vector<int> batches = {1, 16, 64, 256};
  std::vector<int> ctxs = {256, 4096, 32768, 131072};
  std::vector<int> pages = want_mla ? std::vector<int>{64} : std::vector<int>{16, 64};
  if (o.dry_run || o.quick || o.smoke) {
    batches = {2};
    // Smoke: a DSA row must hold more tokens than its top-k to select.
    ctxs = {o.dry_run ? 192 : (o.smoke && !want_dsa ? 1024 : 4096)};
    pages = {want_mla ? 64 : 16};
  }
  for (const auto& h : hs) {
    if (h.mla != want_mla || (h.topk > 0) != want_dsa) continue;
    for (KvDtype dt : {KvDtype::kBf16, KvDtype::kFp8}) {
      for (int page : pages) {
        for (int b : batches) {
          for (int c : ctxs) {
            if (static_cast<int64_t>(b) * c > kMaxKvTokens) continue;
            // MLA on CUDA cores: cap FLOPs so one case stays well under a
            // second (2 * ctx * heads * 1088 per row).
            if (want_mla && !want_dsa && 2.0 * b * c * h.q_heads * (h.k_dim + h.v_dim) > 4e11) {
              continue;
            }
            AttnCaseSpec s;
            s.kernel = want_dsa ? "dsa_decode_attention"
                                : (want_mla ? "mla_decode_attention" : "paged_decode_attention");
            s.variant = want_mla ? "absorbed_fma_v1" : "gqa_split_kv_fma_v1";
            s.heads = h;
            if (o.dry_run && want_dsa) s.heads.topk = 64;  // tiny CPU case
            s.dtype = dt;
            s.page = page;
            s.batch = b;
            s.ctx = c;
            out.push_back(s);
          }
        }
      }
    }
    if (o.quick || o.dry_run || o.smoke) break;  // one head shape is enough for a smoke run
  }
  return out;
}

using CaseFn = Status (*)(const SuiteOptions&, const AttnCaseSpec&, MeasurementSink*);

// The cases of `specs` that pass the shape filter. Mission priority: the
// mission's models decoding at 32K tokens or more (where FP8 KV and DSA's
// top-k decide the step time), and page verification at decode batches and
// long contexts.
std::vector<SuiteCase> ToCases(const SuiteOptions& o, const std::vector<AttnCaseSpec>& specs,
                               const char* op_class, CaseFn fn) {
  std::vector<SuiteCase> out;
  for (const auto& spec : specs) {
    if (!o.Selected(spec.Label())) continue;
    SuiteCase c;
    c.label = spec.Label();
    c.kernel = spec.kernel;
    c.op_class = op_class;
    const bool verify = spec.kernel == "kv_integrity_verify";
    if (verify ? spec.batch >= 16 && spec.ctx >= 32768
               : spec.chunk == 0 && spec.ctx >= 32768 && IsMissionCard(spec.heads)) {
      c.priority = kMissionPriority;
    } else if (spec.ctx <= 256 && spec.batch <= 16) {
      c.priority = kLatePriority;  // launch-bound corners: the simulator's overhead fit has them
    }
    c.run = [spec, fn](const SuiteOptions& so, MeasurementSink* sink) {
      return fn(so, spec, sink);
    };
    out.push_back(std::move(c));
  }
  return out;
}

Result<std::vector<SuiteCase>> DecodeSuite(const SuiteOptions& o) {
  CAPPLAN_ASSIGN_OR_RETURN(auto hs, CardShapes());
  return ToCases(o, DecodeCases(o, hs, false, false), "attention", RunAttentionCase);
}

Result<std::vector<SuiteCase>> MlaSuite(const SuiteOptions& o) {
  CAPPLAN_ASSIGN_OR_RETURN(auto hs, CardShapes());
  std::vector<AttnCaseSpec> cases = DecodeCases(o, hs, true, false);
  // DP-attention deployments keep all 64-128 heads on one rank (DeepSeek
  // decodes with h_q = 128: deepseek-ai/FlashMLA
  // docs/20250422-new-kernel-deep-dive.md): a few small cases.
  if (!o.dry_run && !o.quick && !o.smoke && !cases.empty()) {
    const AttnCaseSpec first = cases.front();
    for (int heads : {64, 128}) {
      for (int b : {1, 16}) {
        AttnCaseSpec s = first;
        s.heads.q_heads = heads;
        s.heads.cards += " (all heads on one rank)";
        s.batch = b;
        s.ctx = 4096;
        s.dtype = KvDtype::kBf16;
        cases.push_back(s);
      }
    }
  }
  return ToCases(o, cases, "attention", RunAttentionCase);
}

Result<std::vector<SuiteCase>> DsaSuite(const SuiteOptions& o) {
  CAPPLAN_ASSIGN_OR_RETURN(auto hs, CardShapes());
  return ToCases(o, DecodeCases(o, hs, true, true), "attention", RunAttentionCase);
}

Result<std::vector<SuiteCase>> PrefillSuite(const SuiteOptions& o) {
  CAPPLAN_ASSIGN_OR_RETURN(auto hs, CardShapes());
  std::vector<AttnCaseSpec> cases;
  for (const auto& h : hs) {
    if (h.mla) continue;
    // (chunk, total context): a first chunk and a chunk after a long prefix.
    std::vector<std::pair<int, int>> cc = {{512, 512}, {512, 8192}, {2048, 2048}, {2048, 16384}};
    if (o.dry_run || o.quick) cc = {{o.dry_run ? 16 : 512, o.dry_run ? 64 : 4096}};
    if (o.smoke && !o.dry_run) cc = {{64, 512}};
    for (KvDtype dt : {KvDtype::kBf16, KvDtype::kFp8}) {
      for (auto [chunk, ctx] : cc) {
        AttnCaseSpec s;
        s.kernel = "prefill_attention";
        s.variant = "causal_chunk_rows_fma_v1";
        s.heads = h;
        s.dtype = dt;
        s.page = 16;
        s.batch = 1;
        s.ctx = ctx;
        s.chunk = chunk;
        cases.push_back(s);
      }
    }
    break;  // one GQA shape: FMA prefill is a correctness reference, not a speed path
  }
  return ToCases(o, cases, "attention", RunAttentionCase);
}

Result<std::vector<SuiteCase>> AppendSuite(const SuiteOptions& o) {
  CAPPLAN_ASSIGN_OR_RETURN(auto hs, CardShapes());
  std::vector<int> ns = {1, 16, 64, 256, 2048, 8192};
  if (o.dry_run || o.quick || o.smoke) ns = {16};
  std::vector<AttnCaseSpec> specs;
  for (const auto& h : hs) {
    if (h.topk > 0) continue;
    for (KvDtype dt : {KvDtype::kBf16, KvDtype::kFp8}) {
      for (int n : ns) {
        AttnCaseSpec s;
        s.kernel = "paged_kv_append";
        s.heads = h;
        s.dtype = dt;
        s.page = h.mla ? 64 : 16;
        s.batch = n;
        specs.push_back(s);
      }
    }
    if (o.dry_run || o.quick) break;  // smoke: GQA and MLA layouts both
    if (o.smoke && h.mla) break;
  }
  return ToCases(o, specs, "attention", RunAppendCase);
}

Result<std::vector<SuiteCase>> VerifySuite(const SuiteOptions& o) {
  std::vector<int> batches = {1, 16, 64, 256}, ctxs = {4096, 32768, 131072}, pages = {16, 64};
  if (o.dry_run || o.quick || o.smoke) {
    batches = {4};
    ctxs = {1024};
    pages = {16};
  }
  std::vector<AttnCaseSpec> specs;
  for (int page : pages) {
    for (int b : batches) {
      for (int c : ctxs) {
        if (static_cast<int64_t>(b) * c > kMaxKvTokens) continue;
        AttnCaseSpec s;
        s.kernel = "kv_integrity_verify";
        s.page = page;
        s.batch = b;
        s.ctx = c;
        specs.push_back(s);
      }
    }
  }
  return ToCases(o, specs, "overhead", RunVerifyCase);
}

Result<std::vector<SuiteCase>> ElementwiseSuite(const SuiteOptions& o) {
  std::vector<int> ns = {1, 16, 256, 4096, 16384};
  if (o.dry_run || o.quick || o.smoke) ns = {16};
  // Widths: hidden 4096 (llama-3.1-8b, qwen3-235b cards) and 7168 (kimi-k2.6,
  // deepseek-v3 cards) for RMSNorm; per-rank dense FFN widths at TP8 for
  // SiLU-mul: 18432/8 = 2304 (kimi-k2.6) and 28672/8 = 3584 (llama-3.1-70b).
  std::vector<std::pair<std::string, int>> ops = {{"rmsnorm", 4096},  {"rmsnorm", 7168},
                                                  {"silu_mul", 2304}, {"silu_mul", 3584},
                                                  {"rope_gqa", 128},  {"rope_mla", 576}};
  if (o.smoke) ops = {{"rmsnorm", 7168}, {"silu_mul", 2304}, {"rope_gqa", 128}, {"rope_mla", 576}};
  std::vector<SuiteCase> out;
  for (const auto& [op, width] : ops) {
    for (int n : ns) {
      const ElementwiseCaseSpec spec{op, n, width};
      if (!o.Selected(spec.Label())) continue;
      SuiteCase c;
      c.label = spec.Label();
      c.kernel = ElementwiseRecord(spec).kernel;
      c.op_class = "elementwise";
      c.run = [spec](const SuiteOptions& so, MeasurementSink* sink) {
        return RunElementwiseCase(so, spec, sink);
      };
      out.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace

void RegisterAttentionSuites() {
  RegisterSuite("paged_decode_attention", DecodeSuite,
                "GQA/MHA decode over the paged cache, BF16/FP8 KV, pages 16/64 (cards at TP8)");
  RegisterSuite("mla_decode_attention", MlaSuite,
                "MLA absorbed decode (latent 512 + rope 64), BF16/FP8 latent");
  RegisterSuite("dsa_decode_attention", DsaSuite,
                "MLA decode over a DSA top-k token set (index_topk from the card)");
  RegisterSuite("prefill_attention", PrefillSuite,
                "causal chunked prefill over the paged prefix (GQA)");
  RegisterSuite("paged_kv_append", AppendSuite, "KV append with FP8 quantisation and tag stamps");
  RegisterSuite("kv_integrity_verify", VerifySuite,
                "page-tag verification of a batch's page table");
  RegisterSuite("elementwise", ElementwiseSuite, "fused add+RMSNorm, SiLU-and-mul, RoPE");
}

}  // namespace capplan::kernels
