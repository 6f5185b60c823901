#include "sim/kernel_scaled_cost_model.h"

#include <utility>
#include <vector>

namespace capplan::sim {
namespace {

class KernelScaledCostModel : public CostModel {
 public:
  using Scales = std::map<std::string, double, std::less<>>;
  KernelScaledCostModel(std::unique_ptr<CostModel> inner, std::shared_ptr<const Scales> scales)
      : inner_(std::move(inner)), scales_(std::move(scales)) {}

  std::string name() const override { return inner_->name(); }
  void SetPricedFor(const std::string& engine, const std::string& version) override {
    inner_->SetPricedFor(engine, version);
  }

  StepCost PriceOps(const std::vector<models::Op>& ops, const StepContext& ctx,
                    std::set<std::string>* warnings) const override {
    StepCost c = inner_->PriceOps(ops, ctx, warnings);
    std::vector<models::Op> scaled;
    std::vector<double> factor;
    for (const models::Op& op : ops) {
      auto it = scales_->find(op.impl);
      if (op.impl.empty() || it == scales_->end() || it->second == 1) continue;
      scaled.push_back(op);
      factor.push_back(it->second);
    }
    if (scaled.empty()) return c;
    const std::vector<OpPrice> priced = inner_->ExplainOps(scaled, ctx);
    if (priced.size() != scaled.size()) return c;  // the model cannot say per op
    const int overhead = static_cast<int>(models::OpClass::kOverhead);
    // The GPU time the step's host side was priced on: the step less what
    // PriceHost added beyond the kernels and their launches.
    const double gpu = c.seconds - c.class_seconds[overhead] + c.launch_seconds;
    double extra = 0;
    for (size_t i = 0; i < scaled.size(); ++i) {
      const double d = (factor[i] - 1) * priced[i].seconds;
      extra += d;
      c.class_seconds[static_cast<int>(scaled[i].op_class)] += d;
      c.bound_seconds[static_cast<int>(priced[i].bound)] += d;
    }
    const double before = PriceHost(ctx, gpu).step, after = PriceHost(ctx, gpu + extra).step;
    const double host_change = (after - before) - extra;
    c.class_seconds[overhead] += host_change;
    c.bound_seconds[static_cast<int>(Bound::kOverhead)] += host_change;
    c.seconds += after - before;
    return c;
  }

  std::vector<OpPrice> ExplainOps(const std::vector<models::Op>& ops,
                                  const StepContext& ctx) const override {
    std::vector<OpPrice> out = inner_->ExplainOps(ops, ctx);
    if (out.size() != ops.size()) return out;
    for (size_t i = 0; i < ops.size(); ++i) {
      auto it = scales_->find(ops[i].impl);
      if (ops[i].impl.empty() || it == scales_->end()) continue;
      out[i].seconds *= it->second;
      out[i].table_kind += " x" + std::to_string(it->second).substr(0, 5) + " (calibration)";
    }
    return out;
  }

 private:
  std::unique_ptr<CostModel> inner_;
  std::shared_ptr<const Scales> scales_;
};

}  // namespace

CostModelFactory KernelScaledFactory(CostModelFactory inner,
                                     std::map<std::string, double, std::less<>> scales) {
  auto shared = std::make_shared<const std::map<std::string, double, std::less<>>>(
      std::move(scales));
  return [inner = std::move(inner),
          shared](const hw::HardwareProfile& profile) -> Result<std::unique_ptr<CostModel>> {
    CAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<CostModel> m, inner(profile));
    return std::unique_ptr<CostModel>(
        std::make_unique<KernelScaledCostModel>(std::move(m), shared));
  };
}

}  // namespace capplan::sim
