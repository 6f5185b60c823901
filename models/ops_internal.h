// Helpers shared by ops.cc and ops_attention.cc (not a public header).
#ifndef CAPPLAN_MODELS_OPS_INTERNAL_H_
#define CAPPLAN_MODELS_OPS_INTERNAL_H_

#include <vector>

#include "models/layer_program.h"
#include "models/ops.h"

namespace capplan::models {

// A batch's rows as the program's ops count them (layer_program.h RowSource).
struct StepRows {
  StepRows(const ShardedModel& m, const LayerProgram& p, const BatchShape& b);
  int64_t Of(RowSource s) const;
  // Whether `op` runs for this batch: its phase has rows, its MLA form is
  // the one the batch runs, and a kv_b form has rows to map.
  bool Runs(const ProgramOp& op) const;

  const BatchShape* batch;
  int64_t act_bytes;  // bytes per activation element (bf16)
  int64_t attn = 0;   // this attention rank's new tokens
  int64_t ffn = 0;    // every attention rank's new tokens
  int64_t ffn_per_tp = 0;
  int64_t decode = 0;  // query rows of the decode requests
  int64_t logits = 0;
  int64_t prefill_kv = 0;  // cached + new tokens of the prefill chunks
  bool absorbed = false;   // the MLA prefill runs absorbed
  LinearStateFormat linear_state;  // the engine's linear-attention state
};

// Number of (query, key) pairs of a causal prefill chunk of `n` new tokens
// after `cached` cached ones, each query seeing at most `cap` keys (cap <= 0:
// no cap). Query i (1-based) sees cached + i keys.
double CausalPairs(int64_t cached, int64_t n, int64_t cap);
// The same pairs when every query sees only the keys of its own
// `chunk`-token chunk (chunked local attention; chunk > 0).
double ChunkedPairs(int64_t cached, int64_t n, int64_t chunk);

// True when the engine runs this batch's MLA prefill in the absorbed form:
// it always does (ShardedModel::mla_prefill_always_absorbed), or it names an
// mla_prefill_absorbed kernel (models/kernel_choice.h) and the batch's
// summed cached prefix lies in ShardedModel::mla_absorbed_prefix.
bool AbsorbedMlaPrefill(const ShardedModel& m, const BatchShape& batch);

// Appends the instance of a linear-attention state op (conv, recurrent
// update, chunked scan; ops_linear_attention.cc) for this batch.
void EmitLinearState(const ProgramOp& spec, const StepRows& rows, int64_t count,
                     std::vector<Op>* out);

// Appends the instance of an attention-kernel op (KV append, DSA indexer,
// decode and prefill attention in every form) for this batch.
void EmitAttention(const ProgramOp& spec, const StepRows& rows, int64_t count,
                   std::vector<Op>* out);

}  // namespace capplan::models

#endif  // CAPPLAN_MODELS_OPS_INTERNAL_H_
