// SimConfig and SimResult live in sim/sim_config.h; this header forwards
// to it for sim/serving_pool.h, which still includes it by this name. New
// code includes sim/sim_config.h.
#ifndef CAPPLAN_SIM_SIMULATOR_H_
#define CAPPLAN_SIM_SIMULATOR_H_

#include "sim/sim_config.h"

#endif  // CAPPLAN_SIM_SIMULATOR_H_
