// A cost model that prices like another one, then multiplies the time of
// every op running a named kernel implementation by that implementation's
// scale (a calibration overlay's kernel_scale terms, sim/
// calibration_overlay.h). The host side is priced again by PriceHost on the
// scaled GPU time, so an overlapping scheduler hides what it hid before.
#ifndef CAPPLAN_SIM_KERNEL_SCALED_COST_MODEL_H_
#define CAPPLAN_SIM_KERNEL_SCALED_COST_MODEL_H_

#include <map>
#include <memory>
#include <string>

#include "sim/cost_model.h"

namespace capplan::sim {

// `inner` priced with the scales; the returned factory makes a model named
// like inner's.
CostModelFactory KernelScaledFactory(CostModelFactory inner,
                                     std::map<std::string, double, std::less<>> scales);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_KERNEL_SCALED_COST_MODEL_H_
