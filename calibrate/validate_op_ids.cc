#include "calibrate/validate_op_ids.h"

#include <algorithm>

#include "common/json_util.h"
#include "models/layer_program.h"

namespace capplan::calibrate {

OpIdReplay::OpIdReplay(const models::ShardedModel& sharded) {
  if (sharded.program == nullptr) return;
  const models::LayerProgram& p = *sharded.program;
  for (const auto* section : {&p.prologue, &p.layer_ops, &p.epilogue}) {
    for (const models::ProgramOp& op : *section) {
      if (models::IsCollective(op.kind)) collectives_.insert(op.id);
      program_order_.emplace(op.id, program_order_.size());
    }
  }
}

OpIdSplit* OpIdReplay::Find(const std::string& id) {
  auto [it, added] = index_.emplace(id, ids_.size());
  if (added) ids_.push_back(OpIdSplit{id});
  return &ids_[it->second];
}

Status OpIdReplay::Add(const nlohmann::json& it, const std::string& origin,
                       const std::string& ptr, const std::vector<models::Op>& ops,
                       const std::vector<sim::OpPrice>& prices) {
  if (!on_) return Status::Ok();
  JsonObject io(it, origin, ptr);
  if (io.Raw("op_id_us") == nullptr) {
    on_ = false;
    return Status::Ok();
  }
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject o, io.Child("op_id_us", true));
  for (const auto& [id, value] : o.json().items()) {
    double us = 0;
    CAPPLAN_RETURN_IF_ERROR(o.Get(id, &us, true));
    CAPPLAN_RETURN_IF_ERROR(o.CheckRange(id, us, 0, 1e9));
    OpIdSplit* s = Find(id);
    s->measured_s += us * 1e-6;
    s->measured = true;
  }
  if (prices.size() != ops.size()) {
    return Status::Internal("validate: the cost model priced " + std::to_string(prices.size()) +
                            " of " + std::to_string(ops.size()) + " ops one by one");
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    // Verification is measured outside the forward (verify_us).
    if (ops[i].kind == models::OpKind::kKvVerify) continue;
    OpIdSplit* s = Find(ops[i].name);
    s->predicted_s += prices[i].seconds;
    s->priced = true;
  }
  return Status::Ok();
}

std::vector<OpIdSplit> OpIdReplay::Finish(std::set<std::string>* warnings) const {
  if (!on_) return {};
  for (const OpIdSplit& s : ids_) {
    if (s.measured && !s.priced && !collectives_.contains(s.id)) {
      warnings->insert("engine op id '" + s.id +
                       "' has no op of that id in the replayed steps (a run of another layer "
                       "program?); its time is compared with nothing");
    } else if (s.priced && !s.measured) {
      warnings->insert("op id '" + s.id +
                       "' is priced but the engine timed no op of that id (op_id_us)");
    }
  }
  std::vector<OpIdSplit> out = ids_;
  auto rank = [&](const OpIdSplit& s) {
    auto it = program_order_.find(s.id);
    return it == program_order_.end() ? program_order_.size() : it->second;
  };
  std::stable_sort(out.begin(), out.end(),
                   [&](const OpIdSplit& a, const OpIdSplit& b) { return rank(a) < rank(b); });
  return out;
}

}  // namespace capplan::calibrate
