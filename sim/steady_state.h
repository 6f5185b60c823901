// Whether a run's measured window reached steady state.
//
// A closed loop of concurrency c keeps c requests in flight from its start
// until its last wave drains. Its measured window (from the first measured
// request's send to the last one's finish) holds fewer on average when the
// warm-up does not cover the first wave (warm-up requests are in flight but
// not measured) or when the run ends on a partial wave: the window then
// mixes the steady batch with smaller ones, and every metric moves with the
// run's length. The check is Little's law: the measured requests'
// send-to-finish times over the window's span give the mean number in
// flight, and over c the window's occupancy. A run below kSteadyOccupancy
// (sim/prediction_intervals.h) is reported with a warning that names the
// fix, and its prediction intervals widen by the occupancy
// (WidenForShortWindow, there).
//
// A closed-loop workload that gives no num_requests gets a warm-up of one
// full wave (c requests) and kClosedLoopDefaultWaves waves measured, a
// window that reaches steady state at the length spreads of the shipped
// scenarios (sim/workload/workload.h: why 40); a wider spread is caught by
// the check like any other window.
#ifndef CAPPLAN_SIM_STEADY_STATE_H_
#define CAPPLAN_SIM_STEADY_STATE_H_

#include <cstdint>
#include <optional>

#include "schema/run_summary.h"
#include "sim/metrics.h"
#include "sim/prediction_intervals.h"
#include "sim/workload/workload.h"

namespace capplan::sim {

// Closed loops only: mean requests in flight over the measured window / the
// concurrency; nullopt for other workloads or a window of no length.
std::optional<double> WindowOccupancy(const Workload& w, const E2eTotals& t);

// Sets mean_requests_in_flight and, for a closed loop, window_occupancy;
// below kSteadyOccupancy adds a warning to the exit pool naming the fix.
void AddSteadyStateCheck(const Workload& w, const E2eTotals& t, schema::RunSummary* s);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_STEADY_STATE_H_
