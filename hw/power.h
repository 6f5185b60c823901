// A GPU's power model (the profile's optional "power" block, documented in
// calibrate/PROFILE.md): the board limit, idle power, the power the board
// draws while kernels run as a function of what they do (a floor with the
// clocks up, plus a term for HBM bandwidth used and one for tensor-core
// rate used), while collectives run, and while the GPU waits on the host;
// the node's non-GPU power; and how a power limit below the draw slows the
// GPU. Every figure carries its provenance and the range its public
// sources span: a figure measured once is an assumption with a band.
#ifndef CAPPLAN_HW_POWER_H_
#define CAPPLAN_HW_POWER_H_

#include <string>

#include "common/json_util.h"
#include "common/status.h"

namespace capplan::hw {

struct HardwareProfile;

// One figure in watts (or a plain number) with the range of its sources.
struct PowerFigure {
  double value = 0;
  double lo = 0, hi = 0;
};

// What the GPU's kernels use of its two datapaths over some span, each a
// fraction of the datasheet peak: tensor FLOP/s achieved over the dense
// peak of the ops' math format, HBM bytes/s achieved over peak bandwidth.
struct Utilization {
  double tensor = 0;
  double hbm = 0;
};

struct PowerModel {
  bool present = false;  // the profile has a "power" block
  PowerFigure tdp_w;     // board power limit (datasheet)
  PowerFigure idle_w;    // board power with nothing running
  // While kernels run: kernel_floor_w + hbm_w * hbm + tensor_w * tensor,
  // at most the board limit (the board lowers its clocks to stay there,
  // which the profile's efficiency curves, measured at stock limits, hold).
  PowerFigure kernel_floor_w;   // clocks up, SMs resident, datapaths quiet
  PowerFigure hbm_w;            // added at the full HBM bandwidth
  PowerFigure tensor_w;         // added at the full dense tensor rate
  PowerFigure communication_w;  // while collectives run
  PowerFigure overhead_w;       // host stalls: scheduling, sampling, launch gaps
  PowerFigure node_gpus;        // GPUs one node (server, NVL72 compute tray) holds
  PowerFigure node_non_gpu_w;   // CPUs, NICs, switches, fans and conversion per node
  // A GPU whose draw P exceeds a power limit L runs at (L / P)^exponent of
  // its rate (clocks fall with the limit).
  PowerFigure cap_rate_exponent;

  // What kernels using `u` draw with no limit of the user's (the board's
  // own limit applies).
  double KernelWatts(const Utilization& u) const;
  // `watts` under `limit_w` (the smaller; limit_w <= 0: no limit).
  static double Capped(double watts, double limit_w);
  // How much longer work drawing `watts` takes under `limit_w` (>= 1; 1 when
  // it draws no more than the limit or limit_w <= 0).
  double CapTimeFactor(double watts, double limit_w) const;
};

// Reads root["power"] when present into p->power, recording each figure's
// provenance as "power.<key>"; ranges must hold their value.
Status ReadPowerModel(JsonObject& root, HardwareProfile* p);

}  // namespace capplan::hw

#endif  // CAPPLAN_HW_POWER_H_
