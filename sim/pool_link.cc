#include "sim/pool_link.h"

namespace capplan::sim {

namespace {

Registry<PoolLinkFactory>* BuildPoolLinks() {
  auto* r = new Registry<PoolLinkFactory>("pool link");
  r->Add("pd", pd::MakeKvLink,
         "a prefill pool and a decode pool joined by a KV transfer (sim/pd_link.h)");
  return r;
}

}  // namespace

Registry<PoolLinkFactory>& PoolLinks() {
  static Registry<PoolLinkFactory>* const kLinks = BuildPoolLinks();
  return *kLinks;
}

}  // namespace capplan::sim
