// The per-op-id half of `capplan validate` (validate.h): an engine run's
// forward time by layer-program op id ("op_id_us", calibrate/ENGINE_RUN.md)
// against the simulator's price of the ops of the same ids in the same
// batches, summed over the run.
#ifndef CAPPLAN_CALIBRATE_VALIDATE_OP_IDS_H_
#define CAPPLAN_CALIBRATE_VALIDATE_OP_IDS_H_

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/ops.h"
#include "sim/cost_model.h"

namespace capplan::calibrate {

// One op id over the run. `measured`: some iteration's engine timed it;
// `priced`: some iteration's replay priced it (collectives never are: the
// slice is one rank).
struct OpIdSplit {
  std::string id;
  double measured_s = 0, predicted_s = 0;
  bool measured = false, priced = false;
};

// Sums op ids over the iterations; Finish lists them in the layer
// program's order (ids the program does not have last).
class OpIdReplay {
 public:
  // `sharded`: the replay's model; its layer program says which ids are
  // collectives.
  explicit OpIdReplay(const models::ShardedModel& sharded);

  // While on: whether the replay needs this iteration's per-op prices.
  bool on() const { return on_; }
  // One iteration: its optional "op_id_us" (ptr is the iteration's JSON
  // pointer; a bad value is an error naming its path) and the prices of the
  // replayed ops (`prices[i]` of `ops[i]`, sim::CostModel::ExplainOps). The
  // first iteration without "op_id_us" turns the comparison off for the run.
  Status Add(const nlohmann::json& it, const std::string& origin, const std::string& ptr,
             const std::vector<models::Op>& ops, const std::vector<sim::OpPrice>& prices);
  // The run's sums (empty when off); an id only one side has adds a line
  // to *warnings, except a collective the engine timed.
  std::vector<OpIdSplit> Finish(std::set<std::string>* warnings) const;

 private:
  OpIdSplit* Find(const std::string& id);
  bool on_ = true;
  std::set<std::string> collectives_;
  std::map<std::string, size_t> program_order_;
  std::vector<OpIdSplit> ids_;
  std::map<std::string, size_t> index_;
};

}  // namespace capplan::calibrate

#endif  // CAPPLAN_CALIBRATE_VALIDATE_OP_IDS_H_
