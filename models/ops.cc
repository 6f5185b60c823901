// The operator list of one forward step on one GPU (ops.h): the layer
// program (layer_program.h) instantiated with a batch. Each op kind has one
// emitter that turns the program's per-rank shapes and the batch's rows into
// FLOPs and HBM bytes.
#include "models/ops.h"

#include <algorithm>
#include <cmath>

#include "models/dtype_facts.h"
#include "models/expert_parallel.h"
#include "models/layer_program.h"
#include "models/ops_internal.h"

namespace capplan::models {

bool IsCollective(OpKind k) {
  switch (k) {
    case OpKind::kAllReduce:
    case OpKind::kAllGather:
    case OpKind::kReduceScatter:
    case OpKind::kAllToAll:
      return true;
    case OpKind::kGemm:
    case OpKind::kGroupedGemm:
    case OpKind::kRouter:
    case OpKind::kAttentionDecode:
    case OpKind::kAttentionPrefill:
    case OpKind::kMlaDecode:
    case OpKind::kMlaPrefill:
    case OpKind::kMlaPrefillAbsorbed:
    case OpKind::kDsaIndexer:
    case OpKind::kKvAppend:
    case OpKind::kKvVerify:
    case OpKind::kElementwise:
    case OpKind::kEmbedding:
    case OpKind::kSampling:
      return false;
  }
  return false;
}

const char* OpKindName(OpKind k) {
  switch (k) {
    case OpKind::kGemm: return "gemm";
    case OpKind::kGroupedGemm: return "grouped_gemm";
    case OpKind::kRouter: return "router";
    case OpKind::kAttentionDecode: return "attention_decode";
    case OpKind::kAttentionPrefill: return "attention_prefill";
    case OpKind::kMlaDecode: return "mla_decode";
    case OpKind::kMlaPrefill: return "mla_prefill";
    case OpKind::kMlaPrefillAbsorbed: return "mla_prefill_absorbed";
    case OpKind::kDsaIndexer: return "dsa_indexer";
    case OpKind::kKvAppend: return "kv_append";
    case OpKind::kKvVerify: return "kv_verify";
    case OpKind::kAllReduce: return "all_reduce";
    case OpKind::kAllGather: return "all_gather";
    case OpKind::kReduceScatter: return "reduce_scatter";
    case OpKind::kAllToAll: return "all_to_all";
    case OpKind::kElementwise: return "elementwise";
    case OpKind::kEmbedding: return "embedding";
    case OpKind::kSampling: return "sampling";
  }
  return "?";
}

const char* OpClassName(OpClass c) {
  switch (c) {
    case OpClass::kAttention: return "attention";
    case OpClass::kDenseGemm: return "dense_gemm";
    case OpClass::kMoe: return "moe";
    case OpClass::kCommunication: return "communication";
    case OpClass::kElementwise: return "elementwise";
    case OpClass::kOverhead: return "overhead";
  }
  return "?";
}

int64_t BatchShape::TotalTokens() const {
  int64_t t = DecodeTokens();
  for (const Chunk& c : prefill) t += c.new_tokens;
  return t;
}

double ExpectedUniqueExperts(double tokens, int k, int n) {
  if (n <= 0 || k <= 0 || tokens <= 0) return 0;
  return n * (1.0 - std::pow(1.0 - static_cast<double>(k) / n, tokens));
}

Result<ShardedModel> ShardModel(const ModelCard& card, const ParallelLayout& layout,
                                const PrecisionChoice& choice) {
  CAPPLAN_RETURN_IF_ERROR(GetDtypeFacts().status());
  ShardedModel m;
  m.card = card;
  m.layout = layout;
  m.choice = choice;
  CAPPLAN_ASSIGN_OR_RETURN(m.weights, ComputeWeights(card, layout, choice));
  CAPPLAN_ASSIGN_OR_RETURN(m.formats, ResolveWeightFormats(card, choice));
  CAPPLAN_ASSIGN_OR_RETURN(m.kv, ComputeKvLayout(card, layout, choice.kv_cache));
  CAPPLAN_ASSIGN_OR_RETURN(LayerProgram program, BuildLayerProgram(m));
  m.program = std::make_shared<const LayerProgram>(std::move(program));
  return m;
}

namespace {

Op Instance(const ProgramOp& spec, int64_t count) {
  Op op;
  op.kind = spec.kind;
  op.op_class = spec.op_class;
  op.name = spec.id;
  op.count = count;
  return op;
}

// GEMM FLOPs = 2*m*n*k; bytes = weights at their stored format (values +
// scales) + activations in (m*k) and out (m*n).
void EmitGemm(const ProgramOp& s, const StepRows& r, int64_t count, std::vector<Op>* out) {
  Op op = Instance(s, count);
  const int64_t m = r.Of(s.rows);
  op.m = m;
  op.n = s.n;
  op.k = s.k;
  op.weight_dtype = s.weight_dtype;
  op.compute_dtype = s.compute_dtype;
  op.group_size = s.group_size;
  op.flops = 2.0 * m * op.n * op.k;
  op.bytes = s.weight_bytes + static_cast<double>(m) * op.k * r.act_bytes +
             static_cast<double>(m) * op.n * r.act_bytes;
  out->push_back(std::move(op));
}

// Balanced routing: this GPU's experts receive T*k/ep token-rows and touch
// E/ep * (1-(1-k/E)^T) distinct experts, whose weights it reads.
void EmitExperts(const ProgramOp& s, const StepRows& r, int64_t count, std::vector<Op>* out) {
  Op op = Instance(s, count);
  const int64_t t = r.Of(s.rows);
  const double rows = double(t) * s.top_k / s.ep;
  const double touched = ExpectedUniqueExperts(double(t), s.top_k, s.experts) / s.ep;
  op.m = static_cast<int64_t>(std::ceil(rows));
  op.n = s.n;
  op.k = s.k;
  op.groups = static_cast<int64_t>(std::llround(touched));
  op.weight_dtype = s.weight_dtype;
  op.compute_dtype = s.compute_dtype;
  op.group_size = s.group_size;
  op.flops = 2.0 * rows * s.expert_width * op.k;
  op.bytes = touched * s.weight_bytes + 2.0 * rows * op.k * r.act_bytes;
  out->push_back(std::move(op));
}

void EmitElementwise(const ProgramOp& s, const StepRows& r, int64_t count, std::vector<Op>* out) {
  Op op = Instance(s, count);
  const double rows = static_cast<double>(r.Of(s.rows));
  op.flops = rows * s.flops_per_row;
  op.bytes = (rows * s.in_per_row + rows * s.out_per_row) * r.act_bytes;
  out->push_back(std::move(op));
}

// The per-GPU message; `bytes` are the HBM read + write of it. An EP
// all-to-all sends the share bound for the other ranks.
void EmitCollective(const ProgramOp& s, const StepRows& r, int64_t count, std::vector<Op>* out) {
  Op op = Instance(s, count);
  op.participants = s.participants;
  op.message_bytes = double(r.Of(s.rows)) * s.message_bytes_per_row;
  if (s.kind == OpKind::kAllToAll) {
    op.message_bytes = op.message_bytes * (s.participants - 1) / s.participants;
  }
  op.bytes = 2 * op.message_bytes;
  out->push_back(std::move(op));
}

void EmitEmbedding(const ProgramOp& s, const StepRows& r, int64_t count, std::vector<Op>* out) {
  Op op = Instance(s, count);
  op.q_tokens = r.Of(s.rows);
  op.bytes = op.q_tokens * s.bytes_per_row;
  out->push_back(std::move(op));
}

void EmitSampling(const ProgramOp& s, const StepRows& r, int64_t count, std::vector<Op>* out) {
  Op op = Instance(s, count);
  op.batch = r.Of(s.rows);
  op.bytes = double(op.batch) * s.bytes_per_row;
  op.flops = op.batch * s.flops_per_row;
  out->push_back(std::move(op));
}

using Emitter = void (*)(const ProgramOp&, const StepRows&, int64_t, std::vector<Op>*);

// One emitter per op kind (attention kinds: ops_attention.cc), and one for
// the linear-attention state ops (ops_linear_attention.cc).
Emitter EmitterFor(const ProgramOp& op) {
  if (op.state_op != LinearStateOp::kNone) return EmitLinearState;
  switch (op.kind) {
    case OpKind::kGemm:
    case OpKind::kRouter: return EmitGemm;
    case OpKind::kGroupedGemm: return EmitExperts;
    case OpKind::kElementwise: return EmitElementwise;
    case OpKind::kEmbedding: return EmitEmbedding;
    case OpKind::kSampling: return EmitSampling;
    case OpKind::kAllReduce:
    case OpKind::kAllGather:
    case OpKind::kReduceScatter:
    case OpKind::kAllToAll: return EmitCollective;
    case OpKind::kAttentionDecode:
    case OpKind::kAttentionPrefill:
    case OpKind::kMlaDecode:
    case OpKind::kMlaPrefill:
    case OpKind::kMlaPrefillAbsorbed:
    case OpKind::kDsaIndexer:
    case OpKind::kKvAppend:
    case OpKind::kKvVerify: return EmitAttention;
  }
  return EmitAttention;
}

// Each op's kernel implementation as the engine chooses it: GEMMs by their
// weight format, attention by its KV format.
void AssignKernels(const KernelChoices& kernels, int ep, std::vector<Op>* ops) {
  if (kernels.empty()) return;
  for (Op& op : *ops) {
    const bool attention = op.op_class == OpClass::kAttention && op.kind != OpKind::kGemm;
    op.impl = op.kind == OpKind::kGroupedGemm && ep > 1
                  ? kernels.ForMoeEp(op.weight_dtype)
                  : kernels.For(op.kind, attention ? op.kv_dtype : op.weight_dtype);
  }
}

}  // namespace

int64_t StepRows::Of(RowSource s) const {
  switch (s) {
    case RowSource::kNone: return 0;
    case RowSource::kAttnTokens: return attn;
    case RowSource::kFfnTokens: return ffn;
    case RowSource::kFfnTokensPerTp: return ffn_per_tp;
    case RowSource::kLogitRows: return logits;
    case RowSource::kAbsorbedMlaRows: return decode + (absorbed ? attn - decode : 0);
    case RowSource::kPrefillKvTokens: return prefill_kv;
  }
  return 0;
}

StepRows::StepRows(const ShardedModel& m, const LayerProgram& p, const BatchShape& b)
    : batch(&b), act_bytes(p.act_bytes) {
  const ParallelLayout& l = m.layout;
  attn = b.TotalTokens();
  // Dense and MoE layers see the tokens of every attention rank (balanced).
  ffn = attn * l.AttentionRanks();
  ffn_per_tp = std::max<int64_t>(1, ffn / l.tp);
  decode = b.DecodeTokens();
  logits = (decode + static_cast<int64_t>(b.prefill.size())) * l.LogitRanks();
  for (const auto& ch : b.prefill) prefill_kv += ch.cached_tokens + ch.new_tokens;
  absorbed = AbsorbedMlaPrefill(m, b);
  linear_state = m.linear_state;
}

bool StepRows::Runs(const ProgramOp& op) const {
  if (op.phase == OpPhase::kDecode && decode == 0) return false;
  if (op.phase == OpPhase::kPrefill && batch->prefill.empty()) return false;
  if (op.mla_form != MlaForm::kAny && (op.mla_form == MlaForm::kAbsorbed) != absorbed) return false;
  if (op.rows == RowSource::kAbsorbedMlaRows || op.rows == RowSource::kPrefillKvTokens) {
    return Of(op.rows) > 0;
  }
  return true;
}

bool OpRunsFor(const ShardedModel& model, const LayerProgram& program, const ProgramOp& op,
               const BatchShape& batch) {
  return StepRows(model, program, batch).Runs(op);
}

void InstantiateProgram(const ShardedModel& model, const LayerProgram& program,
                        const BatchShape& batch, std::vector<Op>* out) {
  out->clear();
  const StepRows rows(model, program, batch);
  if (rows.attn == 0) return;
  out->reserve(48);
  for (const ProgramOp& op : program.prologue) EmitterFor(op)(op, rows, 1, out);
  for (const ProgramOp& op : program.layer_ops) {
    if (op.layers > 0 && rows.Runs(op)) EmitterFor(op)(op, rows, op.layers, out);
  }
  for (const ProgramOp& op : program.epilogue) EmitterFor(op)(op, rows, 1, out);
  AssignKernels(model.kernels, model.layout.ep, out);
  ApplyExpertParallel(model, batch, out);
}

void BuildStepOps(const ShardedModel& model, const BatchShape& batch, std::vector<Op>* out) {
  if (model.program != nullptr) return InstantiateProgram(model, *model.program, batch, out);
  // A ShardedModel assembled by hand: build its program for this call.
  Result<LayerProgram> program = BuildLayerProgram(model);
  if (!program.ok()) {
    out->clear();
    return;
  }
  InstantiateProgram(model, *program, batch, out);
}

}  // namespace capplan::models
