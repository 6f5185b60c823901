// One measured case of each attention-side kernel (used by
// attention_suites.cc). Each Run*Case either times the CUDA kernel (and
// checks it against the CPU reference when the case is small enough for the
// CPU) or, with SuiteOptions::dry_run, times the CPU reference itself.
#ifndef CAPPLAN_KERNELS_ATTENTION_SUITE_CASES_H_
#define CAPPLAN_KERNELS_ATTENTION_SUITE_CASES_H_

#include <string>
#include <vector>

#include "common/status.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/attention_sweep.h"
#include "kernels/attention/paged_kv.h"
#include "kernels/harness/measurement.h"
#include "kernels/harness/suite.h"

namespace capplan::kernels {

struct AttnCaseSpec {
  std::string kernel;
  std::string variant;
  AttnHeadShape heads;
  KvDtype dtype = KvDtype::kBf16;
  int page = 16;
  int batch = 1;  // decode rows; append: new tokens; verify: requests
  int ctx = 0;    // tokens per row (prefill: total incl. the chunk)
  int chunk = 0;  // prefill: new tokens
  std::string Label() const;
};

struct ElementwiseCaseSpec {
  std::string op;  // rmsnorm | silu_mul | rope_gqa | rope_mla
  int n = 0;       // tokens
  int width = 0;   // hidden / intermediate / head dim
  std::string Label() const { return op + "_n" + std::to_string(n) + "_w" + std::to_string(width); }
};

Status RunAttentionCase(const SuiteOptions& o, const AttnCaseSpec& s, MeasurementSink* sink);
Status RunAppendCase(const SuiteOptions& o, const AttnCaseSpec& s, MeasurementSink* sink);
Status RunVerifyCase(const SuiteOptions& o, const AttnCaseSpec& s, MeasurementSink* sink);
Status RunElementwiseCase(const SuiteOptions& o, const ElementwiseCaseSpec& s,
                          MeasurementSink* sink);

// Shared pieces (suite_cases.cc) used by the GPU paths too.
AttentionProblem ProblemFor(const AttnCaseSpec& s, int rows, int max_pages, float kv_scale);
// Decode: batch rows of ctx tokens; prefill: one sequence, `chunk` rows.
void RowsFor(const AttnCaseSpec& s, std::vector<int32_t>* lens, std::vector<int32_t>* row_seq,
             std::vector<int32_t>* row_ctx);
std::vector<int32_t> RandomTopk(const AttentionProblem& p, const std::vector<int32_t>& row_ctx,
                                uint32_t seed);
MeasurementRecord AttentionRecord(const AttnCaseSpec& s, const AttentionProblem& p,
                                  const std::vector<int32_t>& row_ctx, int distinct_rows);
MeasurementRecord AppendRecord(const AttnCaseSpec& s);
MeasurementRecord VerifyRecord(const AttnCaseSpec& s, int max_pages);
MeasurementRecord ElementwiseRecord(const ElementwiseCaseSpec& s);
// The verification case's clean state: batch sequences of ctx tokens on a
// random page table, and a tag array whose every used page matches it.
PageTable CleanVerifyCase(const AttnCaseSpec& s, uint32_t seed, std::vector<KvPageTag>* tags);
// FP8 per-tensor scale used by every FP8 case: N(0,1) data, 4.5 sigma at 448.
inline float SuiteFp8Scale() { return 4.5f / 448.0f; }

#ifdef CAPPLAN_HAVE_CUDA
Status RunAttentionCaseGpu(const SuiteOptions& o, const AttnCaseSpec& s, MeasurementSink* sink);
Status RunAppendCaseGpu(const SuiteOptions& o, const AttnCaseSpec& s, MeasurementSink* sink);
Status RunVerifyCaseGpu(const SuiteOptions& o, const AttnCaseSpec& s, MeasurementSink* sink);
Status RunElementwiseCaseGpu(const SuiteOptions& o, const ElementwiseCaseSpec& s,
                             MeasurementSink* sink);
#endif

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_ATTENTION_SUITE_CASES_H_
