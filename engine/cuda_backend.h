// The CUDA backend: the same model slice as the CPU backend (same synthetic
// weights from MakeSliceWeights, same page tables), run through the Kernels
// libraries' launch wrappers on one GPU (only with CAPPLAN_HAVE_CUDA):
//
//   embedding gather            LaunchGatherRows (kernels/moe)
//   residual add + RMSNorm      LaunchFusedAddRmsNorm (kernels/attention)
//   projections, LM head        grouped GEMM, one group (kernels/gemm):
//                               BF16, FP8 128x128 blocks (activations 1x128),
//                               or W4A16 INT4
//   RoPE                        LaunchRope
//   KV append + tag stamping    LaunchAppendKv (always stamps: 16 B/token)
//   paged attention             LaunchPagedAttention (GQA, MLA absorbed, DSA
//                               top-k lists)
//   dense FFN and MoE           MoeCuda (a dense FFN is a one-expert MoE with
//                               every token routed to it at weight 1)
//   MLA W_UK/W_UV, strided      engine/cuda_glue.h (naive glue kernels)
//   RMSNorm, FP32 router GEMM,
//   DSA indexer + top-k
//
// Forward walks the slice's layer program (models/layer_program.h) op by op,
// one function per op as the CPU backend; a few ops run inside another's
// kernels here (cuda_backend_impl.h lists them).
//
// Host work inside a step: building and uploading the page table, MoE
// routing (router logits are computed on the GPU, copied back, routed with
// RouteCpu, and the permutation uploaded: MoeCuda's plan/run split), and the
// argmax over downloaded logits. Every iteration's time is measured with
// CUDA events around all of it.
//
// Numerics differ from the CPU backend where the kernels differ (see
// tests/engine/cuda_backend_test.cc for the tolerances): FP32 instead of
// double accumulation and a different summation order, a per-tensor FP8 KV
// scale (paged_kv.h) instead of the CPU backend's per-128-group dynamic
// scales, MLA's rope part stored FP8 with the latent when the KV cache is
// FP8, and the MoE combine rounded to BF16 before the residual add.
//
// batch_invariant (the default) fixes split-K and split-KV to 1 so a
// request's outputs do not depend on what shares its batch: the integrity
// self-test needs unaffected requests bit-identical across runs. serve-bench
// turns it off so the kernels' own split plans run.
#ifndef CAPPLAN_ENGINE_CUDA_BACKEND_H_
#define CAPPLAN_ENGINE_CUDA_BACKEND_H_

#ifdef CAPPLAN_HAVE_CUDA

#include <memory>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/slice_config.h"
#include "kernels/attention/paged_kv.h"

namespace capplan::engine {

struct CudaBackendOptions {
  int64_t max_step_tokens = 8192 + 64;  // most tokens one Forward carries
  bool batch_invariant = true;
};

class CudaBackend final : public EngineBackend {
 public:
  // Unavailable "no CUDA device: use --backend cpu" when no device is usable.
  static Result<std::unique_ptr<CudaBackend>> Create(const SliceConfig& config, int32_t num_pages,
                                                     int32_t page_size,
                                                     const CudaBackendOptions& options);
  ~CudaBackend() override;
  // Whether this backend has a function for every op of config's layer
  // program that a step can run (decode rows, a prefill chunk after a cached
  // prefix, a fresh one); Create refuses a program that it does not. Needs
  // no device.
  static Status CheckProgram(const SliceConfig& config);

  std::string name() const override { return "cuda"; }
  Status Forward(const std::vector<StepRequest>& batch, PageTags* tags,
                 std::vector<int32_t>* next_tokens) override;
  const std::vector<std::vector<float>>& last_logits() const override { return logits_; }
  void set_probe(LayerProbe probe) override { probe_ = std::move(probe); }
  void StartTimer() override;
  double StopTimerUs() override;
  // Per-iteration times by program op id: a CUDA event at each op's start
  // on the default stream; host work (page table, routing, sampling) in host_us.
  StepOpTimes last_op_times() const override;
  Result<std::unique_ptr<IntegrityTracker>> MakeTracker(const std::string& name,
                                                        int32_t num_pages) override;
  std::string gpu_name() const override;
  std::string driver_version() const override;
  std::string cuda_version() const override;

  // The verification batch: LaunchVerifyKvIntegrity over `pt` against the
  // device tag array the append kernel stamps; returns every mismatch.
  Result<std::vector<kernels::IntegrityMismatch>> VerifyPages(const kernels::PageTable& pt);
  int32_t page_size() const { return page_size_; }

 private:
  struct Impl;
  CudaBackend(std::unique_ptr<Impl> impl, int32_t page_size);
  std::unique_ptr<Impl> impl_;
  int32_t page_size_;
  std::vector<std::vector<float>> logits_;
  LayerProbe probe_;
};

}  // namespace capplan::engine

#endif  // CAPPLAN_HAVE_CUDA
#endif  // CAPPLAN_ENGINE_CUDA_BACKEND_H_
