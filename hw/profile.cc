#include "hw/profile.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "common/data_path.h"
#include "common/did_you_mean.h"
#include "common/json_util.h"
#include "hw/op_pricing.h"

namespace capplan::hw {

namespace {

const std::vector<std::string> kProvenanceKinds = {"datasheet", "measured", "anchor", "default",
                                                   "fitted"};

struct FormFactor {
  const char* name;
  int max_nvlink_domain_gpus;
};
// An HGX baseboard's NVSwitches join its 8 GPUs; an NVL72 rack's NVLink
// switch trays join 72 (NVIDIA GB200 NVL72 datasheet,
// https://www.nvidia.com/en-us/data-center/gb200-nvl72/).
constexpr FormFactor kFormFactors[] = {{"sxm", 8}, {"nvl72", 72}};

std::vector<std::string> FormFactorNames() {
  std::vector<std::string> out;
  for (const FormFactor& f : kFormFactors) out.push_back(f.name);
  return out;
}

Status ReadProvenance(JsonObject& parent, Provenance* out) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject p, parent.Child("provenance", true));
  CAPPLAN_RETURN_IF_ERROR(p.Get("kind", &out->kind, true));
  CAPPLAN_RETURN_IF_ERROR(p.CheckOneOf("kind", out->kind, kProvenanceKinds));
  CAPPLAN_RETURN_IF_ERROR(p.Get("source", &out->source, true));
  return p.Finish();
}

// {"value": v, "provenance": {...}} under parent[key]; records the
// provenance as `dotted`.
Status ReadParam(JsonObject& parent, const std::string& key, const std::string& dotted,
                 double* out, HardwareProfile* prof, double lo = 0, double hi = 1e300) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject o, parent.Child(key, true));
  CAPPLAN_RETURN_IF_ERROR(o.Get("value", out, true));
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("value", *out, lo, hi));
  Provenance pv;
  CAPPLAN_RETURN_IF_ERROR(ReadProvenance(o, &pv));
  prof->provenance[dotted] = pv;
  return o.Finish();
}

Status ReadCurve(JsonObject& parent, const std::string& key, EfficiencyCurve* c) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject o, parent.Child(key, true));
  CAPPLAN_RETURN_IF_ERROR(o.Get("max", &c->max, true));
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("max", c->max, 1e-6, 1.0));
  CAPPLAN_RETURN_IF_ERROR(o.Get("half", &c->half, true));
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("half", c->half, 0, 1e300));
  CAPPLAN_RETURN_IF_ERROR(o.Get("x", &c->x, true));
  std::vector<double> valid;
  CAPPLAN_RETURN_IF_ERROR(o.Get("valid", &valid, true));
  if (valid.size() != 2 || valid[0] > valid[1]) {
    return o.Error("valid", "must be [lo, hi] with lo <= hi");
  }
  c->valid_lo = valid[0];
  c->valid_hi = valid[1];
  CAPPLAN_RETURN_IF_ERROR(ReadProvenance(o, &c->provenance));
  if (o.Has("fit")) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject f, o.Child("fit", true));
    CAPPLAN_RETURN_IF_ERROR(f.Get("points", &c->fit_points, true));
    CAPPLAN_RETURN_IF_ERROR(f.Get("loo_median_rel_err", &c->loo_median_rel_err, true));
    CAPPLAN_RETURN_IF_ERROR(f.Get("loo_p90_rel_err", &c->loo_p90_rel_err, true));
    CAPPLAN_RETURN_IF_ERROR(
        f.Get("held_out_source_median_rel_err", &c->held_out_source_median_rel_err));
    CAPPLAN_RETURN_IF_ERROR(f.Finish());
  }
  return o.Finish();
}

Status ReadCollective(JsonObject& parent, const std::string& key, CollectiveModel* m,
                      HardwareProfile* prof) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject o, parent.Child(key, true));
  const std::string base = "collectives." + key + ".";
  CAPPLAN_RETURN_IF_ERROR(ReadParam(o, "latency_s", base + "latency_s", &m->latency_s, prof));
  CAPPLAN_RETURN_IF_ERROR(ReadParam(o, "bus_bandwidth_bytes_per_s",
                                    base + "bus_bandwidth_bytes_per_s",
                                    &m->bus_bandwidth_bytes_per_s, prof, 1, 1e300));
  if (key == "all_reduce" && o.Has("nvls_bus_bandwidth_bytes_per_s")) {
    CAPPLAN_RETURN_IF_ERROR(ReadParam(o, "nvls_bus_bandwidth_bytes_per_s",
                                      base + "nvls_bus_bandwidth_bytes_per_s",
                                      &m->nvls_bus_bandwidth_bytes_per_s, prof, 1, 1e300));
  }
  return o.Finish();
}



// "measured_at": [{"engine", "engine_version", "gpu"}, ...]: an engine
// comes with a release name or neither is given; the GPU always is.
Status ReadMeasuredAt(JsonObject& o, KernelTable* t) {
  if (!o.Has("measured_at")) return Status::Ok();
  const nlohmann::json* raw = o.Raw("measured_at");
  o.Touch("measured_at");
  if (!raw->is_array() || raw->empty()) {
    return o.Error("measured_at", "must be a non-empty list of {engine, engine_version, gpu}");
  }
  for (size_t i = 0; i < raw->size(); ++i) {
    JsonObject m((*raw)[i], o.origin(), o.PathOf("measured_at") + "/" + std::to_string(i));
    CAPPLAN_RETURN_IF_ERROR(m.CheckObject());
    MeasuredAt at;
    CAPPLAN_RETURN_IF_ERROR(m.Get("gpu", &at.gpu, true));
    if (at.gpu.empty()) return m.Error("gpu", "names the GPU model the records ran on (H200)");
    CAPPLAN_RETURN_IF_ERROR(m.Get("engine", &at.engine));
    CAPPLAN_RETURN_IF_ERROR(m.Get("engine_version", &at.engine_version));
    std::array<int, 3> triple{};
    if (at.engine.empty() != at.engine_version.empty()) {
      return m.Error(at.engine.empty() ? "engine" : "engine_version",
                     "engine and engine_version come together or not at all");
    }
    if (!at.engine.empty() && !ReleaseTriple(at.engine_version, &triple)) {
      return m.Error("engine_version", "must be a release name such as 0.24.0, got '" +
                                           EchoValue(at.engine_version) + "'");
    }
    CAPPLAN_RETURN_IF_ERROR(m.Finish());
    t->measured_at.push_back(std::move(at));
  }
  return Status::Ok();
}

Status ReadVersionDrift(JsonObject& o, KernelTable* t) {
  if (!o.Has("version_drift")) return Status::Ok();
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject d, o.Child("version_drift", true));
  VersionDrift v;
  CAPPLAN_RETURN_IF_ERROR(d.Get("value", &v.value, true));
  CAPPLAN_RETURN_IF_ERROR(d.CheckRange("value", v.value, 0, 10));
  CAPPLAN_RETURN_IF_ERROR(d.Get("source", &v.source, true));
  if (v.source.empty()) return d.Error("source", "says where the drift figure comes from");
  t->version_drift = std::move(v);
  return d.Finish();
}

// One "kernels" entry: its class and curves, or the table it is assumed
// from (resolved by ResolveAssumedKernels once every entry is read).
Status ReadKernelTable(JsonObject& o, KernelTable* t) {
  CAPPLAN_RETURN_IF_ERROR(o.Get("efficiency_class", &t->efficiency_class, true));
  CAPPLAN_RETURN_IF_ERROR(
      o.CheckOneOf("efficiency_class", t->efficiency_class, EfficiencyClasses()));
  CAPPLAN_RETURN_IF_ERROR(o.Get("assumed_from", &t->assumed_from));
  if (t->assumed()) {
    CAPPLAN_RETURN_IF_ERROR(o.Get("reason", &t->assumed_reason, true));
    if (t->assumed_reason.empty()) return o.Error("reason", "an assumed table says why");
    return o.Finish();
  }
  CAPPLAN_RETURN_IF_ERROR(ReadCurve(o, "compute", &t->efficiency.compute));
  CAPPLAN_RETURN_IF_ERROR(ReadCurve(o, "memory", &t->efficiency.memory));
  CAPPLAN_RETURN_IF_ERROR(ReadMeasuredAt(o, t));
  CAPPLAN_RETURN_IF_ERROR(ReadVersionDrift(o, t));
  if (t->version_drift && t->measured_at.empty()) {
    return o.Error("version_drift", "needs measured_at: a drift is from the release measured");
  }
  return o.Finish();
}

// An assumed table takes its source's curves; the source must be a table of
// its own (no chains) of the same class, so a transfer is always one step
// and always visible.
Status ResolveAssumedKernels(JsonObject& k, HardwareProfile* p) {
  for (auto& [name, t] : p->kernels) {
    if (!t.assumed()) continue;
    auto src = p->kernels.find(t.assumed_from);
    if (src == p->kernels.end() || src->second.assumed()) {
      return k.Error(name, "assumed_from '" + EchoValue(t.assumed_from) +
                               "' must name a table of its own in this block");
    }
    if (src->second.efficiency_class != t.efficiency_class) {
      return k.Error(name, "assumed_from '" + t.assumed_from + "' is a " +
                               src->second.efficiency_class + " table, not " +
                               t.efficiency_class);
    }
    t.efficiency = src->second.efficiency;
    t.measured_at = src->second.measured_at;
    t.version_drift = src->second.version_drift;
  }
  return Status::Ok();
}

Status ReadKernels(JsonObject& root, HardwareProfile* p) {
  if (!root.Has("kernels")) return Status::Ok();
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject k, root.Child("kernels", true));
  const nlohmann::json* raw = root.Raw("kernels");
  for (const auto& [name, v] : raw->items()) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject o, k.Child(name, true));
    CAPPLAN_RETURN_IF_ERROR(ReadKernelTable(o, &p->kernels[name]));
  }
  CAPPLAN_RETURN_IF_ERROR(ResolveAssumedKernels(k, p));
  return k.Finish();
}

std::string JoinArchitectures() {
  std::string out;
  for (const std::string& a : KnownArchitectures()) out += (out.empty() ? "" : ", ") + a;
  return out;
}

// The NVLink domain may not exceed what the form factor's switches join:
// 72 GPUs on an HGX (sxm) profile is a rack the baseboard does not have.
Status ReadNvlinkDomain(JsonObject& c, HardwareProfile* p) {
  if (!c.Has("nvlink_domain_gpus")) return Status::Ok();
  double gpus = 0;
  CAPPLAN_RETURN_IF_ERROR(
      ReadParam(c, "nvlink_domain_gpus", "collectives.nvlink_domain_gpus", &gpus, p, 1, 1e6));
  if (gpus != static_cast<int>(gpus)) {
    return c.Error("nvlink_domain_gpus", "must be a whole number of GPUs");
  }
  p->nvlink_domain_gpus = static_cast<int>(gpus);
  if (p->form_factor.empty()) {
    return c.Error("nvlink_domain_gpus",
                   "needs the top-level form_factor (one of: sxm, nvl72) it is bounded by");
  }
  const int max = MaxNvlinkDomainGpus(p->form_factor);
  if (p->nvlink_domain_gpus > max) {
    return c.Error("nvlink_domain_gpus",
                   std::to_string(p->nvlink_domain_gpus) + " GPUs exceeds the " + std::to_string(max) +
                       " a form_factor '" + p->form_factor +
                       "' NVLink domain joins; a larger domain needs an nvl72 profile "
                       "(e.g. gb200-nvl72)");
  }
  return Status::Ok();
}

// collectives.deepep: {low_latency, normal}, each {latency_s,
// nvlink_efficiency, rdma_efficiency} as parameters with provenance.
Status ReadDeepEp(JsonObject& c, HardwareProfile* p) {
  if (!c.Has("deepep")) return Status::Ok();
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject d, c.Child("deepep", true));
  for (auto [mode, m] : {std::pair{"low_latency", &p->deepep_low_latency},
                         std::pair{"normal", &p->deepep_normal}}) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject o, d.Child(mode, true));
    const std::string base = std::string("collectives.deepep.") + mode + ".";
    CAPPLAN_RETURN_IF_ERROR(ReadParam(o, "latency_s", base + "latency_s", &m->latency_s, p, 0, 1));
    CAPPLAN_RETURN_IF_ERROR(ReadParam(o, "nvlink_efficiency", base + "nvlink_efficiency",
                                      &m->nvlink_efficiency, p, 1e-3, 1));
    CAPPLAN_RETURN_IF_ERROR(ReadParam(o, "rdma_efficiency", base + "rdma_efficiency",
                                      &m->rdma_efficiency, p, 1e-3, 1));
    CAPPLAN_RETURN_IF_ERROR(o.Finish());
  }
  p->has_deepep = true;
  return d.Finish();
}

// memory: the achievable and the spec HBM bandwidth (capacity is read with
// the rest of the memory facts, outside the cost model).
Status ReadMemoryRates(JsonObject& root, HardwareProfile* p) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject mem, root.Child("memory", true));
  mem.Touch("gpu_memory_bytes");
  mem.Touch("gpu_runtime_memory_bytes");
  CAPPLAN_RETURN_IF_ERROR(ReadParam(mem, "hbm_bandwidth_bytes_per_s",
                                    "memory.hbm_bandwidth_bytes_per_s", &p->hbm_bytes_per_s, p, 1,
                                    1e300));
  CAPPLAN_RETURN_IF_ERROR(ReadParam(mem, "hbm_bandwidth_spec_bytes_per_s",
                                    "memory.hbm_bandwidth_spec_bytes_per_s",
                                    &p->hbm_spec_bytes_per_s, p, 1, 1e300));
  if (mem.Has("host_link_bytes_per_s")) {
    CAPPLAN_RETURN_IF_ERROR(ReadParam(mem, "host_link_bytes_per_s",
                                      "memory.host_link_bytes_per_s", &p->host_link_bytes_per_s, p,
                                      1, 1e300));
  }
  return mem.Finish();
}

// compute: dense peak FLOP/s per dtype; FP4 only where the GPU has it.
Status ReadComputeRates(JsonObject& root, HardwareProfile* p) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject c, root.Child("compute", true));
  CAPPLAN_RETURN_IF_ERROR(
      ReadParam(c, "bf16_flops_per_s", "compute.bf16_flops_per_s", &p->bf16_flops_per_s, p, 1));
  CAPPLAN_RETURN_IF_ERROR(
      ReadParam(c, "fp8_flops_per_s", "compute.fp8_flops_per_s", &p->fp8_flops_per_s, p, 1));
  if (c.Has("fp4_flops_per_s")) {
    CAPPLAN_RETURN_IF_ERROR(
        ReadParam(c, "fp4_flops_per_s", "compute.fp4_flops_per_s", &p->fp4_flops_per_s, p, 1));
  }
  CAPPLAN_RETURN_IF_ERROR(
      ReadParam(c, "fp32_flops_per_s", "compute.fp32_flops_per_s", &p->fp32_flops_per_s, p, 1));
  return c.Finish();
}

// efficiency: one compute and one memory curve per efficiency class, every
// class required so no op falls back to an unstated default.
Status ReadEfficiencyClasses(JsonObject& root, HardwareProfile* p) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject e, root.Child("efficiency", true));
  for (const auto& k : EfficiencyClasses()) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject oe, e.Child(k, true));
    OpEfficiency eff;
    CAPPLAN_RETURN_IF_ERROR(ReadCurve(oe, "compute", &eff.compute));
    CAPPLAN_RETURN_IF_ERROR(ReadCurve(oe, "memory", &eff.memory));
    CAPPLAN_RETURN_IF_ERROR(oe.Finish());
    p->efficiency[k] = eff;
  }
  return e.Finish();
}

Status ReadCollectives(JsonObject& root, HardwareProfile* p) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject c, root.Child("collectives", true));
  CAPPLAN_RETURN_IF_ERROR(ReadCollective(c, "all_reduce", &p->all_reduce, p));
  CAPPLAN_RETURN_IF_ERROR(ReadCollective(c, "all_gather", &p->all_gather, p));
  CAPPLAN_RETURN_IF_ERROR(ReadCollective(c, "reduce_scatter", &p->reduce_scatter, p));
  CAPPLAN_RETURN_IF_ERROR(ReadCollective(c, "all_to_all", &p->all_to_all, p));
  CAPPLAN_RETURN_IF_ERROR(ReadParam(c, "nvlink_bytes_per_s_per_direction",
                                    "collectives.nvlink_bytes_per_s_per_direction",
                                    &p->nvlink_bytes_per_s, p, 1));
  CAPPLAN_RETURN_IF_ERROR(ReadNvlinkDomain(c, p));
  CAPPLAN_RETURN_IF_ERROR(
      ReadParam(c, "rdma_bytes_per_s", "collectives.rdma_bytes_per_s", &p->rdma_bytes_per_s, p, 1));
  CAPPLAN_RETURN_IF_ERROR(ReadDeepEp(c, p));
  return c.Finish();
}

Status ReadOverheads(JsonObject& root, HardwareProfile* p) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject o, root.Child("overheads", true));
  CAPPLAN_RETURN_IF_ERROR(
      ReadParam(o, "kernel_launch_s", "overheads.kernel_launch_s", &p->kernel_launch_s, p));
  CAPPLAN_RETURN_IF_ERROR(
      ReadParam(o, "graph_node_s", "overheads.graph_node_s", &p->graph_node_s, p));
  CAPPLAN_RETURN_IF_ERROR(
      ReadParam(o, "graph_launch_s", "overheads.graph_launch_s", &p->graph_launch_s, p));
  // CPU scheduling is the serving engine's cost, not the GPU's.
  for (const char* moved : {"cpu_schedule_s", "cpu_schedule_per_request_s"}) {
    if (o.Has(moved)) {
      return o.Error(moved,
                     "is a per-engine step cost: set it in the scenario's "
                     "deployment.step_costs (models/engine_step_costs.json holds the "
                     "engines' own) and remove it here");
    }
  }
  return o.Finish();
}

Status ReadKvVerify(JsonObject& root, HardwareProfile* p) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject o, root.Child("kv_verify", true));
  CAPPLAN_RETURN_IF_ERROR(ReadParam(o, "tag_bytes_per_page_per_layer",
                                    "kv_verify.tag_bytes_per_page_per_layer",
                                    &p->kv_verify_tag_bytes_per_page_per_layer, p));
  CAPPLAN_RETURN_IF_ERROR(ReadParam(o, "kernels_per_step", "kv_verify.kernels_per_step",
                                    &p->kv_verify_kernels_per_step, p));
  return o.Finish();
}

// Every section is required; the first section with an error ends the read.
Status ReadCostModel(JsonObject& root, HardwareProfile* p) {
  if (p->architecture.empty()) {
    return root.Error("architecture",
                      "is required with the cost model (one of: " + JoinArchitectures() + ")");
  }
  CAPPLAN_RETURN_IF_ERROR(ReadMemoryRates(root, p));
  CAPPLAN_RETURN_IF_ERROR(ReadComputeRates(root, p));
  CAPPLAN_RETURN_IF_ERROR(ReadEfficiencyClasses(root, p));
  CAPPLAN_RETURN_IF_ERROR(ReadKernels(root, p));
  CAPPLAN_RETURN_IF_ERROR(ReadParam(root, "int4_dequant_compute_overhead",
                                    "int4_dequant_compute_overhead",
                                    &p->int4_dequant_compute_overhead, p, 0, 10));
  CAPPLAN_RETURN_IF_ERROR(ReadCollectives(root, p));
  CAPPLAN_RETURN_IF_ERROR(ReadOverheads(root, p));
  CAPPLAN_RETURN_IF_ERROR(ReadKvVerify(root, p));
  p->has_cost_model = true;
  return Status::Ok();
}

}  // namespace

const std::vector<std::string>& KnownArchitectures() {
  static const std::vector<std::string> kArchitectures = {"sm80",  "sm89",  "sm90",
                                                          "sm100", "sm103", "sm120"};
  return kArchitectures;
}

int MaxNvlinkDomainGpus(std::string_view form_factor) {
  for (const FormFactor& f : kFormFactors) {
    if (form_factor == f.name) return f.max_nvlink_domain_gpus;
  }
  return 0;
}

std::vector<std::string> ShippedProfileNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(DataPath("calibrate/profiles"), ec)) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<HardwareProfile> ParseHardwareProfile(const nlohmann::json& doc,
                                             const std::string& origin) {
  JsonObject root(doc, origin, "");
  CAPPLAN_RETURN_IF_ERROR(root.CheckObject());
  HardwareProfile p;
  p.path = origin;
  std::string format;
  CAPPLAN_RETURN_IF_ERROR(root.Get("format", &format));
  CAPPLAN_RETURN_IF_ERROR(root.Get("name", &p.name, true));
  CAPPLAN_RETURN_IF_ERROR(root.Get("gpu", &p.gpu, true));
  CAPPLAN_RETURN_IF_ERROR(root.Get("architecture", &p.architecture));
  if (!p.architecture.empty()) {
    CAPPLAN_RETURN_IF_ERROR(root.CheckOneOf("architecture", p.architecture, KnownArchitectures()));
  }
  CAPPLAN_RETURN_IF_ERROR(root.Get("form_factor", &p.form_factor));
  if (!p.form_factor.empty()) {
    CAPPLAN_RETURN_IF_ERROR(root.CheckOneOf("form_factor", p.form_factor, FormFactorNames()));
  }
  std::string generated_by;  // the command that wrote a generated profile
  CAPPLAN_RETURN_IF_ERROR(root.Get("generated_by", &generated_by));
  {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject mem, root.Child("memory", true));
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject cap, mem.Child("gpu_memory_bytes", true));
    CAPPLAN_RETURN_IF_ERROR(cap.Get("value", &p.gpu_memory_bytes, true));
    CAPPLAN_RETURN_IF_ERROR(cap.CheckRange("value", static_cast<double>(p.gpu_memory_bytes), 1,
                                           1e15));
    cap.Touch("provenance");
    if (mem.Has("gpu_runtime_memory_bytes")) {
      CAPPLAN_ASSIGN_OR_RETURN(JsonObject rt, mem.Child("gpu_runtime_memory_bytes", true));
      CAPPLAN_RETURN_IF_ERROR(rt.Get("value", &p.gpu_runtime_memory_bytes, true));
      CAPPLAN_RETURN_IF_ERROR(rt.CheckRange("value",
                                            static_cast<double>(p.gpu_runtime_memory_bytes), 1,
                                            static_cast<double>(p.gpu_memory_bytes)));
      rt.Touch("provenance");
    }
  }
  if (root.Has("price")) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject price, root.Child("price", true));
    CAPPLAN_RETURN_IF_ERROR(ReadParam(price, "usd_per_gpu_hour", "price.usd_per_gpu_hour",
                                      &p.usd_per_gpu_hour, &p, 1e-6, 1e6));
    CAPPLAN_RETURN_IF_ERROR(price.Finish());
  }
  CAPPLAN_RETURN_IF_ERROR(ReadPowerModel(root, &p));
  // A profile with only the memory block (the bootstrap format) is valid for
  // models/; the simulator's cost model needs the rest.
  if (root.Has("compute")) {
    CAPPLAN_RETURN_IF_ERROR(ReadCostModel(root, &p));
  }
  CAPPLAN_RETURN_IF_ERROR(root.Finish());
  return p;
}

Result<HardwareProfile> LoadHardwareProfile(const std::string& name_or_path) {
  std::string path = name_or_path;
  if (name_or_path.find('/') == std::string::npos &&
      name_or_path.find(".json") == std::string::npos) {
    path = DataPath("calibrate/profiles/" + name_or_path + ".json");
    std::error_code ec;
    // A name too long for the file system is simply not a shipped one.
    if (!std::filesystem::is_regular_file(path, ec)) {
      return Status::NotFound("unknown hardware profile '" + EchoValue(name_or_path) + "'" +
                              DidYouMean(name_or_path, ShippedProfileNames()));
    }
  }
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  return ParseHardwareProfile(doc, path);
}

bool ReleaseTriple(std::string_view version, std::array<int, 3>* out) {
  size_t i = 0;
  for (int part = 0; part < 3; ++part) {
    if (part > 0) {
      if (i >= version.size() || version[i] != '.') return false;
      ++i;
    }
    const size_t start = i;
    int v = 0;
    while (i < version.size() && std::isdigit(static_cast<unsigned char>(version[i])) &&
           i - start < 6) {
      v = v * 10 + (version[i++] - '0');
    }
    if (i == start) return false;
    (*out)[part] = v;
  }
  return true;
}

std::string MeasuredAtText(const KernelTable& table) {
  // Release -> its GPUs, in the order the table lists them.
  std::vector<std::pair<std::string, std::string>> releases;
  for (const MeasuredAt& m : table.measured_at) {
    const std::string name = m.engine.empty() ? "no engine named" : m.engine + " " + m.engine_version;
    auto it = std::find_if(releases.begin(), releases.end(),
                           [&](const auto& r) { return r.first == name; });
    if (it == releases.end()) {
      releases.push_back({name, m.gpu});
    } else {
      it->second += ", " + m.gpu;
    }
  }
  std::string out;
  for (size_t i = 0; i < releases.size(); ++i) {
    out += (i ? "; " : "") + releases[i].first + " (" + releases[i].second + ")";
  }
  return out;
}

std::string CrossVersionNote(const KernelTable& table, std::string_view engine,
                             std::string_view version) {
  if (table.measured_at.empty()) return "";
  std::array<int, 3> want{};
  const bool parsed = ReleaseTriple(version, &want);
  for (const MeasuredAt& m : table.measured_at) {
    if (m.engine.empty()) return "";
    std::array<int, 3> at{};
    if (m.engine == engine && parsed && ReleaseTriple(m.engine_version, &at) && at == want) {
      return "";
    }
  }
  return "measured at " + MeasuredAtText(table) + ", priced for " + std::string(engine) + " " +
         std::string(version);
}

}  // namespace capplan::hw
