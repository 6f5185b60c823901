// A peer planner's predictions of the public validation rows, set beside
// capplan's (`capplan validate --public --peer FILE`): the peer's error on
// every row it predicts, and both planners' MAPE over exactly those rows, so
// the two figures are taken on the same measurements.
//
// The peer file (`capplan.peer_predictions.v1`) is written by a script that
// runs the peer (scripts/peer/aiconfigurator_peer.py for NVIDIA
// AIConfigurator); validation/README.md describes it.
#ifndef CAPPLAN_CALIBRATE_PUBLIC_VALIDATION_PEER_H_
#define CAPPLAN_CALIBRATE_PUBLIC_VALIDATION_PEER_H_

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "calibrate/public_validation.h"
#include "common/status.h"

namespace capplan::calibrate {

inline constexpr char kPeerPredictionsFormat[] = "capplan.peer_predictions.v1";

// One predicted metric of one case row.
struct PeerPrediction {
  std::string case_name, row, metric;
  double predicted = 0;
  // Whether the peer priced the row at the engine version the row ran (a
  // peer may answer only at the versions its own data was taken at).
  bool version_match = false;
  std::string pointer;  // JSON pointer of the value, for errors
};

struct PeerPredictions {
  std::string path, peer, peer_version;
  std::vector<PeerPrediction> predictions;
  int not_covered = 0;  // rows the peer listed as beyond what it expresses
};

// Strict: unknown keys, a metric capplan does not compare
// (ValidationCaseMetrics), a value that is not a finite positive number, or a
// (case, row, metric) given twice is a one-line error naming `origin` and
// the JSON path.
Result<PeerPredictions> ParsePeerPredictions(const std::string& text, const std::string& origin);
Result<PeerPredictions> LoadPeerPredictions(const std::string& path);

// One row both planners predicted.
struct PeerRow {
  std::string case_name, case_class, label, metric;
  double measured = 0, capplan_error_pct = 0, peer_predicted = 0, peer_error_pct = 0;
  bool version_match = false;
};

// MAPE of both over the same rows of one class; `matched_*` over the rows the
// peer priced at the row's own engine version.
struct PeerClassSummary {
  int rows = 0, matched_rows = 0;
  double capplan_mape_pct = 0, peer_mape_pct = 0;
  double matched_capplan_mape_pct = 0, matched_peer_mape_pct = 0;
};

struct PeerValidation {
  std::string path, peer, peer_version;
  std::vector<PeerRow> rows;  // in the public validation's row order
  std::map<std::string, PeerClassSummary> classes;
  int capplan_skipped = 0;  // peer predictions of rows capplan skips (not compared)
  int not_covered = 0;      // the peer file's count of rows it cannot express
};

// Pairs every peer prediction with its public validation row. A prediction
// naming a case, row or metric the validation does not have is an error
// (the peer file is stale: regenerate it with the command it names).
Result<PeerValidation> ComparePeer(const PublicValidation& v, const PeerPredictions& p);

// The block `validate --public --peer` prints after the table, and its JSON
// (the "peer" member of --json).
std::string FormatPeerValidation(const PeerValidation& pv);
nlohmann::json PeerValidationToJson(const PeerValidation& pv);

}  // namespace capplan::calibrate

#endif  // CAPPLAN_CALIBRATE_PUBLIC_VALIDATION_PEER_H_
