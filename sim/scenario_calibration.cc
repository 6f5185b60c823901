#include "sim/scenario_calibration.h"

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/engine_step_costs.h"
#include "sim/calibration_overlay.h"
#include "sim/kernel_scaled_cost_model.h"
#include "sim/scenario.h"

namespace capplan::sim {
namespace {

// The overlay's terms onto one deployment; a deployment's own step_costs
// keep their values.
void ApplyToDeployment(const CalibrationOverlay& o, const std::string& origin,
                       bool same_hardware, DeploymentSpec* d, std::vector<std::string>* notes) {
  const std::string source = "calibration: " + origin + " (fitted on " +
                             std::to_string(o.runs.size()) + " run(s))";
  const std::string own = "deployment: the scenario's own step_costs";
  for (const OverlayTerm& t : o.terms) {
    if (!t.moved) continue;
    switch (t.kind) {
      case OverlayTermKind::kStepCost: {
        const std::string& key = models::EngineStepCostKeys()[t.step_cost_index];
        auto s = d->step_costs.sources.find(key);
        if (s != d->step_costs.sources.end() && s->second == own) {
          notes->push_back(t.name + ": the deployment's own step_costs value kept");
          break;
        }
        d->step_costs.Cost(t.step_cost_index) = t.value;
        d->step_costs.sources[key] = source;
        break;
      }
      case OverlayTermKind::kKernelScale:
        if (same_hardware) {
          d->kernel_scales[t.implementation] = t.value;
        } else {
          notes->push_back(t.name + ": fitted on " + o.hardware + ", not applied on another GPU");
        }
        break;
      case OverlayTermKind::kKvCapacityScale:
        d->kv_capacity_scale = t.value;
        break;
    }
  }
  if (!d->kernel_scales.empty()) {
    d->cost_model_factory = KernelScaledFactory(d->cost_model_factory, d->kernel_scales);
  }
}

}  // namespace

Status ParseScenarioCalibration(JsonObject& root, Scenario* sc) {
  const nlohmann::json* c = root.Raw("calibration");
  if (c == nullptr || c->is_null()) return Status::Ok();
  AppliedCalibration applied;
  nlohmann::json doc;
  if (c->is_string()) {
    std::filesystem::path p(c->get<std::string>());
    if (p.is_relative()) {
      std::filesystem::path dir = std::filesystem::path(sc->origin).parent_path();
      p = dir / p;
    }
    applied.origin = p.string();
    auto read = ReadJsonFile(applied.origin);
    if (!read.ok()) {
      return root.Error("calibration", read.status().message() +
                                           " (a path relative to the scenario's folder)");
    }
    doc = std::move(*read);
  } else if (c->is_object()) {
    applied.origin = sc->origin + ": " + root.PathOf("calibration");
    doc = *c;
  } else {
    return root.Error("calibration",
                      "must be an overlay file's path or an overlay object "
                      "(capplan calibrate --runs --out writes one)");
  }
  CAPPLAN_ASSIGN_OR_RETURN(CalibrationOverlay o, ParseCalibrationOverlay(doc, applied.origin));
  bool any = false;
  for (PoolSpec& pool : sc->pools) {
    if (pool.deployment.engine != o.engine) continue;
    any = true;
    ApplyToDeployment(o, applied.origin, sc->hardware == o.hardware, &pool.deployment,
                      &applied.notes);
  }
  if (!any) {
    return root.Error("calibration", "the overlay was fitted on " + o.engine +
                                         " runs and no pool of this scenario runs " + o.engine +
                                         ": drop `calibration` or fit one on this engine's runs");
  }
  applied.overlay = std::make_shared<const CalibrationOverlay>(std::move(o));
  sc->calibration = std::move(applied);
  return Status::Ok();
}

}  // namespace capplan::sim
