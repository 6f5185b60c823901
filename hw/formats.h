// Number formats as data: one table (hw/formats.json) owns every fact about
// a format: element bits, scale layout, checkpoint storage, the tensor-core
// rate its GEMMs run at on each GPU architecture (or that it cannot run
// there), the efficiency classes and kernel selector it uses, and which ops
// accept it. Models, the roofline, calibration and the kernels all read it,
// so a new format is a new row (plus its kernel entries), not a new enum.
#ifndef CAPPLAN_HW_FORMATS_H_
#define CAPPLAN_HW_FORMATS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace capplan::hw {

// A row of the format table. The named values are the rows code refers to
// by name (the table must hold them, in this order, first); every other row
// gets the next id in table order, so values past kInt4 are valid too.
enum class FormatId : uint8_t { kBf16 = 0, kFp16, kFp32, kFp8E4m3, kInt4 };

// The tensor-core rate a format's math runs at: which compute.*_flops_per_s
// of a hardware profile prices it.
enum class MathRate : uint8_t { kNone, kBf16, kFp8, kFp4, kFp32 };
const char* MathRateName(MathRate r);  // "bf16", "fp8", "fp4", "fp32", "none"

struct ScaleLayout {
  // "" (none), "tensor", "channel", "block" (block_rows x block_cols),
  // "group" (group_size elements along K) or, for a KV cache, "token_head"
  // (one scale per token and KV head, for each of K and V).
  std::string granularity;
  int block_rows = 0, block_cols = 0;
  int group_size = 0;
  FormatId format = FormatId::kFp32;  // the scale's own format
  bool zero_point = false;            // a zero point beside each scale
  // FP32 scalars stored per tensor beside the block scales (NVFP4:
  // weight_scale_2 and input_scale).
  int fp32_tensor_scales = 0;
};

struct NumberFormat {
  std::string name;
  FormatId id = FormatId::kBf16;
  FormatId family = FormatId::kBf16;  // its `like` row, or itself
  std::string element;                // "bf16", "e4m3", "e2m1", "int4", ...
  int bits = 0;
  ScaleLayout scale;                  // weights (the re-quantization recipe)
  bool has_kv_layout = false;
  ScaleLayout kv_scale;               // as a KV cache
  std::vector<std::string> kv_engines;  // engines with this KV format; empty: every engine
  std::vector<MathRate> math;         // by hw::KnownArchitectures() index
  bool dequantize = false;            // widened in registers before the MMA
  // Architectures without this format's tensor cores whose engines still run
  // it, dequantized in registers (Marlin-class kernels): there the row
  // prices as its `dequantized_on` variant (FormatTable::RowOn).
  std::vector<bool> dequantized_on;   // by hw::KnownArchitectures() index
  FormatId activations = FormatId::kBf16;
  std::string gemm_class, grouped_gemm_class, kernel_selector;
  bool weights = false, activation_ops = false, kv = false;
  std::string storage, source;
};

struct FormatTable {
  std::vector<NumberFormat> rows;  // index = FormatId value
  std::vector<std::pair<std::string, FormatId>> names;  // names and aliases
  std::vector<std::string> weight_choices;  // besides "default"
  std::vector<std::string> kv_choices;
  // DSA (sparse-attention) FP8 KV layout and indexer keys: per-model-family
  // layouts the backends fix, kept with the formats they use.
  int dsa_fp8_scale_block = 0, dsa_fp8_scale_bytes = 0;
  FormatId dsa_fp8_rope_dtype = FormatId::kBf16;
  FormatId indexer_key_dtype = FormatId::kFp8E4m3;
  int indexer_scale_block = 0, indexer_scale_bytes = 0;

  const NumberFormat& Row(FormatId id) const { return rows[static_cast<size_t>(id)]; }
  // The row as it runs on architecture index `arch` (-1: unknown, the row
  // itself): its `dequantized_on` variant where it has one for `arch`.
  const NumberFormat& RowOn(FormatId id, int arch) const;
  // Variants of rows on the architectures that dequantize them; `variant_of`
  // maps (row, architecture) to an index into it, -1 for none.
  std::vector<NumberFormat> variants;
  std::vector<std::vector<int>> variant_of;
  // A name or alias; Usage error with a "did you mean" otherwise.
  Result<FormatId> Find(std::string_view name) const;
  // Bytes of `n` elements (rounded up to whole bytes), scales excluded.
  int64_t Bytes(FormatId id, int64_t n) const { return (n * Row(id).bits + 7) / 8; }
  // Row names in table order, for messages.
  std::vector<std::string> Names() const;
};

// Parses the table's text (exposed for tests).
Result<FormatTable> ParseFormatTable(const std::string& json_text, const std::string& origin);
// DataPath("hw/formats.json"), loaded once (thread-safe static). A broken
// data file is reported on every call.
Result<const FormatTable*> GetFormatTable();
// The loaded table; a broken table aborts with its message (for code past a
// point that already checked GetFormatTable(): pricing loops, names).
const FormatTable& Formats();

const char* FormatName(FormatId id);
Result<FormatId> ParseFormat(std::string_view name);

// Index of `architecture` in KnownArchitectures(); -1 when unknown.
int ArchitectureIndex(std::string_view architecture);
// The rate `id`'s math runs at on `architecture` (kNone: it cannot run there).
MathRate RateOn(FormatId id, std::string_view architecture);
// The architectures a format runs on, "sm100, sm103", for messages.
std::string ArchitecturesRunning(FormatId id);

}  // namespace capplan::hw

#endif  // CAPPLAN_HW_FORMATS_H_
