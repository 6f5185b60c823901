// The layer program's promise: for the same batch, the ops the step pricer
// prices (models::BuildStepOps) are the ops the CPU backend runs, in the same
// order, with the same shapes; and the weights the engine allocates are the
// program's: every op that names tensors has them, at its shapes. Every shipped card at every TP
// its heads allow (1, 2, 4, 8), weights default/fp8/int4 and KV bf16/fp8, on a mixed batch: a
// decode request, a prefill chunk after a cached prefix and a fresh prompt.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine/cpu_backend.h"
#include "engine/slice_weights.h"
#include "models/card.h"
#include "models/ops.h"
#include "models/weight_tensors.h"

namespace capplan::engine {
namespace {

using models::Op;
using models::OpKind;

// Known shape deviations, by op id: the engine's DSA indexer projects its
// queries from the hidden state (k = hidden) while the model and the
// program project them from the q latent (k = q_lora_rank).
bool KnownDeviation(const std::string& id, const char* field) {
  return id == "attn.indexer.wq_b" && std::string(field) == "k";
}

bool IsGemm(OpKind k) {
  return k == OpKind::kGemm || k == OpKind::kRouter || k == OpKind::kGroupedGemm;
}
bool IsAttention(OpKind k) {
  return k == OpKind::kAttentionDecode || k == OpKind::kAttentionPrefill ||
         k == OpKind::kMlaDecode || k == OpKind::kMlaPrefill ||
         k == OpKind::kMlaPrefillAbsorbed || k == OpKind::kDsaIndexer;
}

// Every difference between the priced ops and the visited ones, one per
// line; empty when they agree.
std::string Compare(const std::vector<Op>& priced, const std::vector<CpuOpVisit>& visits,
                    int layers) {
  std::ostringstream d;
  std::map<std::string, int> index, visited;
  for (size_t i = 0; i < priced.size(); ++i) {
    if (!index.emplace(priced[i].name, static_cast<int>(i)).second) {
      d << "priced twice: " << priced[i].name << "\n";
    }
  }
  // Order: within a layer (prologue -1, epilogue `layers`) the visited ops
  // follow the priced list; the prologue's come before every layer's, and
  // every layer's before the epilogue's.
  int last_layer = -2, last_index = -1;
  int max_prologue = -1, min_layer = 1 << 30, max_layer = -1, min_epilogue = 1 << 30;
  for (const CpuOpVisit& v : visits) {
    auto it = index.find(v.id);
    if (it == index.end()) {
      d << "visited, not priced: " << v.id << " (layer " << v.layer << ")\n";
      continue;
    }
    ++visited[v.id];
    if (v.layer < last_layer) d << "layer order: " << v.id << "\n";
    if (v.layer != last_layer) last_index = -1;
    if (it->second <= last_index) d << "out of order in layer " << v.layer << ": " << v.id << "\n";
    last_layer = v.layer;
    last_index = it->second;
    if (v.layer < 0) {
      max_prologue = std::max(max_prologue, it->second);
    } else if (v.layer >= layers) {
      min_epilogue = std::min(min_epilogue, it->second);
    } else {
      min_layer = std::min(min_layer, it->second);
      max_layer = std::max(max_layer, it->second);
    }
    const Op& p = priced[it->second];
    auto check = [&](const char* field, int64_t got, int64_t want) {
      if (got != want && !KnownDeviation(v.id, field)) {
        d << v.id << " layer " << v.layer << ": " << field << " " << got << " != priced " << want
          << "\n";
      }
    };
    if (IsGemm(p.kind)) {
      check("m", v.m, p.m);
      check("n", v.n, p.n);
      check("k", v.k, p.k);
    } else if (IsAttention(p.kind)) {
      check("q_rows", v.m, p.q_tokens);
      check("heads", v.heads, p.heads);
      check("kv_heads", v.kv_heads, p.kv_heads);
      check("head_dim", v.head_dim, p.head_dim);
    } else if (p.kind == OpKind::kEmbedding || p.kind == OpKind::kKvAppend) {
      check("rows", v.m, p.q_tokens);
    } else if (p.kind == OpKind::kSampling) {
      check("rows", v.m, p.batch);
    }
  }
  if (max_prologue >= min_layer || max_layer >= min_epilogue) d << "sections out of order\n";
  for (const Op& p : priced) {
    if (visited[p.name] != p.count) {
      d << p.name << ": priced x" << p.count << ", run x" << visited[p.name] << "\n";
    }
  }
  return d.str();
}

// The step's times by op id (what run files carry as op_id_us) against the
// priced ops and the visits: exactly the priced ids, each with its priced
// class and the sum of its visits' times; their sums by class are the
// class split. Empty when they agree.
std::string CompareOpTimes(const std::vector<Op>& priced, const StepOpTimes& times,
                           const std::vector<CpuOpVisit>& visits) {
  std::ostringstream d;
  if (!times.valid) d << "op times not valid\n";
  std::map<std::string, double> visit_us;
  for (const CpuOpVisit& v : visits) visit_us[v.id] += v.us;
  std::map<std::string, const OpIdTime*> timed;
  std::array<double, kEngineOpClasses> by_class{};
  for (const OpIdTime& t : times.ops) {
    if (!timed.emplace(t.id, &t).second) d << "timed twice: " << t.id << "\n";
    if (!visit_us.contains(t.id)) d << "timed, not visited: " << t.id << "\n";
    if (t.us != visit_us[t.id]) d << t.id << ": " << t.us << " us != visits' " << visit_us[t.id] << "\n";
    by_class[static_cast<int>(t.op_class)] += t.us;
  }
  for (const Op& p : priced) {
    auto it = timed.find(p.name);
    if (it == timed.end()) {
      d << "priced, not timed: " << p.name << "\n";
    } else if (it->second->op_class != p.op_class) {
      d << p.name << ": class " << models::OpClassName(it->second->op_class) << " != priced "
        << models::OpClassName(p.op_class) << "\n";
    }
  }
  if (timed.size() != priced.size()) d << timed.size() << " ids timed, " << priced.size() << " priced\n";
  const auto classes = times.ClassUs();
  for (int c = 0; c < kEngineOpClasses; ++c) {
    if (std::abs(classes[c] - by_class[c]) > 1e-9 * (1 + by_class[c])) {
      d << "class " << c << ": " << classes[c] << " != " << by_class[c] << "\n";
    }
  }
  return d.str();
}

// One op's weights against the program: `what` names the first difference
// ("" when they agree). GEMMs hold n x k (fused MLPs and experts summed over
// their copies), other ops their tensor's per-rank elements.
std::string CompareOpWeights(const SliceConfig& slice, const models::ProgramOp& op,
                             const OpWeights& w) {
  std::ostringstream d;
  auto check = [&](const char* field, int64_t got, int64_t want) {
    if (got != want && !KnownDeviation(op.id, field)) {
      d << field << " " << got << " != program " << want << "; ";
    }
  };
  const models::ShardedModel& m = *slice.program;
  const std::vector<models::WeightTensor> tensors = models::ListWeightTensors(m.card);
  auto local = [&](std::string_view name) {
    for (const models::WeightTensor& t : tensors) {
      if (name == t.name) return models::ShardTensor(m.card, t, m.layout);
    }
    d << "no tensor " << name << "; ";
    return models::LocalShape{};
  };
  const int64_t elems = local(op.tensors[0]).n * local(op.tensors[0]).k;
  if (op.id == models::op_ids::kKvBProjAbsorbed || op.id == models::op_ids::kKvBProjExpand) {
    check("w_uk+w_uv", static_cast<int64_t>(w.w_uk.size() + w.w_uv.size()), op.n * op.k);
  } else if (op.kind == OpKind::kRouter) {
    check("router", static_cast<int64_t>(w.router.size()), op.n * op.k);
  } else if (op.kind == OpKind::kGroupedGemm) {
    check("experts", static_cast<int64_t>(w.experts.experts.size()), op.experts);
    for (const kernels::MoeExpertWeights& e : w.experts.experts) {
      check("n", int64_t{e.gate_up.n} + e.down.k, op.n);
      check("k", e.gate_up.k, op.k);
    }
  } else if (!w.mlps.empty()) {  // a dense or shared-expert MLP op
    const bool down =
        op.id == models::op_ids::kDenseDownProj || op.id == models::op_ids::kSharedDownProj;
    int64_t n = 0;
    for (const kernels::MoeExpertWeights& e : w.mlps) {
      const kernels::GemmWeights& g = down ? e.down : e.gate_up;
      n += g.n;
      check("k", g.k, op.k);
    }
    if (down || IsGemm(op.kind)) check("n", n, op.n);
  } else if (IsGemm(op.kind)) {
    check("n", w.gemm.n, op.n);
    check("k", w.gemm.k, op.k);
    if (op.tensors.size() > 1)
      check("norm", static_cast<int64_t>(w.norm.size()), local(op.tensors[1]).n);
  } else if (op.kind == OpKind::kEmbedding) {
    check("embedding", static_cast<int64_t>(w.embedding.size()), elems);
  } else if (op.state_op == models::LinearStateOp::kConv) {
    check("conv", static_cast<int64_t>(w.conv.size()), elems);
  } else if (op.state_op != models::LinearStateOp::kNone) {
    check("a_log", static_cast<int64_t>(w.a_log.size()), elems);
    check("dt_bias", static_cast<int64_t>(w.dt_bias.size()), elems);
  } else {
    check("norm", static_cast<int64_t>(w.norm.size()), elems);
  }
  return d.str();
}

// The engine's weights against the program: every op naming tensors has
// weights under (layer, op id) at its shapes, and no other key holds any.
std::string CompareWeights(const SliceConfig& slice, const SliceWeights& weights) {
  std::ostringstream d;
  const models::LayerProgram& p = *slice.program->program;
  std::set<std::pair<int, std::string>> expected;
  auto scope = [&](int layer, const std::vector<const models::ProgramOp*>& ops) {
    for (const models::ProgramOp* op : ops) {
      if (op->tensors.empty()) continue;
      expected.emplace(layer, op->id);
      const OpWeights* w = weights.Find(layer, op->id);
      if (w == nullptr) {
        d << "no weights: " << op->id << " layer " << layer << "\n";
        continue;
      }
      const std::string diff = CompareOpWeights(slice, *op, *w);
      if (!diff.empty()) d << op->id << " layer " << layer << ": " << diff << "\n";
    }
  };
  auto pointers = [](const std::vector<models::ProgramOp>& ops) {
    std::vector<const models::ProgramOp*> out;
    for (const models::ProgramOp& op : ops) out.push_back(&op);
    return out;
  };
  scope(-1, pointers(p.prologue));
  for (int l = 0; l < slice.layers; ++l) {
    std::vector<const models::ProgramOp*> ops;
    for (int i : p.GroupOf(l)->ops) ops.push_back(&p.layer_ops[i]);
    scope(l, ops);
  }
  scope(slice.layers, pointers(p.epilogue));
  for (const auto& key : weights.Keys()) {
    if (!expected.contains(key))
      d << "weights for no op: " << key.second << " layer " << key.first << "\n";
  }
  return d.str();
}

// Pages: request r owns physical pages 1 + 8r .. (page size 4).
std::vector<PageRef> Pages(int r) {
  std::vector<PageRef> p;
  for (int i = 0; i < 8; ++i) p.push_back(PageRef{1 + 8 * r + i, 0});
  return p;
}

StepRequest Request(int64_t id, int64_t start, int n, bool want, const std::vector<PageRef>* pages) {
  StepRequest s;
  s.request = id;
  s.start_position = start;
  for (int i = 0; i < n; ++i) s.tokens.push_back(static_cast<int32_t>((7 * id + 3 * i) % 97));
  s.pages = pages;
  s.want_token = want;
  return s;
}

// Runs a first step, then the compared mixed step; returns its differences.
std::string RunAndCompare(const SliceConfig& slice) {
  auto backend = CpuBackend::Create(slice, /*num_pages=*/64, /*page_size=*/4);
  if (!backend.ok()) return "backend: " + backend.status().message();
  const std::vector<PageRef> a = Pages(0), b = Pages(1), c = Pages(2);
  std::vector<int32_t> next;
  Status st = (*backend)->Forward({Request(0, 0, 10, true, &a), Request(1, 0, 6, false, &b)},
                                  nullptr, &next);
  if (!st.ok()) return "step 1: " + st.message();
  // Decode of request 0, request 1's chunk after its 6 cached tokens,
  // request 2's whole prompt; every request samples (one logits row each).
  st = (*backend)->Forward(
      {Request(0, 10, 1, true, &a), Request(1, 6, 5, true, &b), Request(2, 0, 7, true, &c)},
      nullptr, &next);
  if (!st.ok()) return "step 2: " + st.message();
  models::BatchShape shape;
  shape.decode_context = {11};
  shape.prefill = {{5, 6}, {7, 0}};
  std::vector<Op> priced;
  models::BuildStepOps(*slice.program, shape, &priced);
  auto weights = MakeSliceWeights(slice);
  if (!weights.ok()) return "weights: " + weights.status().message();
  return Compare(priced, (*backend)->last_visits(), slice.layers) +
         CompareOpTimes(priced, (*backend)->last_op_times(), (*backend)->last_visits()) +
         CompareWeights(slice, *weights);
}

TEST(ProgramEquality, PricerAndCpuBackendRunTheSameOpsWithTheSameShapes) {
  int checked = 0;
  for (const std::string& name : models::ShippedModelNames()) {
    auto card = models::LoadModelCard(name);
    ASSERT_TRUE(card.ok()) << card.status().message();
    for (int tp : {1, 2, 4, 8}) {
      if (card->num_heads % tp != 0) continue;
      for (const std::string weights : {"default", "fp8", "int4"}) {
        for (models::Dtype kv : {models::Dtype::kBf16, models::Dtype::kFp8E4m3}) {
          models::PrecisionChoice choice;
          choice.weights = weights;
          choice.kv_cache = kv;
          // Three layers: one dense and two MoE layers, and with IndexShare
          // a fresh indexer layer followed by two that reuse it.
          auto slice = MakeSliceConfig(*card, tp, std::min(3, card->num_layers), "small", choice, 3);
          if (!slice.ok()) continue;  // a format the engine has no GEMM for
          EXPECT_EQ(RunAndCompare(*slice), "")
              << name << " tp" << tp << " weights " << weights << " kv " << models::DtypeName(kv);
          ++checked;
        }
      }
    }
  }
  EXPECT_GE(checked, 11 * 4 * 2);  // every card at least at two TPs, two KV formats
}

// Cards whose layers are not all alike, imported from their Hugging Face
// configs: Qwen3-Next's linear layers and full layer, gpt-oss's sliding and
// full layers, Llama 4's chunked local and global layers (four layers each;
// small dims shrink the window to 8 tokens, so the step's contexts cross it).
TEST(ProgramEquality, HybridCardsRunTheSameOpsToo) {
  int checked = 0;
  for (const char* name :
       {"qwen3-next-80b-a3b", "gpt-oss-120b", "llama-4-scout-17b-16e-instruct"}) {
    auto card = models::LoadModelCard(std::string(HF_TEST_DATA) + "/" + name);
    ASSERT_TRUE(card.ok()) << card.status().message();
    for (int tp : {1, 2}) {
      for (const std::string weights : {"default", "fp8"}) {
        models::PrecisionChoice choice;
        choice.weights = weights;
        auto slice = MakeSliceConfig(*card, tp, 4, "small", choice, 3);
        if (!slice.ok()) continue;  // gpt-oss's MXFP4: no engine GEMM
        EXPECT_EQ(RunAndCompare(*slice), "") << name << " tp" << tp << " weights " << weights;
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 3 * 2);
}

// The comparison catches what it is for: a skipped op, a reordered one, a
// changed shape.
TEST(ProgramEquality, ASkippedReorderedOrReshapedOpIsReported) {
  auto card = models::LoadModelCard("glm-5.2");
  ASSERT_TRUE(card.ok());
  auto slice = MakeSliceConfig(*card, 8, 2, "small", models::PrecisionChoice{}, 3);
  ASSERT_TRUE(slice.ok()) << slice.status().message();
  auto backend = CpuBackend::Create(*slice, 64, 4);
  ASSERT_TRUE(backend.ok());
  const std::vector<PageRef> a = Pages(0);
  std::vector<int32_t> next;
  ASSERT_TRUE((*backend)->Forward({Request(0, 0, 9, true, &a)}, nullptr, &next).ok());
  models::BatchShape shape;
  shape.prefill = {{9, 0}};
  std::vector<Op> priced;
  models::BuildStepOps(*slice->program, shape, &priced);
  const std::vector<CpuOpVisit> visits = (*backend)->last_visits();
  ASSERT_EQ(Compare(priced, visits, slice->layers), "");
  const StepOpTimes times = (*backend)->last_op_times();
  ASSERT_EQ(CompareOpTimes(priced, times, visits), "");
  // A renamed op id, or one the step did not time, is reported too.
  StepOpTimes renamed = times;
  renamed.ops[1].id += "_renamed";
  EXPECT_NE(CompareOpTimes(priced, renamed, visits), "");
  StepOpTimes dropped = times;
  dropped.ops.pop_back();
  EXPECT_NE(CompareOpTimes(priced, dropped, visits), "");
  std::vector<CpuOpVisit> skipped = visits;
  skipped.erase(skipped.begin() + 3);
  EXPECT_NE(Compare(priced, skipped, slice->layers), "");
  std::vector<CpuOpVisit> swapped = visits;
  std::swap(swapped[2], swapped[3]);
  EXPECT_NE(Compare(priced, swapped, slice->layers), "");
  std::vector<CpuOpVisit> reshaped = visits;
  for (CpuOpVisit& v : reshaped) {
    if (v.id == "attn.o_proj") v.k += 1;
  }
  EXPECT_NE(Compare(priced, reshaped, slice->layers), "");
}

// The weights comparison catches a missing op's weights, a reshaped one and
// weights no op reads.
TEST(ProgramEquality, MissingOrReshapedWeightsAreReported) {
  auto card = models::LoadModelCard("glm-5.2");
  ASSERT_TRUE(card.ok());
  auto slice = MakeSliceConfig(*card, 8, 2, "small", models::PrecisionChoice{}, 3);
  ASSERT_TRUE(slice.ok()) << slice.status().message();
  auto weights = MakeSliceWeights(*slice);
  ASSERT_TRUE(weights.ok()) << weights.status().message();
  ASSERT_EQ(CompareWeights(*slice, *weights), "");
  {
    SliceWeights w = *weights;
    auto o_proj = std::make_shared<OpWeights>(*w.Find(0, models::op_ids::kOProj));
    o_proj->gemm.k += 1;
    w.Set(0, models::op_ids::kOProj, o_proj);
    EXPECT_NE(CompareWeights(*slice, w).find("attn.o_proj layer 0: k"), std::string::npos)
        << CompareWeights(*slice, w);
  }
  {
    SliceWeights w = *weights;
    auto norm = std::make_shared<OpWeights>(*w.Find(1, models::op_ids::kNormInput));
    norm->norm.pop_back();
    w.Set(1, models::op_ids::kNormInput, norm);
    EXPECT_NE(CompareWeights(*slice, w).find("norm.input layer 1: norm"), std::string::npos);
  }
  {
    SliceWeights w = *weights;
    w.ReleaseLayer(1);
    EXPECT_NE(CompareWeights(*slice, w).find("no weights: norm.input layer 1"), std::string::npos);
  }
  {
    SliceWeights w = *weights;
    // IndexShare: layer 1 reuses layer 0's top-k and holds no indexer.
    w.Set(1, models::op_ids::kIndexerWk, std::make_shared<OpWeights>());
    EXPECT_NE(CompareWeights(*slice, w).find("weights for no op: attn.indexer.wk layer 1"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace capplan::engine
