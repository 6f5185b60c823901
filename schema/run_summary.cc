#include "schema/run_summary.h"

#include <cmath>
#include <limits>

#include "common/json_util.h"

namespace capplan::schema {

namespace {

constexpr int kNumStats = 5;
constexpr const char* kStats[kNumStats] = {"mean", "median", "p90", "p95", "p99"};

template <class S>
auto& StatRef(S& s, int i) {
  switch (i) {
    case 0:
      return s.mean;
    case 1:
      return s.median;
    case 2:
      return s.p90;
    case 3:
      return s.p95;
    default:
      return s.p99;
  }
}

std::string StatKey(int i, const std::string& name) {
  return std::string(kStats[i]) + "_" + name + "_ms";
}

// ---- Each struct's fields, named once; the writer and the reader below
// visit them. ----

template <class M, class V>
void MemoryFields(M& m, V& v) {
  v("weights_bytes_per_gpu", m.weights_bytes_per_gpu);
  v("weights_by_component_bytes", m.weights_by_component_bytes);
  v("reserve_bytes_per_gpu", m.reserve_bytes_per_gpu);
  v("kv_pool_bytes_per_gpu", m.kv_pool_bytes_per_gpu);
  v("gpu_memory_bytes", m.gpu_memory_bytes);
  v("mem_fraction_static", m.mem_fraction_static);
  v("mem_fraction_defaulted", m.mem_fraction_defaulted);
  v("kv_tokens_per_rank", m.kv_tokens_per_rank);
  v("kv_tokens_lo", m.kv_tokens_lo);
  v("kv_tokens_hi", m.kv_tokens_hi);
  v("draft_weights_bytes_per_gpu", m.draft_weights_bytes_per_gpu);
  v("terms_bytes_per_gpu", m.terms_bytes_per_gpu);
}

template <class G, class V>
void GoodputFields(G& g, V& v) {
  v("slo", g.slo);
  v("good_requests", g.good_requests);
  v("request_goodput", g.request_goodput);
  v("good_fraction", g.good_fraction);
}

template <class S, class V>
void SimulatorFields(S& s, V& v) {
  v("step_cost_memo_hits", s.step_cost_memo_hits);
  v("step_cost_memo_misses", s.step_cost_memo_misses);
  v("fast_forward_iterations", s.fast_forward_iterations);
  v("fast_forward_completions", s.fast_forward_completions);
  v("context_bucket_relative_error", s.context_bucket_relative_error);
  v("itl_histogram_relative_error", s.itl_histogram_relative_error);
  v("simulated_end_s", s.simulated_end_s);
}

template <class T, class V>
void TransferFields(T& t, V& v) {
  v("link", t.link);
  v("layerwise_overlap", t.layerwise_overlap);
  v("src_kv_dtype", t.src_kv_dtype);
  v("dst_kv_dtype", t.dst_kv_dtype);
  v("src_bytes_per_token_per_rank", t.src_bytes_per_token_per_rank);
  v("dst_bytes_per_token_per_rank", t.dst_bytes_per_token_per_rank);
  v("wire_bytes_per_token_per_rank", t.wire_bytes_per_token_per_rank);
  v("bandwidth_bytes_per_s", t.bandwidth_bytes_per_s);
  v("latency_s", t.latency_s);
  v("latency_source", t.latency_source);
  v("placement", t.placement);
  v("senders_per_request", t.senders_per_request);
  v("receivers_per_request", t.receivers_per_request);
  v("link_bytes_per_token", t.link_bytes_per_token);
  v.Stats("exposed_transfer", t.exposed_transfer);
}

// A pool's fields; `flat` (the one co-located pool, written at the top
// level) leaves out what the run's own fields say already.
template <class P, class V>
void PoolFields(P& p, V& v, bool flat) {
  v("deployment", p.deployment);
  if (!flat) {
    v("gpus", p.gpus);
    v("completed", p.completed);
    v("failed", p.failed);
  }
  v("kv_capacity_tokens", p.kv_capacity_tokens);
  v("kv_bytes_per_token", p.kv_bytes_per_token);
  v("peak_kv_tokens", p.peak_kv_tokens);
  v("peak_kv_fraction", p.peak_kv_fraction);
  v("max_concurrent_requests", p.max_concurrent_requests);
  v("max_running_requests_observed", p.max_running_requests_observed);
  v("retractions", p.retractions);
  v("kv_bound", p.kv_bound);
  v.Object("memory", p.memory, [](auto& m, auto& w) { MemoryFields(m, w); });
  v("op_time_share", p.op_time_share);
  v("bound_time_share", p.bound_time_share);
  v("kv_verify_time_share", p.kv_verify_time_share);
  v("cross_version_drift", p.cross_version_drift);
  v("provenance_time_share", p.provenance_time_share);
  v("provenance_spread", p.provenance_spread);
  v("iterations", p.iterations);
  v("busy_s", p.busy_s);
  v.Object("simulator", p.simulator, [](auto& s, auto& w) { SimulatorFields(s, w); });
  v("warnings", p.warnings);
  v("kv_pages_per_rank", p.kv_pages_per_rank);
  v("peak_kv_pages_per_rank", p.peak_kv_pages_per_rank);
  v("peak_kv_page_fraction", p.peak_kv_page_fraction);
  v("peak_transfer_pages", p.peak_transfer_pages);
  v("utilization", p.utilization);
  v("prefix_cache_hit_rate", p.prefix_cache_hit_rate);
  v("prefill_tokens_saved", p.prefill_tokens_saved);
  v("cached_kv_tokens_peak", p.cached_kv_tokens_peak);
  v("prefix_cache_evicted_blocks", p.prefix_cache_evicted_blocks);
  v("host_cache_hit_rate", p.host_cache_hit_rate);
  v("host_kv_loaded_gib", p.host_kv_loaded_gib);
  v("host_kv_written_gib", p.host_kv_written_gib);
  v("host_kv_peak_gib", p.host_kv_peak_gib);
  v("host_kv_evicted_blocks", p.host_kv_evicted_blocks);
  v("kv_load_stall_s", p.kv_load_stall_s);
  v("accept_length_mean", p.accept_length_mean);
  v("spec_verify_time_share", p.spec_verify_time_share);
  v("spec_draft_time_share", p.spec_draft_time_share);
  if (!flat) {  // at the top level these would be the run's
    v("nodes", p.nodes);
    v("avg_kw", p.avg_kw);
    v("avg_gpu_kw", p.avg_gpu_kw);
    v("peak_kw", p.peak_kw);
    v("provisioned_kw", p.provisioned_kw);
    v.StageMap(p.stages);
    v.Notes(p.notes);
  }
}

template <class R, class V>
void RunFields(R& s, V& v) {
  v.NameLike("scenario", s.scenario);
  v.NameLike("model", s.model);
  v.NameLike("hardware", s.hardware);
  v("label", s.label);
  v.Profile(s.profile);
  v("workload", s.workload);
  v("completed", s.completed);
  v("failed", s.failed);
  v("duration_s", s.duration_s);
  v("total_input_tokens", s.total_input_tokens);
  v("total_output_tokens", s.total_output_tokens);
  v("request_throughput", s.request_throughput);
  v("input_throughput", s.input_throughput);
  v("output_throughput", s.output_throughput);
  v("total_token_throughput", s.total_token_throughput);
  v("output_throughput_per_gpu", s.output_throughput_per_gpu);
  v("total_token_throughput_per_gpu", s.total_token_throughput_per_gpu);
  v.Stats("ttft", s.ttft);
  v.Stats("tpot", s.tpot);
  v.Stats("itl", s.itl);
  v.Stats("e2el", s.e2el);
  v.Stats("queue_time", s.queue_time);
  v.Stats("prefill_time", s.prefill_time);
  v.Stats("kv_load_time", s.kv_load_time);
  v.Object("goodput", s.goodput, [](auto& g, auto& w) { GoodputFields(g, w); });
  v("gpus", s.gpus);
  v("usd_per_gpu_hour", s.usd_per_gpu_hour);
  v("cost_usd", s.cost_usd);
  v("cost_usd_per_million_output_tokens", s.cost_usd_per_million_output_tokens);
  v("cost_usd_per_million_total_tokens", s.cost_usd_per_million_total_tokens);
  v("pue", s.pue);
  v("nodes", s.nodes);
  v("avg_kw", s.avg_kw);
  v("peak_kw", s.peak_kw);
  v("avg_kw_per_node", s.avg_kw_per_node);
  v("peak_kw_per_node", s.peak_kw_per_node);
  v("provisioned_kw", s.provisioned_kw);
  v("joules_per_output_token", s.joules_per_output_token);
  v("joules_per_total_token", s.joules_per_total_token);
  v("gpu_joules_per_output_token", s.gpu_joules_per_output_token);
  v("output_tokens_per_s_per_mw", s.output_tokens_per_s_per_mw);
  v("total_tokens_per_s_per_mw", s.total_tokens_per_s_per_mw);
  v("usd_per_kwh", s.usd_per_kwh);
  v("electricity_usd_per_million_output_tokens", s.electricity_usd_per_million_output_tokens);
  v("electricity_usd_per_million_total_tokens", s.electricity_usd_per_million_total_tokens);
  v("max_concurrency", s.max_concurrency);
  v("concurrency", s.concurrency);
  v("mean_requests_in_flight", s.mean_requests_in_flight);
  v("window_occupancy", s.window_occupancy);
  v.Object("transfer", s.transfer, [](auto& t, auto& w) { TransferFields(t, w); });
  v("model_limits", s.model_limits);
  v.Notes(s.notes);
}

// ---- Writer ----

class Writer {
 public:
  explicit Writer(nlohmann::json* out) : j_(*out) {}

  template <class T>
  void operator()(const char* key, const std::optional<T>& v) {
    if (v) j_[key] = *v;
  }
  void operator()(const char* key, const nlohmann::json& v) {
    if (!v.is_null()) j_[key] = v;
  }
  void operator()(const char* key, const std::map<std::string, double>& v) { j_[key] = v; }
  void NameLike(const char* key, const std::optional<std::string>& v) { (*this)(key, v); }
  void Profile(const std::optional<schema::Profile>& p) {
    if (!p) return;
    j_["profile"] = {{"name", p->name}, {"path", p->path}, {"provenance", p->provenance}};
  }
  template <class T, class F>
  void Object(const char* key, const std::optional<T>& v, F fields) {
    if (!v) return;
    nlohmann::json o = nlohmann::json::object();
    Writer w(&o);
    fields(*v, w);
    j_[key] = std::move(o);
  }
  void Stats(const std::string& name, const schema::Stats& s) {
    for (int i = 0; i < kNumStats; ++i) {
      if (const auto& x = StatRef(s, i)) j_[StatKey(i, name)] = *x;
    }
  }
  void StageMap(const std::map<std::string, schema::Stats>& m) {
    for (const auto& [name, st] : m) Stats(name, st);
  }
  void Notes(const std::map<std::string, std::string>& m) {
    for (const auto& [k, text] : m) j_[k + "_note"] = text;
  }

 private:
  nlohmann::json& j_;
};

// ---- Reader ----

class Reader {
 public:
  explicit Reader(JsonObject o) : o_(std::move(o)) {}
  const Status& status() const { return st_; }
  JsonObject& object() { return o_; }

  template <class T>
  void operator()(const char* key, std::optional<T>& v) {
    if (!Present(key)) return;
    T x{};
    if (Read(key, &x)) v = std::move(x);
  }
  void operator()(const char* key, nlohmann::json& v) {
    if (Present(key)) v = *o_.Raw(key);
  }
  void operator()(const char* key, std::map<std::string, double>& v) {
    std::optional<std::map<std::string, double>> m;
    (*this)(key, m);
    if (m) v = std::move(*m);
  }
  // A name, or an object carrying one (model cards, hardware profiles).
  void NameLike(const char* key, std::optional<std::string>& v) {
    if (!Present(key)) return;
    const nlohmann::json& j = *o_.Raw(key);
    if (j.is_object() && j.contains("name") && j["name"].is_string()) {
      v = j["name"].get<std::string>();
    } else if (j.is_string()) {
      v = j.get<std::string>();
    } else {
      Fail(o_.Error(key, "must be a name (string) or an object with a \"name\""));
    }
  }
  // A name, or {name, path, provenance}.
  void Profile(std::optional<schema::Profile>& p) {
    if (!Present("profile")) return;
    const nlohmann::json& j = *o_.Raw("profile");
    schema::Profile out;
    if (j.is_string()) {
      out.name = j.get<std::string>();
    } else {
      auto c = o_.Child("profile");
      if (!c.ok()) return Fail(c.status());
      if (!Ok(c->Get("name", &out.name)) || !Ok(c->Get("path", &out.path))) return;
      if (const nlohmann::json* prov = c->Raw("provenance")) out.provenance = *prov;
    }
    p = std::move(out);
  }
  template <class T, class F>
  void Object(const char* key, std::optional<T>& v, F fields) {
    if (!Present(key)) return;
    auto c = o_.Child(key);
    if (!c.ok()) return Fail(c.status());
    Reader r(std::move(*c));
    T x{};
    fields(x, r);
    if (Ok(r.status())) v = std::move(x);
  }
  void Stats(const std::string& name, schema::Stats& s) {
    for (int i = 0; i < kNumStats; ++i) (*this)(StatKey(i, name).c_str(), StatRef(s, i));
  }
  // Every "mean_<stage>_ms" names a stage.
  void StageMap(std::map<std::string, schema::Stats>& m) {
    for (const auto& [k, v] : o_.json().items()) {
      if (k.size() > 8 && k.rfind("mean_", 0) == 0 && k.substr(k.size() - 3) == "_ms") {
        const std::string name = k.substr(5, k.size() - 8);
        if (name == "ttft" || name == "tpot" || name == "itl" || name == "e2el") continue;
        Stats(name, m[name]);
      }
    }
  }
  void Notes(std::map<std::string, std::string>& m) {
    for (const auto& [k, v] : o_.json().items()) {
      if (k.size() > 5 && k.substr(k.size() - 5) == "_note" && v.is_string()) {
        m[k.substr(0, k.size() - 5)] = v.get<std::string>();
      }
    }
  }

 private:
  bool Present(const char* key) {
    if (!st_.ok()) return false;
    const nlohmann::json* j = o_.Raw(key);
    return j != nullptr && !j->is_null();
  }
  bool Ok(const Status& st) {
    if (!st.ok() && st_.ok()) st_ = st;
    return st_.ok();
  }
  void Fail(const Status& st) { Ok(st); }
  template <class T>
  bool Read(const char* key, T* out) {
    return Ok(o_.Get(key, out));
  }
  template <class N>
  bool ReadMap(const char* key, std::map<std::string, N>* out) {
    auto c = o_.Child(key);
    if (!c.ok()) return Ok(c.status());
    for (const auto& [k, v] : c->json().items()) {
      N x{};
      if (!Ok(c->Get(k, &x, true))) return false;
      (*out)[k] = x;
    }
    return true;
  }
  bool Read(const char* key, std::map<std::string, double>* out) { return ReadMap(key, out); }
  bool Read(const char* key, std::map<std::string, int64_t>* out) { return ReadMap(key, out); }

  JsonObject o_;
  Status st_ = Status::Ok();
};

Status CheckRanges(JsonObject& root, const RunSummary& s) {
  if (s.gpus && *s.gpus < 1) {
    return root.Error("gpus", "must be >= 1, got " + std::to_string(*s.gpus));
  }
  if (s.output_throughput && *s.output_throughput < 0) {
    return root.Error("output_throughput", "must be >= 0");
  }
  for (const auto& [key, iv] : s.intervals) {
    if (iv.lo > iv.hi) return root.Error(key + "_lo", "must be <= " + key + "_hi");
  }
  return Status::Ok();
}

Status CheckPool(JsonObject& o, const PoolSummary& p) {
  if (p.utilization && *p.utilization < 0) return o.Error("utilization", "must be >= 0");
  if (p.cross_version_drift && !(*p.cross_version_drift >= 0 && *p.cross_version_drift <= 10)) {
    return o.Error("cross_version_drift", "must be in [0, 10]");
  }
  if (p.memory) {
    for (const auto& [name, map] : {std::pair{"weights_by_component_bytes",
                                              &p.memory->weights_by_component_bytes},
                                    std::pair{"terms_bytes_per_gpu", &p.memory->terms_bytes_per_gpu}}) {
      if (!*map) continue;
      for (const auto& [k, v] : **map) {
        if (v < 0) return o.Error(std::string("memory/") + name + "/" + k, "must be >= 0");
      }
    }
  }
  for (const auto& [key, m] : {std::pair{"op_time_share", &p.op_time_share},
                                std::pair{"bound_time_share", &p.bound_time_share},
                                std::pair{"provenance_time_share", &p.provenance_time_share}}) {
    if (!*m) continue;
    for (const auto& [k, v] : **m) {
      if (v < 0 || v > 1) {
        return o.Error(std::string(key) + "/" + k, "must be in [0, 1], got " + std::to_string(v));
      }
    }
  }
  if (p.deployment.is_object() && p.deployment.contains("replicas") &&
      p.deployment["replicas"].is_number() && p.deployment["replicas"].get<double>() < 1) {
    return o.Error("deployment/replicas", "must be >= 1");
  }
  return Status::Ok();
}

Result<PoolSummary> ReadPool(JsonObject o, bool flat) {
  PoolSummary p;
  Reader r(o);
  PoolFields(p, r, flat);
  CAPPLAN_RETURN_IF_ERROR(r.status());
  CAPPLAN_RETURN_IF_ERROR(CheckPool(o, p));
  return p;
}

PoolRole RoleOf(const std::string& name) {
  if (name == "prefill") return PoolRole::kPrefill;
  if (name == "decode") return PoolRole::kDecode;
  return PoolRole::kBoth;
}

}  // namespace

const std::vector<std::string>& StatNames() {
  static const std::vector<std::string> names(kStats, kStats + kNumStats);
  return names;
}

const char* PoolRoleName(PoolRole r) {
  switch (r) {
    case PoolRole::kPrefill:
      return "prefill";
    case PoolRole::kDecode:
      return "decode";
    case PoolRole::kBoth:
      break;
  }
  return "both";
}

bool RunSummary::disaggregated() const {
  return pools.size() > 1 || (pools.size() == 1 && pools[0].role != PoolRole::kBoth);
}

const PoolSummary* RunSummary::pool(PoolRole role) const {
  for (const auto& p : pools) {
    if (p.role == role) return &p;
  }
  return nullptr;
}

nlohmann::json ToJson(const RunSummary& s) {
  nlohmann::json j = nlohmann::json::object();
  Writer w(&j);
  RunFields(s, w);
  if (!s.disaggregated()) {
    if (!s.pools.empty()) PoolFields(s.pools[0], w, /*flat=*/true);
  } else {
    j["disaggregated"] = true;
    nlohmann::json pools = nlohmann::json::object();
    for (const PoolSummary& p : s.pools) {
      nlohmann::json pj = nlohmann::json::object();
      Writer pw(&pj);
      PoolFields(p, pw, /*flat=*/false);
      pools[p.name] = std::move(pj);
      if (p.cost_usd) j["cost_usd_" + p.name + "_pool"] = *p.cost_usd;
    }
    j["pools"] = std::move(pools);
  }
  for (const auto& [key, iv] : s.intervals) {
    j[key + "_lo"] = iv.lo;
    j[key + "_hi"] = iv.hi;
  }
  return j;
}

Result<RunSummary> FromJson(const nlohmann::json& doc, const std::string& origin) {
  if (!doc.is_object()) {
    return Status::Usage(origin +
                         ": not a simulation summary (expected a JSON object as "
                         "written by 'capplan simulate --out DIR' to DIR/summary.json)");
  }
  const auto dis = doc.find("disaggregated");
  if (dis != doc.end() && !dis->is_boolean()) {
    return Status::Usage(origin + ": /disaggregated: must be true or false, got " +
                         EchoValue(dis->dump()));
  }
  const bool several = dis != doc.end() && dis->get<bool>();
  JsonObject root(doc, origin, "");
  RunSummary s;
  Reader r(root);
  RunFields(s, r);
  CAPPLAN_RETURN_IF_ERROR(r.status());
  if (!several) {
    CAPPLAN_ASSIGN_OR_RETURN(PoolSummary p, ReadPool(root, /*flat=*/true));
    s.pools.push_back(std::move(p));
  } else {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject pools, root.Child("pools", true));
    for (const auto& [name, v] : pools.json().items()) {
      CAPPLAN_ASSIGN_OR_RETURN(JsonObject po, pools.Child(name, true));
      int gpus = 0;
      CAPPLAN_RETURN_IF_ERROR(po.Get("gpus", &gpus, true));
      CAPPLAN_ASSIGN_OR_RETURN(PoolSummary p, ReadPool(po, /*flat=*/false));
      p.name = name;
      p.role = RoleOf(name);
      CAPPLAN_RETURN_IF_ERROR(root.Get("cost_usd_" + name + "_pool", &p.cost_usd));
      s.pools.push_back(std::move(p));
    }
  }
  for (const std::string& key : MetricKeys()) {
    std::optional<double> lo, hi;
    CAPPLAN_RETURN_IF_ERROR(root.Get(key + "_lo", &lo));
    CAPPLAN_RETURN_IF_ERROR(root.Get(key + "_hi", &hi));
    if (lo && hi) s.intervals[key] = {*lo, *hi};
  }
  CAPPLAN_RETURN_IF_ERROR(CheckRanges(root, s));
  return s;
}

const std::vector<std::string>& MetricKeys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const char* m : {"ttft", "tpot", "itl", "e2el"}) {
      for (int i = 0; i < kNumStats; ++i) k.push_back(StatKey(i, m));
    }
    for (const char* t :
         {"request_throughput", "input_throughput", "output_throughput", "total_token_throughput",
          "output_throughput_per_gpu", "total_token_throughput_per_gpu",
          "cost_usd_per_million_output_tokens", "cost_usd_per_million_total_tokens", "gpus",
          "joules_per_output_token", "joules_per_total_token", "gpu_joules_per_output_token",
          "avg_kw", "peak_kw", "avg_kw_per_node", "peak_kw_per_node", "provisioned_kw",
          "output_tokens_per_s_per_mw", "total_tokens_per_s_per_mw",
          "electricity_usd_per_million_output_tokens",
          "electricity_usd_per_million_total_tokens"}) {
      k.push_back(t);
    }
    return k;
  }();
  return keys;
}

std::optional<double> Metric(const RunSummary& s, std::string_view key) {
  for (const char* end : {"_lo", "_hi"}) {
    if (key.size() > 3 && key.substr(key.size() - 3) == end) {
      const auto it = s.intervals.find(std::string(key.substr(0, key.size() - 3)));
      if (it == s.intervals.end()) return std::nullopt;
      return end[1] == 'l' ? it->second.lo : it->second.hi;
    }
  }
  const std::pair<const char*, const Stats*> stats[] = {
      {"ttft", &s.ttft}, {"tpot", &s.tpot}, {"itl", &s.itl}, {"e2el", &s.e2el}};
  for (const auto& [name, st] : stats) {
    for (int i = 0; i < kNumStats; ++i) {
      if (key == StatKey(i, name)) return StatRef(*st, i);
    }
  }
  const std::pair<const char*, const std::optional<double>*> plain[] = {
      {"request_throughput", &s.request_throughput},
      {"input_throughput", &s.input_throughput},
      {"output_throughput", &s.output_throughput},
      {"total_token_throughput", &s.total_token_throughput},
      {"output_throughput_per_gpu", &s.output_throughput_per_gpu},
      {"total_token_throughput_per_gpu", &s.total_token_throughput_per_gpu},
      {"cost_usd_per_million_output_tokens", &s.cost_usd_per_million_output_tokens},
      {"cost_usd_per_million_total_tokens", &s.cost_usd_per_million_total_tokens},
      {"joules_per_output_token", &s.joules_per_output_token},
      {"joules_per_total_token", &s.joules_per_total_token},
      {"gpu_joules_per_output_token", &s.gpu_joules_per_output_token},
      {"avg_kw", &s.avg_kw},
      {"peak_kw", &s.peak_kw},
      {"avg_kw_per_node", &s.avg_kw_per_node},
      {"peak_kw_per_node", &s.peak_kw_per_node},
      {"provisioned_kw", &s.provisioned_kw},
      {"output_tokens_per_s_per_mw", &s.output_tokens_per_s_per_mw},
      {"total_tokens_per_s_per_mw", &s.total_tokens_per_s_per_mw},
      {"electricity_usd_per_million_output_tokens", &s.electricity_usd_per_million_output_tokens},
      {"electricity_usd_per_million_total_tokens", &s.electricity_usd_per_million_total_tokens},
  };
  for (const auto& [name, v] : plain) {
    if (key == name) return *v;
  }
  if (key == "gpus" && s.gpus) return static_cast<double>(*s.gpus);
  return std::nullopt;
}

double CostPerMillionTokens(double usd_per_gpu_hour, double gpus, double seconds, double tokens) {
  if (!(tokens > 0)) return std::numeric_limits<double>::infinity();
  const double usd = usd_per_gpu_hour * gpus * seconds / 3600.0;
  return usd / tokens * 1e6;
}

}  // namespace capplan::schema
