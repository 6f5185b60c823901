// A GPU's power model (the profile's optional "power" block, documented in
// calibrate/PROFILE.md): the board limit, idle power, the power the board
// draws while a step's time is bound by compute, by memory, by
// communication or by host overhead, the node's non-GPU power, and how a
// power limit below a state's draw slows that state. Every figure carries
// its provenance and the range its public sources span: a figure measured
// once is an assumption with a band.
#ifndef CAPPLAN_HW_POWER_H_
#define CAPPLAN_HW_POWER_H_

#include <array>
#include <string>

#include "common/json_util.h"
#include "common/status.h"

namespace capplan::hw {

struct HardwareProfile;

// The states a GPU spends step time in, in the cost model's bound order
// (sim::Bound: compute, memory, communication, overhead).
inline constexpr int kNumPowerStates = 4;
inline constexpr const char* kPowerStateKeys[kNumPowerStates] = {
    "compute_w", "memory_w", "communication_w", "overhead_w"};

// One figure in watts (or a plain number) with the range of its sources.
struct PowerFigure {
  double value = 0;
  double lo = 0, hi = 0;
};

struct PowerModel {
  bool present = false;  // the profile has a "power" block
  PowerFigure tdp_w;     // board power limit (datasheet)
  PowerFigure idle_w;    // board power with nothing running
  // Board power while the step's time is in each state (kPowerStateKeys).
  std::array<PowerFigure, kNumPowerStates> state_w;
  PowerFigure node_gpus;       // GPUs one node (server, NVL72 compute tray) holds
  PowerFigure node_non_gpu_w;  // CPUs, NICs, switches, fans and conversion per node
  // A state whose draw P exceeds a power limit L runs at (L / P)^exponent
  // of its uncapped rate (clocks fall with the limit).
  PowerFigure cap_rate_exponent;

  double StateWatts(int state) const { return state_w[state].value; }
  // How much longer a state's time gets under `limit_w` (>= 1; 1 when the
  // state draws no more than the limit or limit_w <= 0).
  double CapTimeFactor(int state, double limit_w) const;
  // The state's draw under `limit_w` (min of the two; limit_w <= 0: none).
  double CappedStateWatts(int state, double limit_w) const;
};

// Reads root["power"] when present into p->power, recording each figure's
// provenance as "power.<key>"; ranges must hold their value.
Status ReadPowerModel(JsonObject& root, HardwareProfile* p);

}  // namespace capplan::hw

#endif  // CAPPLAN_HW_POWER_H_
