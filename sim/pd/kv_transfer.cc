#include "sim/pd/kv_transfer.h"

#include <algorithm>
#include <cmath>

#include "common/data_path.h"
#include "common/json_util.h"
#include "models/memory.h"

namespace capplan::sim::pd {

namespace {

int64_t Ns(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1e9)); }

}  // namespace

int64_t KvTransferPlan::ExposedNs(int64_t tokens) const {
  double bytes = static_cast<double>(LinkBytes(tokens));
  if (layerwise_overlap) bytes /= std::max(1, num_layers);
  return Ns(latency_s + (bandwidth_bytes_per_s > 0 ? bytes / bandwidth_bytes_per_s : 0));
}

int64_t KvTransferPlan::WireNs(int64_t tokens) const {
  if (bandwidth_bytes_per_s <= 0) return 0;
  return Ns(static_cast<double>(LinkBytes(tokens)) / bandwidth_bytes_per_s);
}

int64_t KvTransferPlan::LastLayerNs(int64_t tokens) const {
  if (bandwidth_bytes_per_s <= 0) return 0;
  return Ns(static_cast<double>(LinkBytes(tokens)) / std::max(1, num_layers) /
            bandwidth_bytes_per_s);
}

const std::vector<std::string>& KvLinkNames() {
  static const std::vector<std::string> kNames = {"nvlink", "rdma"};
  return kNames;
}

Result<KvTransferPlan> PlanKvTransfer(const models::ModelCard& card,
                                      const models::ParallelLayout& decode, models::Dtype src,
                                      models::Dtype dst, const KvTransferSpec& spec,
                                      const hw::HardwareProfile& profile, const KvRoute* route) {
  KvTransferPlan p;
  if (route != nullptr) {
    p.route = *route;
  } else {
    p.route.link = spec.link;
    p.route.placement = "set by hand";
  }
  p.link = p.route.link;
  p.layerwise_overlap = spec.layerwise_overlap;
  p.src_dtype = src;
  p.dst_dtype = dst;
  p.num_layers = std::max(1, card.num_layers);
  CAPPLAN_ASSIGN_OR_RETURN(models::KvLayout s, models::ComputeKvLayout(card, decode, src));
  CAPPLAN_ASSIGN_OR_RETURN(models::KvLayout d, models::ComputeKvLayout(card, decode, dst));
  p.src_bytes_per_token = s.bytes_per_token;
  p.dst_bytes_per_token = d.bytes_per_token;
  p.wire_bytes_per_token = std::min(s.bytes_per_token, d.bytes_per_token);
  p.link_bytes_per_token = p.wire_bytes_per_token * std::max(1, p.route.fan_out);

  const std::string path = DataPath("sim/pd/link_defaults.json");
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  JsonObject root(doc, path, "");
  root.Touch("_comment");
  for (const std::string& l : KvLinkNames()) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject o, root.Child(l, true));
    double lat = 0;
    std::string src_note;
    CAPPLAN_RETURN_IF_ERROR(o.Get("latency_s", &lat, true));
    CAPPLAN_RETURN_IF_ERROR(o.Get("source", &src_note, true));
    CAPPLAN_RETURN_IF_ERROR(o.Finish());
    if (p.link == l) {
      p.latency_s = lat;
      p.latency_source = src_note;
    }
  }
  CAPPLAN_RETURN_IF_ERROR(root.Finish());
  if (p.link == "nvlink") {
    p.bandwidth_bytes_per_s = profile.nvlink_bytes_per_s;
  } else if (p.link == "rdma") {
    p.bandwidth_bytes_per_s = profile.rdma_bytes_per_s;
  } else {
    return Status::Usage("link must be nvlink or rdma, got \"" + p.link + "\"");
  }
  if (p.bandwidth_bytes_per_s <= 0) {
    return Status::Invalid("hardware profile " + profile.path + " has no " + p.link +
                           " bandwidth; add it to the profile's links");
  }
  return p;
}

}  // namespace capplan::sim::pd
