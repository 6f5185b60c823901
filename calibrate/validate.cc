#include "calibrate/validate.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

#include "calibrate/fit.h"
#include "common/json_util.h"
#include "models/card.h"
#include "models/ops.h"
#include "sim/cost_model.h"

namespace capplan::calibrate {

namespace {

// A hybrid slice's layer kinds: how many of its layers are linear or
// window-limited and, for small dims, their per-rank shapes (heads scaled
// back by tp), as the engine wrote them.
Status SliceMixers(JsonObject& s, int tp, bool small, models::ModelCard* card,
                   std::set<std::string>* warnings) {
  auto get = [&](const char* key, int* field, int scale) -> Status {
    if (!s.Has(key)) return Status::Ok();
    int v = 0;
    CAPPLAN_RETURN_IF_ERROR(s.Get(key, &v, true));
    CAPPLAN_RETURN_IF_ERROR(s.CheckRange(key, v, 0, 1 << 20));
    *field = v * scale;
    return Status::Ok();
  };
  models::LinearAttention& la = card->linear_attention;
  if (la.layers > 0 && !s.Has("linear_attention_layers")) {
    warnings->insert(
        "engine run's slice does not say how many of its layers are linear "
        "(slice.linear_attention_layers): the replay's layer kinds may not be the slice's");
  }
  CAPPLAN_RETURN_IF_ERROR(get("linear_attention_layers", &la.layers, 1));
  CAPPLAN_RETURN_IF_ERROR(get("sliding_window_layers", &card->sliding_window_layers, 1));
  if (!small) return Status::Ok();
  CAPPLAN_RETURN_IF_ERROR(get("linear_key_heads", &la.num_key_heads, tp));
  CAPPLAN_RETURN_IF_ERROR(get("linear_value_heads", &la.num_value_heads, tp));
  CAPPLAN_RETURN_IF_ERROR(get("linear_key_head_dim", &la.key_head_dim, 1));
  CAPPLAN_RETURN_IF_ERROR(get("linear_value_head_dim", &la.value_head_dim, 1));
  CAPPLAN_RETURN_IF_ERROR(get("linear_conv_kernel", &la.conv_kernel, 1));
  return get("sliding_window", &card->sliding_window, 1);
}

// The card the engine's slice ran: its layer count and, for small dims, its
// per-rank widths scaled back to whole-model widths so ShardModel's TP split
// lands on the slice's per-rank shapes.
Result<models::ModelCard> SliceCard(JsonObject& root, const std::string& model, int layers, int tp,
                                    std::string* dims, std::set<std::string>* warnings) {
  CAPPLAN_ASSIGN_OR_RETURN(models::ModelCard card, models::LoadModelCard(model));
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject s, root.Child("slice", true));
  CAPPLAN_RETURN_IF_ERROR(s.Get("dims", dims, true));
  CAPPLAN_RETURN_IF_ERROR(s.CheckOneOf("dims", *dims, {"small", "full"}));
  card.num_layers = layers;
  int first_k_dense = card.first_k_dense;
  CAPPLAN_RETURN_IF_ERROR(s.Get("first_k_dense", &first_k_dense));
  card.first_k_dense = first_k_dense;
  CAPPLAN_RETURN_IF_ERROR(SliceMixers(s, tp, *dims == "small", &card, warnings));
  if (*dims == "small") {
    auto geti = [&](const char* key, int* field, int scale) -> Status {
      if (!s.Has(key)) return Status::Ok();
      int v = 0;
      CAPPLAN_RETURN_IF_ERROR(s.Get(key, &v, true));
      // Bounded so the scaling by tp (<= 1024) stays inside int.
      CAPPLAN_RETURN_IF_ERROR(s.CheckRange(key, v, 0, 1 << 20));
      *field = v * scale;
      return Status::Ok();
    };
    CAPPLAN_RETURN_IF_ERROR(geti("hidden", &card.hidden_size, 1));
    CAPPLAN_RETURN_IF_ERROR(geti("vocab", &card.vocab_size, tp));
    CAPPLAN_RETURN_IF_ERROR(geti("q_heads", &card.num_heads, tp));
    CAPPLAN_RETURN_IF_ERROR(geti("kv_heads", &card.num_kv_heads, tp));
    CAPPLAN_RETURN_IF_ERROR(geti("head_dim", &card.head_dim, 1));
    CAPPLAN_RETURN_IF_ERROR(geti("q_lora_rank", &card.q_lora_rank, 1));
    CAPPLAN_RETURN_IF_ERROR(geti("kv_lora_rank", &card.kv_lora_rank, 1));
    CAPPLAN_RETURN_IF_ERROR(geti("qk_nope_head_dim", &card.qk_nope_head_dim, 1));
    CAPPLAN_RETURN_IF_ERROR(geti("qk_rope_head_dim", &card.qk_rope_head_dim, 1));
    CAPPLAN_RETURN_IF_ERROR(geti("v_head_dim", &card.v_head_dim, 1));
    CAPPLAN_RETURN_IF_ERROR(geti("index_n_heads", &card.index_n_heads, 1));
    CAPPLAN_RETURN_IF_ERROR(geti("index_head_dim", &card.index_head_dim, 1));
    CAPPLAN_RETURN_IF_ERROR(geti("index_topk", &card.index_topk, 1));
    CAPPLAN_RETURN_IF_ERROR(geti("n_routed_experts", &card.n_routed_experts, 1));
    CAPPLAN_RETURN_IF_ERROR(geti("experts_per_token", &card.experts_per_token, 1));
    CAPPLAN_RETURN_IF_ERROR(geti("n_shared_experts", &card.n_shared_experts, 1));
    CAPPLAN_RETURN_IF_ERROR(geti("moe_intermediate_size", &card.moe_intermediate_size, tp));
    CAPPLAN_RETURN_IF_ERROR(geti("intermediate_size", &card.intermediate_size, tp));
    if (card.IsMoe() && card.first_k_dense > 0 && !s.Has("intermediate_size")) {
      warnings->insert(
          "engine run's slice has no intermediate_size: its leading dense "
          "layers are priced at the card's full width");
    }
  }
  return card;
}

// Token counts of one request: far past any model's context, and small
// enough that a batch's sums and products cannot overflow int64.
constexpr int64_t kMaxRunTokens = 1'000'000'000;
// Requests in one iteration.
constexpr size_t kMaxRunBatch = 1'000'000;

Result<models::BatchShape> ReadBatch(const nlohmann::json& it, const std::string& origin,
                                     const std::string& ptr) {
  JsonObject o(it, origin, ptr);
  CAPPLAN_RETURN_IF_ERROR(o.CheckObject());
  models::BatchShape b;
  const nlohmann::json* pre = o.Raw("prefill");
  if (pre == nullptr || !pre->is_array()) return o.Error("prefill", "must be an array");
  for (size_t i = 0; i < pre->size(); ++i) {
    JsonObject c((*pre)[i], origin, ptr + "/prefill/" + std::to_string(i));
    models::BatchShape::Chunk ch;
    CAPPLAN_RETURN_IF_ERROR(c.Get("new_tokens", &ch.new_tokens, true));
    CAPPLAN_RETURN_IF_ERROR(c.Get("cached_tokens", &ch.cached_tokens, true));
    if (ch.new_tokens < 1 || ch.cached_tokens < 0 || ch.new_tokens > kMaxRunTokens ||
        ch.cached_tokens > kMaxRunTokens) {
      return c.Error("new_tokens", "need new_tokens in [1, 1e9] and cached_tokens in [0, 1e9]");
    }
    b.prefill.push_back(ch);
  }
  const nlohmann::json* dec = o.Raw("decode_contexts");
  if (dec == nullptr || !dec->is_array()) return o.Error("decode_contexts", "must be an array");
  if (pre->size() + dec->size() > kMaxRunBatch) {
    return o.Error("decode_contexts", "more than 1e6 requests in one iteration");
  }
  for (const auto& v : *dec) {
    // An unsigned value past INT64_MAX reads as negative here.
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > kMaxRunTokens) {
      return o.Error("decode_contexts",
                     "every context must be an integer in [1, 1e9], got " + EchoValue(v.dump()));
    }
    b.decode_context.push_back(v.get<int64_t>());
  }
  return b;
}

// One iteration's optional "op_us" (forward time by op class, no
// communication) and "host_us". The first iteration without them turns the
// split off for the run; a malformed one is an error naming its path.
Status ReadOpSplit(const nlohmann::json& it, const std::string& origin, const std::string& ptr,
                   const sim::StepCost& c, bool* split,
                   std::array<double, sim::kNumOpClasses>* meas,
                   std::array<double, sim::kNumOpClasses>* pred, double* host_s) {
  JsonObject io(it, origin, ptr);
  const nlohmann::json* op = io.Raw("op_us");
  if (op == nullptr) {
    *split = false;
    return Status::Ok();
  }
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject o, io.Child("op_us", true));
  for (int k = 0; k < sim::kNumOpClasses; ++k) {
    const models::OpClass cls = static_cast<models::OpClass>(k);
    if (cls == models::OpClass::kCommunication) continue;
    double us = 0;
    CAPPLAN_RETURN_IF_ERROR(o.Get(models::OpClassName(cls), &us, true));
    CAPPLAN_RETURN_IF_ERROR(o.CheckRange(models::OpClassName(cls), us, 0, 1e9));
    (*meas)[k] += us * 1e-6;
    (*pred)[k] += c.class_seconds[k];
  }
  CAPPLAN_RETURN_IF_ERROR(o.Finish());
  // Verification is priced as attention but measured outside the forward.
  (*pred)[static_cast<int>(models::OpClass::kAttention)] -= c.verify_seconds;
  double host = 0;
  CAPPLAN_RETURN_IF_ERROR(io.Get("host_us", &host));
  CAPPLAN_RETURN_IF_ERROR(io.CheckRange("host_us", host, 0, 1e9));
  *host_s += host * 1e-6;
  return Status::Ok();
}

// The run's deployment as the replay rebuilds it.
struct ReplayDeployment {
  models::PrecisionChoice choice;
  std::string integrity = "none";
  int64_t page_size = 0;
};

Status ReadRunHeader(JsonObject& root, ReplayResult* r, ReplayDeployment* d) {
  CAPPLAN_RETURN_IF_ERROR(root.CheckObject());
  std::string format;
  CAPPLAN_RETURN_IF_ERROR(root.Get("format", &format, true));
  if (format != "capplan.engine_run.v1") {
    return root.Error("format",
                      "expected 'capplan.engine_run.v1', got '" + EchoValue(format) + "'");
  }
  CAPPLAN_RETURN_IF_ERROR(root.Get("backend", &r->backend, true));
  CAPPLAN_RETURN_IF_ERROR(root.Get("model", &r->model, true));
  CAPPLAN_RETURN_IF_ERROR(root.Get("layers", &r->layers, true));
  CAPPLAN_RETURN_IF_ERROR(root.CheckRange("layers", r->layers, 1, 1000));
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject dep, root.Child("deployment", true));
  CAPPLAN_RETURN_IF_ERROR(dep.Get("tp", &r->tp, true));
  CAPPLAN_RETURN_IF_ERROR(dep.CheckRange("tp", r->tp, 1, 1024));
  CAPPLAN_RETURN_IF_ERROR(dep.Get("weights", &d->choice.weights, true));
  std::string kv = "bf16";
  CAPPLAN_RETURN_IF_ERROR(dep.Get("kv_cache", &kv, true));
  auto kvd = models::ParseDtype(kv);
  if (!kvd.ok()) return dep.Error("kv_cache", kvd.status().message());
  d->choice.kv_cache = *kvd;
  CAPPLAN_RETURN_IF_ERROR(dep.Get("page_size", &d->page_size, true));
  CAPPLAN_RETURN_IF_ERROR(
      dep.CheckRange("page_size", static_cast<double>(d->page_size), 1, 1e6));
  CAPPLAN_RETURN_IF_ERROR(dep.Get("kv_integrity", &d->integrity));
  return Status::Ok();
}

// The same verification op the simulator adds (sim/step_pricer.cc), with
// the exact pages of this batch instead of an expectation.
models::Op VerifyOp(const models::BatchShape& b, int64_t page_size, const models::ModelCard& card,
                    const hw::HardwareProfile& profile) {
  double pages = 0;
  for (int64_t c : b.decode_context) pages += (c + page_size - 1) / page_size;
  models::Op v;
  v.kind = models::OpKind::kKvVerify;
  v.op_class = models::OpClass::kAttention;
  v.name = "kv.verify";
  v.count = std::max<int64_t>(1, static_cast<int64_t>(profile.kv_verify_kernels_per_step));
  v.bytes = pages * card.num_layers * profile.kv_verify_tag_bytes_per_page_per_layer / v.count;
  v.batch = static_cast<int64_t>(b.decode_context.size());
  v.q_tokens = v.batch;
  v.heads = 1;
  return v;
}

// The ops one iteration's batch runs on the slice. The slice is one rank
// and runs no collectives (ENGINE_RUN.md), so pricing them would charge for
// work the measurement never did.
void SliceOps(const models::ShardedModel& sharded, const models::BatchShape& b,
              const ReplayDeployment& d, const models::ModelCard& card,
              const hw::HardwareProfile& profile, std::vector<models::Op>* ops) {
  models::BuildStepOps(sharded, b, ops);
  std::erase_if(*ops, [](const models::Op& op) {
    return op.kind == models::OpKind::kAllReduce || op.kind == models::OpKind::kAllGather ||
           op.kind == models::OpKind::kReduceScatter || op.kind == models::OpKind::kAllToAll;
  });
  if (d.integrity == "verify" && !b.decode_context.empty()) {
    ops->push_back(VerifyOp(b, d.page_size, card, profile));
  }
}

// One TP rank of the slice card, as the engine ran it.
Result<models::ShardedModel> ShardSlice(const models::ModelCard& card, int tp,
                                        const models::PrecisionChoice& choice,
                                        const std::string& origin) {
  models::ParallelLayout layout;
  layout.gpus = tp;
  layout.tp = tp;
  auto sharded = models::ShardModel(card, layout, choice);
  if (!sharded.ok()) {
    return Status::Invalid(origin +
                           ": cannot rebuild the run's model slice: " + sharded.status().message());
  }
  // The reference engine runs every MLA prefill absorbed (engine/
  // slice_config.cc); pricing the expanded form would price ops it never ran.
  sharded->mla_prefill_always_absorbed = true;
  return sharded;
}

// Errors over the iterations, token rates and the op-class split.
void SummarizeReplay(double meas_sum, double pred_sum, bool split,
               const std::array<double, sim::kNumOpClasses>& class_meas,
               const std::array<double, sim::kNumOpClasses>& class_pred, ReplayResult* r) {
  std::vector<double> abs_err;
  for (size_t i = 0; i < r->rel_err.size(); ++i) {
    abs_err.push_back(std::fabs(r->rel_err[i]));
    if (abs_err.back() >= r->worst_abs_err) {
      r->worst_abs_err = abs_err.back();
      r->worst_iteration = static_cast<int>(i);
    }
  }
  r->median_abs_err = Quantile(abs_err, 0.5);
  r->p90_abs_err = Quantile(abs_err, 0.9);
  r->median_signed_err = Quantile(r->rel_err, 0.5);
  r->measured_tokens_per_s = r->tokens / meas_sum;
  r->predicted_tokens_per_s = pred_sum > 0 ? r->tokens / pred_sum : 0;
  r->tokens_per_s_rel_err = r->predicted_tokens_per_s / r->measured_tokens_per_s - 1;
  if (!split) {
    r->host_s = 0;
    return;
  }
  for (int k = 0; k < sim::kNumOpClasses; ++k) {
    if (static_cast<models::OpClass>(k) == models::OpClass::kCommunication)
      continue;  // one rank: none
    r->class_split.push_back(
        {models::OpClassName(static_cast<models::OpClass>(k)), class_meas[k], class_pred[k]});
  }
}

// A microsecond figure, or "-" where that side has no such op.
std::string UsCell(bool has, double seconds) {
  if (!has) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", seconds * 1e6);
  return buf;
}

void FormatOpIds(const std::vector<OpIdSplit>& ids, std::ostringstream* os) {
  if (ids.empty()) return;
  constexpr const char* kRow = "  %-38s %12s %13s %8s\n";
  char buf[256];
  *os << "forward by op id, summed over the run (verification and launches excluded):\n";
  std::snprintf(buf, sizeof(buf), kRow, "op id", "measured us", "predicted us", "error");
  *os << buf;
  for (const OpIdSplit& s : ids) {
    std::string err = "-";
    if (s.measured && s.priced && s.measured_s > 0) {
      std::snprintf(buf, sizeof(buf), "%+.1f%%", 100 * (s.predicted_s / s.measured_s - 1));
      err = buf;
    }
    std::snprintf(buf, sizeof(buf), kRow, s.id.c_str(),
                  UsCell(s.measured, s.measured_s).c_str(),
                  UsCell(s.priced, s.predicted_s).c_str(), err.c_str());
    *os << buf;
  }
}

nlohmann::json OpIdsToJson(const std::vector<OpIdSplit>& ids) {
  nlohmann::json j = nlohmann::json::object();
  for (const OpIdSplit& s : ids) {
    nlohmann::json o = nlohmann::json::object();
    if (s.measured) o["measured_us"] = s.measured_s * 1e6;
    if (s.priced) o["predicted_us"] = s.predicted_s * 1e6;
    j[s.id] = o;
  }
  return j;
}

}  // namespace

Result<ReplayResult> ReplayEngineRun(const nlohmann::json& run, const std::string& origin,
                                     const hw::HardwareProfile& profile) {
  JsonObject root(run, origin, "");
  ReplayResult r;
  ReplayDeployment d;
  CAPPLAN_RETURN_IF_ERROR(ReadRunHeader(root, &r, &d));
  CAPPLAN_ASSIGN_OR_RETURN(models::ModelCard card,
                           SliceCard(root, r.model, r.layers, r.tp, &r.dims, &r.warnings));
  CAPPLAN_ASSIGN_OR_RETURN(const models::ShardedModel sharded,
                           ShardSlice(card, r.tp, d.choice, origin));
  // measured_us is verify + forward: no CPU scheduling or engine host cost
  // in it (StepContext leaves them at 0).
  CAPPLAN_ASSIGN_OR_RETURN(auto model, sim::MakeCostModel("roofline", profile));
  const nlohmann::json* its = root.Raw("iterations");
  if (its == nullptr || !its->is_array() || its->empty()) {
    return root.Error("iterations", "must be a non-empty array");
  }
  std::vector<models::Op> ops;
  OpIdReplay op_ids(sharded);
  double meas_sum = 0, pred_sum = 0;
  // Op-class splits: summed while every iteration so far has one.
  bool split = true;
  std::array<double, sim::kNumOpClasses> class_meas{}, class_pred{};
  for (size_t i = 0; i < its->size(); ++i) {
    const std::string ptr = "/iterations/" + std::to_string(i);
    CAPPLAN_ASSIGN_OR_RETURN(models::BatchShape b, ReadBatch((*its)[i], origin, ptr));
    JsonObject io((*its)[i], origin, ptr);
    double us = 0;
    CAPPLAN_RETURN_IF_ERROR(io.Get("measured_us", &us, true));
    if (!(us > 0) || us > 1e9) return io.Error("measured_us", "must be in (0, 1e9] microseconds");
    SliceOps(sharded, b, d, card, profile, &ops);
    sim::StepContext ctx;
    ctx.requests = static_cast<int64_t>(b.prefill.size() + b.decode_context.size());
    const sim::StepCost c = model->PriceOps(ops, ctx, &r.warnings);
    if (split) {
      CAPPLAN_RETURN_IF_ERROR(
          ReadOpSplit((*its)[i], origin, ptr, c, &split, &class_meas, &class_pred, &r.host_s));
    }
    if (op_ids.on()) {
      CAPPLAN_RETURN_IF_ERROR(
          op_ids.Add((*its)[i], origin, ptr, ops, model->ExplainOps(ops, ctx)));
    }
    const double meas = us * 1e-6;
    r.measured_s.push_back(meas);
    r.predicted_s.push_back(c.seconds);
    r.rel_err.push_back(c.seconds / meas - 1);
    r.tokens += b.TotalTokens();
    meas_sum += meas;
    pred_sum += c.seconds;
  }
  SummarizeReplay(meas_sum, pred_sum, split, class_meas, class_pred, &r);
  r.op_id_split = op_ids.Finish(&r.warnings);
  return r;
}

std::string FormatReplay(const ReplayResult& r, const std::string& run_path,
                         const hw::HardwareProfile& profile) {
  std::ostringstream os;
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "validate %s: %zu iterations of %s (%d layers, %s dims, tp %d, backend %s) "
                "replayed with profile %s (%s)\n",
                run_path.c_str(), r.rel_err.size(), r.model.c_str(), r.layers, r.dims.c_str(), r.tp,
                r.backend.c_str(), profile.name.c_str(), profile.path.c_str());
  os << buf;
  std::snprintf(buf, sizeof(buf),
                "per-iteration error |pred/meas - 1|: median %.1f%%, p90 %.1f%%, worst %.1f%% "
                "(iteration %d); median signed %+.1f%%\n",
                100 * r.median_abs_err, 100 * r.p90_abs_err, 100 * r.worst_abs_err,
                r.worst_iteration, 100 * r.median_signed_err);
  os << buf;
  std::snprintf(buf, sizeof(buf),
                "tokens/s: measured %.1f, predicted %.1f (error %+.1f%%) over %lld tokens\n",
                r.measured_tokens_per_s, r.predicted_tokens_per_s, 100 * r.tokens_per_s_rel_err,
                static_cast<long long>(r.tokens));
  os << buf;
  if (!r.class_split.empty()) {
    os << "forward by op class (verification excluded):  measured ms  predicted ms   error\n";
    for (const auto& cs : r.class_split) {
      std::snprintf(buf, sizeof(buf), "  %-14s %30.3f %13.3f %+7.1f%%\n", cs.op_class.c_str(),
                    cs.measured_s * 1e3, cs.predicted_s * 1e3,
                    cs.measured_s > 0 ? 100 * (cs.predicted_s / cs.measured_s - 1) : 0.0);
      os << buf;
    }
    std::snprintf(buf, sizeof(buf), "  host work inside the forwards: %.3f ms\n", r.host_s * 1e3);
    os << buf;
  }
  FormatOpIds(r.op_id_split, &os);
  if (r.backend == "cpu") {
    os << "note: this run used the CPU backend" << (r.dims == "small" ? " with small dims" : "")
       << "; its times are CPU times of a model slice, so a GPU profile is not expected to "
          "match them. This checks the replay mechanics, not the profile.\n";
  }
  return os.str();
}

nlohmann::json ReplayToJson(const ReplayResult& r, const std::string& run_path,
                            const hw::HardwareProfile& profile) {
  nlohmann::json j = {{"engine_run", run_path},
                      {"profile", profile.name},
                      {"profile_path", profile.path},
                      {"backend", r.backend},
                      {"model", r.model},
                      {"dims", r.dims},
                      {"layers", r.layers},
                      {"iterations", r.rel_err.size()},
                      {"median_abs_rel_err", r.median_abs_err},
                      {"p90_abs_rel_err", r.p90_abs_err},
                      {"worst_abs_rel_err", r.worst_abs_err},
                      {"worst_iteration", r.worst_iteration},
                      {"median_signed_rel_err", r.median_signed_err},
                      {"tokens", r.tokens},
                      {"measured_tokens_per_s", r.measured_tokens_per_s},
                      {"predicted_tokens_per_s", r.predicted_tokens_per_s},
                      {"tokens_per_s_rel_err", r.tokens_per_s_rel_err}};
  nlohmann::json per = nlohmann::json::array();
  for (size_t i = 0; i < r.rel_err.size(); ++i) {
    per.push_back({{"measured_us", r.measured_s[i] * 1e6},
                   {"predicted_us", r.predicted_s[i] * 1e6},
                   {"rel_err", r.rel_err[i]}});
  }
  j["per_iteration"] = per;
  if (!r.class_split.empty()) {
    nlohmann::json cls = nlohmann::json::object();
    for (const auto& cs : r.class_split) {
      cls[cs.op_class] = {{"measured_us", cs.measured_s * 1e6},
                          {"predicted_us", cs.predicted_s * 1e6}};
    }
    j["op_classes"] = cls;
    j["host_us"] = r.host_s * 1e6;
  }
  if (!r.op_id_split.empty()) j["op_ids"] = OpIdsToJson(r.op_id_split);
  j["warnings"] = r.warnings;
  return j;
}

}  // namespace capplan::calibrate
