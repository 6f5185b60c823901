// The GEMM/MoE sweep's shapes, read from kernels/gemm/sweep_shapes.json
// (model dimensions are data with sources, not literals in code).
#ifndef CAPPLAN_KERNELS_GEMM_SWEEP_SHAPES_H_
#define CAPPLAN_KERNELS_GEMM_SWEEP_SHAPES_H_

#include <string>
#include <vector>

#include "common/status.h"

namespace capplan::kernels {

struct SweepDense {
  std::string name;
  int n = 0, k = 0;
};

struct SweepMoe {
  int hidden = 0, intermediate = 0, total_experts = 0, ep = 1, top_k = 0;
  int LocalExperts() const { return total_experts / ep; }
};

struct SweepModel {
  std::string name;
  int int4_group = 128;
  std::vector<SweepDense> dense;
  SweepMoe moe;
};

struct SweepShapes {
  std::vector<int> m_values, quick_m_values, dry_m_values;
  std::vector<SweepModel> models;
};

Result<SweepShapes> LoadSweepShapes(const std::string& path);
// DataPath("kernels/gemm/sweep_shapes.json").
Result<SweepShapes> LoadDefaultSweepShapes();

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_GEMM_SWEEP_SHAPES_H_
