// Which kernel implementation an engine runs for an op: the engine profile
// (models/engines/<engine>.json, "kernels", per version) maps a selector --
// the op's kernel family and the number format that picks the kernel -- to
// an implementation name; the hardware profile prices that name with its own
// efficiency table (hw/profile.h KernelTable). Ops whose selector the engine
// does not name keep their efficiency class.
#ifndef CAPPLAN_MODELS_KERNEL_CHOICE_H_
#define CAPPLAN_MODELS_KERNEL_CHOICE_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "models/types.h"

namespace capplan::models {

enum class OpKind;  // models/ops.h

// The prefill batches an engine that names an absorbed MLA prefill kernel
// runs absorbed: those whose chunks' cached prefixes sum to `from` tokens or
// more and to fewer than `below` (0: no upper bound). The default is SGLang's
// Triton backend (absorbed when any request has a cached prefix); its FA3
// backend bounds the sum (models/engines/sglang.json).
struct MlaAbsorbedPrefix {
  int64_t from = 1;
  int64_t below = 0;
};

// Kernel families an engine chooses an implementation for. MoE experts and
// dense GEMMs are chosen by their weight format, attention by its KV format.
enum class KernelFamily {
  kMoe,
  // Experts sharded over EP ranks (ep > 1), where engines run other MoE
  // kernels than under TP; unnamed: the kMoe choice.
  kMoeEp,
  kDenseGemm,
  kAttentionDecode,
  kAttentionPrefill,
  kMlaDecode,
  kMlaPrefill,
  // Naming a kernel here also says the engine runs some prefill batches in
  // the absorbed form: those whose summed cached prefix lies in the engine's
  // range (MlaAbsorbedPrefix, ops_attention.cc).
  kMlaPrefillAbsorbed,
  kCount,
};
// The formats a selector names: the format rows' kernel_selector values
// (hw/formats.json), in row order: "bf16" (also FP16 and FP32), "fp8",
// "int4" (every INT4 group layout), "nvfp4", ...
const std::vector<std::string>& SelectorFormats();

// Ok, or an error naming `selector` as unknown with a did-you-mean.
Status CheckKernelSelector(const std::string& selector);

// Every selector the engine profile may name ("moe.int4", "mla_decode.fp8",
// ...), in a fixed order.
const std::vector<std::string>& KernelSelectors();

class KernelChoices {
 public:
  // `by_selector`: selector -> implementation name; an unknown selector is
  // an error naming it (did you mean).
  static Result<KernelChoices> FromSelectors(const std::map<std::string, std::string>& by_selector);

  // The implementation for an op of this kind whose selecting format
  // (weights for GEMMs, KV for attention) is `format`; "" when none is named
  // or the op kind has no kernel choice.
  std::string_view For(OpKind kind, Dtype format) const;
  // MoE experts under expert parallelism: the moe_ep choice, else For's.
  std::string_view ForMoeEp(Dtype format) const;

  bool empty() const { return empty_; }

 private:
  // [family][SelectorFormats() index]; empty until a selector is named.
  std::array<std::vector<std::string>, static_cast<int>(KernelFamily::kCount)> names_;
  bool empty_ = true;
};

}  // namespace capplan::models

#endif  // CAPPLAN_MODELS_KERNEL_CHOICE_H_
