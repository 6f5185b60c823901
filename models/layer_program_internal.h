// Builders shared by layer_program.cc and layer_program_attention.cc (not a
// public header).
#ifndef CAPPLAN_MODELS_LAYER_PROGRAM_INTERNAL_H_
#define CAPPLAN_MODELS_LAYER_PROGRAM_INTERNAL_H_

#include <string>
#include <vector>

#include "models/dtype_facts.h"
#include "models/layer_program.h"
#include "models/weight_tensors.h"

namespace capplan::models::program_build {

struct Builder {
  const ShardedModel* m;
  const DtypeFacts* facts;
  LayerProgram* p;
  int64_t h;    // hidden size
  int64_t a;    // bytes per activation element (bf16)
  int attn_tp;  // attention TP degree
  int dp;       // attention DP ranks
  int tp;
};

// A GEMM of `rows` tokens against `copies` tensors of local shape n x k
// stored as `f` (copies > 1 fuses gate and up projections into one GEMM).
ProgramOp GemmOp(const Builder& b, std::string id, OpClass cls, const WeightFormat& f, int64_t n,
                 int64_t k, int copies, RowSource rows);
// Elements read, written and FLOPs per row.
ProgramOp ElementwiseOp(std::string id, RowSource rows, double in, double out, double flops);
ProgramOp CollectiveOp(OpKind kind, std::string id, int participants, RowSource rows,
                       double message_per_row);

// The attention block of a layer: norm excluded, from the q/kv projections
// to o_proj (layer_program_attention.cc).
void AddAttention(const Builder& b, const std::vector<WeightTensor>& tensors);

// The Gated DeltaNet block of a hybrid's linear layers, from in_proj_qkvz
// to out_proj (layer_program_linear.cc); nothing for other cards.
void AddLinearAttention(const Builder& b, const std::vector<WeightTensor>& tensors);

}  // namespace capplan::models::program_build

#endif  // CAPPLAN_MODELS_LAYER_PROGRAM_INTERNAL_H_
