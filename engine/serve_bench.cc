#include "engine/serve_bench.h"

#include <cstdio>

#include "common/data_path.h"
#include "common/json_util.h"
#include "engine/backend_factory.h"
#include "engine/integrity_selftest.h"
#include "engine/splitmix.h"
#include "kernels/gemm/gemm_cost.h"
#include "kernels/harness/measurement.h"
#include "models/card.h"
#include "models/engine_profile.h"

namespace capplan::engine {
namespace {

Result<EngineLengthDist> ReadLength(JsonObject* parent, const std::string& key) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject o, parent->Child(key, /*required=*/true));
  EngineLengthDist d;
  CAPPLAN_RETURN_IF_ERROR(o.Get("dist", &d.dist, true));
  if (d.dist == "fixed") {
    CAPPLAN_RETURN_IF_ERROR(o.Get("value", &d.min, true));
    d.max = d.min;
  } else if (d.dist == "uniform" && o.Has("min")) {
    CAPPLAN_RETURN_IF_ERROR(o.Get("min", &d.min, true));
    CAPPLAN_RETURN_IF_ERROR(o.Get("max", &d.max, true));
  } else {
    return o.Error("dist",
                   "engine serve-bench draws only 'fixed' or 'uniform' {min, max} "
                   "lengths; override with --input-len/--output-len");
  }
  if (d.min < 1 || d.max < d.min) return o.Error("dist", "need 1 <= min <= max");
  return d;
}

}  // namespace

nlohmann::json EngineLengthDist::ToJson() const {
  if (dist == "fixed") return {{"dist", "fixed"}, {"value", min}};
  return {{"dist", "uniform"}, {"min", min}, {"max", max}};
}

Result<EngineScenario> ReadEngineScenario(const std::string& path) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  JsonObject root(doc, path, "");
  CAPPLAN_RETURN_IF_ERROR(root.CheckObject());
  EngineScenario s;
  s.path = path;
  CAPPLAN_RETURN_IF_ERROR(root.Get("name", &s.name));
  CAPPLAN_RETURN_IF_ERROR(root.Get("model", &s.model, true));
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject dep, root.Child("deployment", true));
  CAPPLAN_RETURN_IF_ERROR(dep.Get("tp", &s.tp));
  CAPPLAN_RETURN_IF_ERROR(dep.CheckRange("tp", s.tp, 1, 1024));
  CAPPLAN_RETURN_IF_ERROR(dep.Get("weights", &s.weights));
  CAPPLAN_RETURN_IF_ERROR(dep.CheckOneOf("weights", s.weights, {"default", "bf16", "fp8", "int4"}));
  s.choice.weights = s.weights;
  if (const nlohmann::json* pc = dep.Raw("weights_per_component"); pc && pc->is_object()) {
    for (const auto& [k, v] : pc->items()) {
      auto c = models::ParseComponent(k);
      if (!c.ok() || !v.is_string()) {
        return dep.Error("weights_per_component", "bad entry '" + k + "'");
      }
      s.choice.per_component[*c] = v.get<std::string>();
    }
  }
  std::string kv = "bf16";
  CAPPLAN_RETURN_IF_ERROR(dep.Get("kv_cache", &kv));
  auto kvd = models::ParseDtype(kv);
  if (!kvd.ok()) return dep.Error("kv_cache", kvd.status().message());
  s.choice.kv_cache = *kvd;
  std::string engine = "sglang", version;
  CAPPLAN_RETURN_IF_ERROR(dep.Get("engine", &engine));
  CAPPLAN_RETURN_IF_ERROR(dep.Get("engine_version", &version));
  auto resolved = models::ResolveEngine(engine, version);
  if (!resolved.ok()) return dep.Error("engine", resolved.status().message());
  const models::EngineDefaults& defaults = resolved->profile->defaults;
  int page = static_cast<int>(defaults.page_size);
  CAPPLAN_RETURN_IF_ERROR(dep.Get("page_size", &page));
  CAPPLAN_RETURN_IF_ERROR(dep.CheckRange("page_size", page, 1, 4096));
  s.page_size = page;
  s.chunked_prefill_tokens = defaults.chunked_prefill_tokens;
  CAPPLAN_RETURN_IF_ERROR(dep.Get("chunked_prefill_tokens", &s.chunked_prefill_tokens));
  CAPPLAN_RETURN_IF_ERROR(dep.CheckRange("chunked_prefill_tokens",
                                         static_cast<double>(s.chunked_prefill_tokens), 1, 1e9));
  CAPPLAN_RETURN_IF_ERROR(dep.Get("kv_integrity", &s.kv_integrity));
  CAPPLAN_RETURN_IF_ERROR(dep.CheckOneOf("kv_integrity", s.kv_integrity, {"none", "verify"}));
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject wl, root.Child("workload", true));
  CAPPLAN_RETURN_IF_ERROR(wl.Get("concurrency", &s.concurrency));
  CAPPLAN_RETURN_IF_ERROR(wl.CheckRange("concurrency", s.concurrency, 1, 1 << 20));
  CAPPLAN_RETURN_IF_ERROR(wl.Get("num_requests", &s.num_requests));
  CAPPLAN_RETURN_IF_ERROR(wl.CheckRange("num_requests", s.num_requests, 1, 1 << 24));
  int64_t seed = 1;
  CAPPLAN_RETURN_IF_ERROR(wl.Get("seed", &seed));
  s.seed = static_cast<uint64_t>(seed);
  CAPPLAN_ASSIGN_OR_RETURN(s.input, ReadLength(&wl, "input_tokens"));
  CAPPLAN_ASSIGN_OR_RETURN(s.output, ReadLength(&wl, "output_tokens"));
  return s;
}

nlohmann::json IterationsToJson(const std::vector<IterationRecord>& its) {
  nlohmann::json arr = nlohmann::json::array();
  for (const IterationRecord& it : its) {
    nlohmann::json prefill = nlohmann::json::array();
    for (const auto& c : it.batch.prefill) {
      prefill.push_back({{"new_tokens", c.new_tokens}, {"cached_tokens", c.cached_tokens}});
    }
    nlohmann::json j = {{"prefill", prefill},
                        {"decode_contexts", it.batch.decode_context},
                        {"measured_us", it.measured_us},
                        {"verify_us", it.verify_us},
                        {"forward_us", it.forward_us}};
    if (it.op.valid) {
      nlohmann::json by_id = nlohmann::json::object();
      for (const OpIdTime& t : it.op.ops) by_id[t.id] = t.us;
      // The same times by op class (communication: none on one rank).
      const auto by_class_us = it.op.ClassUs();
      nlohmann::json op = nlohmann::json::object();
      for (int c = 0; c < kEngineOpClasses; ++c) {
        if (static_cast<models::OpClass>(c) == models::OpClass::kCommunication) continue;
        op[models::OpClassName(static_cast<models::OpClass>(c))] = by_class_us[c];
      }
      j["op_id_us"] = by_id;
      j["op_us"] = op;
      j["host_us"] = it.op.host_us;
    }
    arr.push_back(std::move(j));
  }
  return arr;
}

namespace {

// A hybrid slice's layers (models::ModelCard::MixerOf of the slice card):
// how many are linear or window-limited, and their per-rank shapes, so a
// replay prices the layers the slice ran.
void HybridToJson(const SliceConfig& s, nlohmann::json* j) {
  if (s.program == nullptr || !s.program->card.HasMixedLayers()) return;
  const models::ModelCard& card = s.program->card;
  if (card.IsHybridLinear()) {
    (*j)["linear_attention_layers"] = card.linear_attention.layers;
    (*j)["linear_key_heads"] = s.linear_key_heads;
    (*j)["linear_value_heads"] = s.linear_value_heads;
    (*j)["linear_key_head_dim"] = s.linear_key_dim;
    (*j)["linear_value_head_dim"] = s.linear_value_dim;
    (*j)["linear_conv_kernel"] = s.linear_conv_kernel;
  }
  if (card.sliding_window_layers > 0) {
    (*j)["sliding_window_layers"] = card.sliding_window_layers;
    (*j)["sliding_window"] = card.sliding_window;
  }
}

}  // namespace

nlohmann::json SliceToJson(const SliceConfig& s) {
  nlohmann::json j = {{"dims", s.dims},
                      {"tp", s.tp},
                      {"layers", s.layers},
                      {"hidden", s.hidden},
                      {"vocab", s.vocab},
                      {"attention", s.attention == models::AttentionKind::kMla ? "mla" : "gqa"},
                      {"q_heads", s.q_heads},
                      {"kv_dtype", models::DtypeName(s.kv_dtype)},
                      {"attention_weights", kernels::GemmWeightFormatName(s.attention_format)},
                      {"experts_weights", kernels::GemmWeightFormatName(s.experts_format)},
                      {"shared_weights", kernels::GemmWeightFormatName(s.shared_format)},
                      {"dense_ffn_weights", kernels::GemmWeightFormatName(s.dense_ffn_format)},
                      {"int4_group", s.int4_group},
                      {"first_k_dense", s.first_k_dense},
                      {"seed", s.seed}};
  if (s.attention == models::AttentionKind::kGqa) {
    j["kv_heads"] = s.kv_heads;
    j["head_dim"] = s.head_dim;
  } else {
    j["q_lora_rank"] = s.q_lora_rank;
    j["kv_lora_rank"] = s.kv_lora_rank;
    j["qk_nope_head_dim"] = s.qk_nope;
    j["qk_rope_head_dim"] = s.qk_rope;
    j["v_head_dim"] = s.v_head_dim;
    if (s.index_topk > 0) {
      j["index_n_heads"] = s.index_heads;
      j["index_head_dim"] = s.index_head_dim;
      j["index_topk"] = s.index_topk;
      j["index_share_every"] = s.index_share_every;
    }
  }
  if (s.n_experts > 0) {
    j["n_routed_experts"] = s.n_experts;
    j["experts_per_token"] = s.top_k;
    j["n_shared_experts"] = s.n_shared;
    j["moe_intermediate_size"] = s.moe_intermediate;
  }
  // Per rank; the dense FFN of the leading dense layer of a MoE slice too.
  j["intermediate_size"] = s.dense_intermediate;
  HybridToJson(s, &j);
  return j;
}

std::string SourceCommit() {
  const std::string cmd = "git -C '" + DataRoot() + "' rev-parse --short HEAD 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "unknown";
  char buf[64] = {0};
  std::string out = fgets(buf, sizeof(buf), p) != nullptr ? buf : "";
  pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out.empty() ? "unknown" : out;
}

namespace {

// One run's settings: the scenario with the command's overrides applied.
struct BenchSetup {
  EngineScenario scn;  // the scenario, weights and KV cache overridden
  SliceConfig slice;
  int requests = 0, concurrency = 0;
  EngineLengthDist in, out;
  std::string integrity;
};

Result<BenchSetup> ResolveSetup(const EngineScenario& sc, const ServeBenchOptions& o) {
  BenchSetup b;
  b.scn = sc;
  if (o.weights) b.scn.weights = b.scn.choice.weights = *o.weights;
  if (o.kv_cache) b.scn.choice.kv_cache = *o.kv_cache;
  CAPPLAN_ASSIGN_OR_RETURN(models::ModelCard card, models::LoadModelCard(sc.model));
  CAPPLAN_ASSIGN_OR_RETURN(b.slice,
                           MakeSliceConfig(card, sc.tp, o.layers, o.dims, b.scn.choice, sc.seed));
  b.requests = o.num_requests.value_or(sc.num_requests);
  b.concurrency = o.concurrency.value_or(sc.concurrency);
  b.in = sc.input;
  b.out = sc.output;
  if (o.input_len) b.in = EngineLengthDist{"fixed", *o.input_len, *o.input_len};
  if (o.output_len) b.out = EngineLengthDist{"fixed", *o.output_len, *o.output_len};
  if (b.requests < 1 || b.concurrency < 1 || b.in.min < 1 || b.out.min < 1) {
    return Status::Usage("engine serve-bench: requests, concurrency and lengths must be >= 1");
  }
  b.integrity = o.kv_integrity.value_or(sc.kv_integrity);
  return b;
}

// Requests: lengths from the scenario's distributions, synthetic prompt ids.
// *max_tokens: the longest request's prompt + output.
std::vector<EngineRequest> DrawRequests(const BenchSetup& b, uint64_t seed, int64_t* max_tokens) {
  uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 1;
  std::vector<EngineRequest> reqs;
  *max_tokens = 0;
  for (int i = 0; i < b.requests; ++i) {
    EngineRequest r;
    r.id = i;
    const int64_t li =
        b.in.min + static_cast<int64_t>(NextRandom(&rng) % (b.in.max - b.in.min + 1));
    r.output_len = b.out.min + static_cast<int64_t>(NextRandom(&rng) % (b.out.max - b.out.min + 1));
    for (int64_t t = 0; t < li; ++t) {
      r.prompt.push_back(static_cast<int32_t>(NextRandom(&rng) % b.slice.vocab));
    }
    *max_tokens = std::max<int64_t>(*max_tokens, li + r.output_len);
    reqs.push_back(std::move(r));
  }
  return reqs;
}

// The loop's settings; the KV pool holds `concurrency` longest requests
// unless the command sized it.
Result<LoopOptions> SizeLoop(const EngineScenario& sc, int concurrency, int64_t max_tokens,
                             int64_t kv_pages) {
  LoopOptions lo;
  lo.page_size = sc.page_size;
  lo.chunked_prefill_tokens = sc.chunked_prefill_tokens;
  lo.max_running = concurrency;
  const int64_t pages_per_req = (max_tokens + sc.page_size - 1) / sc.page_size;
  const int64_t pages = kv_pages > 0 ? kv_pages : 1 + concurrency * pages_per_req;
  if (pages > (1 << 26)) return Status::Invalid("engine serve-bench: KV pool too large");
  lo.num_pages = static_cast<int32_t>(pages);
  return lo;
}

// The run's totals, from the loop's results and iterations.
struct BenchTotals {
  int64_t out_tokens = 0, prefill_tokens = 0;
  double verify_us = 0;
};

BenchTotals CountRun(const BatchLoop& loop, ServeBenchRun* run) {
  BenchTotals t;
  for (const auto& [id, r] : loop.results()) {
    r.failed ? ++run->failed : ++run->completed;
    t.out_tokens += static_cast<int64_t>(r.output.size());
  }
  for (const auto& it : loop.iterations()) {
    for (const auto& c : it.batch.prefill) t.prefill_tokens += c.new_tokens;
    t.verify_us += it.verify_us;
  }
  const double secs = loop.total_us() * 1e-6;
  run->output_tokens_per_s = secs > 0 ? t.out_tokens / secs : 0;
  run->total_tokens_per_s = secs > 0 ? (t.out_tokens + t.prefill_tokens) / secs : 0;
  return t;
}

// The capplan.engine_run.v1 document (calibrate/ENGINE_RUN.md).
nlohmann::json RunDoc(const EngineScenario& sc, const ServeBenchOptions& o, const BenchSetup& b,
                      const EngineBackend& backend, const BatchLoop& loop, const LoopOptions& lo,
                      const ServeBenchRun& run, const BenchTotals& t) {
  nlohmann::json d;
  d["format"] = "capplan.engine_run.v1";
  d["backend"] = backend.name();
  d["gpu"] = backend.gpu_name();
  d["driver"] = backend.driver_version();
  d["cuda"] = backend.cuda_version();
  d["commit"] = SourceCommit();
  d["date"] = kernels::UtcNowIso8601();
  d["scenario"] = {{"path", sc.path}, {"name", sc.name}};
  d["model"] = sc.model;
  d["layers"] = o.layers;
  d["slice"] = SliceToJson(b.slice);
  d["deployment"] = {{"tp", sc.tp},
                     {"weights", b.scn.weights},
                     {"kv_cache", models::DtypeName(b.scn.choice.kv_cache)},
                     {"page_size", sc.page_size},
                     {"chunked_prefill_tokens", sc.chunked_prefill_tokens},
                     {"kv_integrity", b.integrity},
                     {"max_running_requests", b.concurrency}};
  d["workload"] = {{"num_requests", b.requests},
                   {"concurrency", b.concurrency},
                   {"seed", sc.seed},
                   {"input_tokens", b.in.ToJson()},
                   {"output_tokens", b.out.ToJson()}};
  d["kv_pages"] = lo.num_pages;
  d["iterations"] = IterationsToJson(loop.iterations());
  d["completed"] = run.completed;
  d["failed"] = run.failed;
  d["prefill_tokens"] = t.prefill_tokens;
  d["output_tokens"] = t.out_tokens;
  d["total_measured_us"] = loop.total_us();
  d["verify_us"] = t.verify_us;
  d["output_tokens_per_s"] = run.output_tokens_per_s;
  d["total_tokens_per_s"] = run.total_tokens_per_s;
  return d;
}

}  // namespace

Result<ServeBenchRun> RunServeBench(const EngineScenario& sc, const ServeBenchOptions& o) {
  CAPPLAN_ASSIGN_OR_RETURN(const BenchSetup b, ResolveSetup(sc, o));
  int64_t max_tokens = 0;
  std::vector<EngineRequest> reqs = DrawRequests(b, sc.seed, &max_tokens);
  CAPPLAN_ASSIGN_OR_RETURN(const LoopOptions lo,
                           SizeLoop(sc, b.concurrency, max_tokens, o.kv_pages));

  BackendOptions bo;
  bo.name = o.backend;
  bo.num_pages = lo.num_pages;
  bo.page_size = lo.page_size;
  bo.max_step_tokens = lo.chunked_prefill_tokens + lo.max_running;
  // serve-bench measures: the kernels' own split plans run (cuda_backend.h).
  bo.batch_invariant = false;
  CAPPLAN_ASSIGN_OR_RETURN(auto backend, MakeEngineBackend(b.slice, bo));
  CAPPLAN_ASSIGN_OR_RETURN(auto tracker, backend->MakeTracker(b.integrity, lo.num_pages));
  BatchLoop loop(backend.get(), tracker.get(), lo);
  for (auto& r : reqs) loop.Submit(std::move(r));
  CAPPLAN_RETURN_IF_ERROR(loop.Run());

  ServeBenchRun run;
  const BenchTotals totals = CountRun(loop, &run);
  run.doc = RunDoc(sc, o, b, *backend, loop, lo, run, totals);
  return run;
}

}  // namespace capplan::engine
