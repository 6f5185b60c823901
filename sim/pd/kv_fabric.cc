#include "sim/pd/kv_fabric.h"

#include <algorithm>

namespace capplan::sim::pd {

namespace {

std::string Num(int v) { return std::to_string(v); }

// Empty when both pools can sit in one NVLink domain, else why not.
std::string WhyNotOneDomain(const PoolFabric& pre, const PoolFabric& dec,
                            const hw::HardwareProfile& p) {
  for (const auto& [name, pool] : {std::pair{"prefill", &pre}, std::pair{"decode", &dec}}) {
    if (!pool->OneDomain()) {
      return std::string("the ") + name + " pool spans " + Num(pool->layout.nodes) +
             " nodes joined by rdma";
    }
  }
  const int domain = p.nvlink_domain_gpus;
  if (domain <= 0) return p.name + " gives no nvlink_domain_gpus";
  if (pre.Gpus() + dec.Gpus() > domain) {
    return "prefill " + Num(pre.Gpus()) + " + decode " + Num(dec.Gpus()) + " GPUs exceed the " +
           Num(domain) + " one " + p.name + " NVLink domain joins (form_factor " +
           (p.form_factor.empty() ? std::string("unknown") : p.form_factor) + ")";
  }
  return "";
}

}  // namespace

const std::vector<std::string>& KvLinkChoices() {
  static const std::vector<std::string> kNames = {"auto", "nvlink", "rdma"};
  return kNames;
}

Result<KvRoute> RouteKv(const PoolFabric& prefill, const PoolFabric& decode, bool mla,
                        const std::string& link, const hw::HardwareProfile& profile) {
  KvRoute r;
  const std::string why_not = WhyNotOneDomain(prefill, decode, profile);
  const std::string gpus = Num(prefill.Gpus() + decode.Gpus());
  if (link == "auto") {
    r.derived = true;
    r.link = why_not.empty() ? "nvlink" : "rdma";
    r.placement = why_not.empty()
                      ? "both pools (" + gpus + " GPUs) in one " + profile.name + " NVLink domain"
                      : why_not + ": scale-out RDMA, one NIC per GPU";
  } else if (link == "nvlink" || link == "rdma") {
    // A profile that does not size its NVLink domain cannot refuse a hand-set link.
    if (link == "nvlink" && !why_not.empty() && profile.nvlink_domain_gpus > 0) {
      return Status::Invalid("transfer/link: nvlink needs both pools in one NVLink domain, but " +
                             why_not + "; use \"rdma\" or \"auto\"");
    }
    r.link = link;
    r.placement = "set by hand";
  } else {
    return Status::Usage("transfer/link: must be auto, nvlink or rdma, got \"" + link + "\"");
  }
  const int p = std::max(1, prefill.layout.AttentionTp());
  const int d = std::max(1, decode.layout.AttentionTp());
  if (std::max(p, d) % std::min(p, d) != 0) {
    return Status::Invalid("decode/tp: prefill attention TP " + Num(p) + " and decode attention TP " +
                           Num(d) + " must divide one another (SGLang maps KV ranks by their "
                           "ratio); change either pool's tp or dp");
  }
  r.prefill_attention_tp = p;
  r.decode_attention_tp = d;
  r.receivers = d;
  r.fan_out = std::max(1, d / p);
  r.senders = mla ? std::min(p, d) : p;
  return r;
}

}  // namespace capplan::sim::pd
