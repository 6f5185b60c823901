#include "hw/formats.h"

#include <cstdio>
#include <cstdlib>

#include "common/atomic_file.h"
#include "common/data_path.h"
#include "common/did_you_mean.h"
#include "common/json_util.h"
#include "hw/profile.h"

namespace capplan::hw {

namespace {

// The rows code names, in FormatId order.
constexpr const char* kNamedRows[] = {"bf16", "fp16", "fp32", "fp8", "int4"};

constexpr MathRate kRates[] = {MathRate::kBf16, MathRate::kFp8, MathRate::kFp4, MathRate::kFp32};

// Reads a format name that must already be a row (scale formats, activations).
Status ReadRowName(JsonObject& o, std::string_view key, const FormatTable& t, FormatId* out) {
  std::string s;
  CAPPLAN_RETURN_IF_ERROR(o.Get(key, &s, true));
  auto id = t.Find(s);
  if (!id.ok()) return o.Error(key, id.status().message());
  *out = *id;
  return Status::Ok();
}

Status ReadScale(JsonObject& o, const FormatTable& t, ScaleLayout* s) {
  CAPPLAN_RETURN_IF_ERROR(o.CheckObject());
  CAPPLAN_RETURN_IF_ERROR(o.Get("granularity", &s->granularity, true));
  CAPPLAN_RETURN_IF_ERROR(
      o.CheckOneOf("granularity", s->granularity,
                                         {"tensor", "channel", "block", "group", "token_head"}));
  CAPPLAN_RETURN_IF_ERROR(o.Get("block_rows", &s->block_rows, s->granularity == "block"));
  CAPPLAN_RETURN_IF_ERROR(o.Get("block_cols", &s->block_cols, s->granularity == "block"));
  CAPPLAN_RETURN_IF_ERROR(o.Get("group_size", &s->group_size, s->granularity == "group"));
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("group_size", s->group_size, 0, 65536));
  if (o.Has("format")) CAPPLAN_RETURN_IF_ERROR(ReadRowName(o, "format", t, &s->format));
  CAPPLAN_RETURN_IF_ERROR(o.Get("zero_point", &s->zero_point));
  CAPPLAN_RETURN_IF_ERROR(o.Get("fp32_tensor_scales", &s->fp32_tensor_scales));
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("fp32_tensor_scales", s->fp32_tensor_scales, 0, 8));
  return o.Finish();
}

Status ReadMath(JsonObject& o, NumberFormat* f) {
  CAPPLAN_RETURN_IF_ERROR(o.CheckObject());
  const std::vector<std::string>& archs = KnownArchitectures();
  f->math.assign(archs.size(), MathRate::kNone);
  std::vector<std::string> rates;
  for (MathRate r : kRates) rates.push_back(MathRateName(r));
  for (size_t a = 0; a < archs.size(); ++a) {
    std::string rate;
    CAPPLAN_RETURN_IF_ERROR(o.Get(archs[a], &rate));
    if (rate.empty()) continue;
    CAPPLAN_RETURN_IF_ERROR(o.CheckOneOf(archs[a], rate, rates));
    for (MathRate r : kRates) {
      if (rate == MathRateName(r)) f->math[a] = r;
    }
  }
  return o.Finish();
}

// The fields a row may take from its `like` row when it does not say them.
void Inherit(const NumberFormat& base, const JsonObject& o, NumberFormat* f) {
  f->family = base.id;
  if (!o.Has("math")) f->math = base.math;
  if (!o.Has("dequantize")) f->dequantize = base.dequantize;
  if (!o.Has("activations")) f->activations = base.activations;
  if (!o.Has("gemm_class")) f->gemm_class = base.gemm_class;
  if (!o.Has("grouped_gemm_class")) f->grouped_gemm_class = base.grouped_gemm_class;
  if (!o.Has("kernel_selector")) f->kernel_selector = base.kernel_selector;
}

Status ReadOps(JsonObject& o, NumberFormat* f) {
  std::vector<std::string> ops;
  CAPPLAN_RETURN_IF_ERROR(o.Get("ops", &ops, true));
  for (const std::string& op : ops) {
    CAPPLAN_RETURN_IF_ERROR(o.CheckOneOf("ops", op, {"weights", "activations", "kv"}));
    f->weights |= op == "weights";
    f->activation_ops |= op == "activations";
    f->kv |= op == "kv";
  }
  return Status::Ok();
}

// The architectures that run a format without its tensor cores, and the
// row's variant there: dequantized, at its activations' rate and classes.
Status ReadDequantizedOn(JsonObject& o, FormatTable* t, NumberFormat* f) {
  CAPPLAN_RETURN_IF_ERROR(o.CheckObject());
  std::vector<std::string> archs;
  CAPPLAN_RETURN_IF_ERROR(o.Get("architectures", &archs, true));
  NumberFormat v = *f;
  v.dequantize = true;
  v.dequantized_on.clear();
  CAPPLAN_RETURN_IF_ERROR(ReadRowName(o, "activations", *t, &v.activations));
  CAPPLAN_RETURN_IF_ERROR(o.Get("gemm_class", &v.gemm_class, true));
  CAPPLAN_RETURN_IF_ERROR(o.Get("grouped_gemm_class", &v.grouped_gemm_class, true));
  CAPPLAN_RETURN_IF_ERROR(o.Get("source", &v.source, true));
  f->dequantized_on.assign(KnownArchitectures().size(), false);
  t->variant_of.resize(t->rows.size());
  t->variant_of[static_cast<size_t>(f->id)].assign(KnownArchitectures().size(), -1);
  t->variants.push_back(v);
  for (const std::string& a : archs) {
    CAPPLAN_RETURN_IF_ERROR(o.CheckOneOf("architectures", a, KnownArchitectures()));
    const size_t i = static_cast<size_t>(ArchitectureIndex(a));
    if (f->math[i] == MathRate::kNone) {
      return o.Error("architectures", a + " has no `math` rate in this row; give it the rate "
                                          "the dequantized values run at");
    }
    f->dequantized_on[i] = true;
    t->variant_of[static_cast<size_t>(f->id)][i] = static_cast<int>(t->variants.size()) - 1;
  }
  return o.Finish();
}

// The second pass over a row: fields that name other rows (all rows are
// known by then).
Status ReadRow(JsonObject& o, FormatTable* t, NumberFormat* f) {
  if (o.Has("like")) {
    FormatId base = FormatId::kBf16;
    CAPPLAN_RETURN_IF_ERROR(ReadRowName(o, "like", *t, &base));
    if (t->Row(base).family != base) return o.Error("like", "must name a row without `like`");
    Inherit(t->Row(base), o, f);
  }
  CAPPLAN_RETURN_IF_ERROR(o.Get("element", &f->element, true));
  CAPPLAN_RETURN_IF_ERROR(o.Get("bits", &f->bits, true));
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("bits", f->bits, 1, 64));
  o.Touch("aliases");
  CAPPLAN_RETURN_IF_ERROR(ReadOps(o, f));
  if (o.Has("scale")) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject s, o.Child("scale"));
    CAPPLAN_RETURN_IF_ERROR(ReadScale(s, *t, &f->scale));
  }
  if (o.Has("math")) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject m, o.Child("math"));
    CAPPLAN_RETURN_IF_ERROR(ReadMath(m, f));
  } else if (f->math.empty()) {
    f->math.assign(KnownArchitectures().size(), MathRate::kNone);
  }
  CAPPLAN_RETURN_IF_ERROR(o.Get("dequantize", &f->dequantize));
  if (o.Has("activations")) CAPPLAN_RETURN_IF_ERROR(ReadRowName(o, "activations", *t, &f->activations));
  CAPPLAN_RETURN_IF_ERROR(o.Get("gemm_class", &f->gemm_class));
  CAPPLAN_RETURN_IF_ERROR(o.Get("grouped_gemm_class", &f->grouped_gemm_class));
  CAPPLAN_RETURN_IF_ERROR(o.Get("kernel_selector", &f->kernel_selector));
  if (f->weights && (f->gemm_class.empty() || f->grouped_gemm_class.empty() ||
                     f->kernel_selector.empty())) {
    return o.Error("gemm_class", "a weight format needs gemm_class, grouped_gemm_class and "
                                 "kernel_selector (or `like` a row that has them)");
  }
  if (o.Has("kv")) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject kv, o.Child("kv"));
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject s, kv.Child("scale", true));
    CAPPLAN_RETURN_IF_ERROR(ReadScale(s, *t, &f->kv_scale));
    CAPPLAN_RETURN_IF_ERROR(kv.Get("engines", &f->kv_engines));
    std::string kv_source;
    CAPPLAN_RETURN_IF_ERROR(kv.Get("source", &kv_source, true));
    CAPPLAN_RETURN_IF_ERROR(kv.Finish());
    f->has_kv_layout = true;
  }
  CAPPLAN_RETURN_IF_ERROR(o.Get("storage", &f->storage, true));
  CAPPLAN_RETURN_IF_ERROR(o.Get("source", &f->source, true));
  if (o.Has("dequantized_on")) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject d, o.Child("dequantized_on"));
    CAPPLAN_RETURN_IF_ERROR(ReadDequantizedOn(d, t, f));
  }
  return o.Finish();
}

// First pass: ids for every row. The rows code names take their FormatId
// values; the others follow in the order the parser yields them.
Status NameRows(JsonObject& rows, FormatTable* t) {
  auto add = [t](const std::string& name) {
    NumberFormat f;
    f.name = name;
    f.id = static_cast<FormatId>(t->rows.size());
    f.family = f.id;
    t->rows.push_back(f);
    t->names.emplace_back(name, f.id);
  };
  for (const char* named : kNamedRows) {
    if (!rows.Has(named)) return rows.Error(named, "required row is missing (hw::FormatId names it)");
    add(named);
  }
  for (const auto& [name, value] : rows.json().items()) {
    (void)value;
    if (t->Find(name).ok()) continue;
    if (t->rows.size() >= 250) return rows.Error(name, "more than 250 formats");
    add(name);
  }
  return Status::Ok();
}

Status ReadAliases(JsonObject& rows, FormatTable* t) {
  for (NumberFormat& f : t->rows) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject o, rows.Child(f.name, true));
    std::vector<std::string> aliases;
    CAPPLAN_RETURN_IF_ERROR(o.Get("aliases", &aliases));
    for (const std::string& a : aliases) {
      if (t->Find(a).ok()) return o.Error("aliases", "'" + a + "' names another row already");
      t->names.emplace_back(a, f.id);
    }
  }
  return Status::Ok();
}

Status ReadChoices(JsonObject& root, FormatTable* t) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject wc, root.Child("weight_choices", true));
  wc.Touch("comment");
  CAPPLAN_RETURN_IF_ERROR(wc.Get("names", &t->weight_choices, true));
  for (const std::string& n : t->weight_choices) {
    auto id = t->Find(n);
    if (!id.ok()) return wc.Error("names", id.status().message());
    if (!t->Row(*id).weights) return wc.Error("names", n + " does not list weights in its ops");
  }
  CAPPLAN_RETURN_IF_ERROR(wc.Finish());
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject kv, root.Child("kv_cache", true));
  CAPPLAN_RETURN_IF_ERROR(kv.Get("names", &t->kv_choices, true));
  for (const std::string& n : t->kv_choices) {
    auto id = t->Find(n);
    if (!id.ok()) return kv.Error("names", id.status().message());
    if (!t->Row(*id).kv) return kv.Error("names", n + " does not list kv in its ops");
  }
  CAPPLAN_RETURN_IF_ERROR(kv.Get("dsa_fp8_scale_block", &t->dsa_fp8_scale_block, true));
  CAPPLAN_RETURN_IF_ERROR(kv.CheckRange("dsa_fp8_scale_block", t->dsa_fp8_scale_block, 1, 1 << 20));
  CAPPLAN_RETURN_IF_ERROR(kv.Get("dsa_fp8_scale_bytes", &t->dsa_fp8_scale_bytes, true));
  CAPPLAN_RETURN_IF_ERROR(ReadRowName(kv, "dsa_fp8_rope_dtype", *t, &t->dsa_fp8_rope_dtype));
  CAPPLAN_RETURN_IF_ERROR(ReadRowName(kv, "indexer_key_dtype", *t, &t->indexer_key_dtype));
  CAPPLAN_RETURN_IF_ERROR(kv.Get("indexer_scale_block", &t->indexer_scale_block, true));
  CAPPLAN_RETURN_IF_ERROR(kv.CheckRange("indexer_scale_block", t->indexer_scale_block, 1, 1 << 20));
  CAPPLAN_RETURN_IF_ERROR(kv.Get("indexer_scale_bytes", &t->indexer_scale_bytes, true));
  kv.Touch("dsa_fp8_source");
  kv.Touch("indexer_source");
  return kv.Finish();
}

}  // namespace

const char* MathRateName(MathRate r) {
  switch (r) {
    case MathRate::kBf16: return "bf16";
    case MathRate::kFp8: return "fp8";
    case MathRate::kFp4: return "fp4";
    case MathRate::kFp32: return "fp32";
    case MathRate::kNone: break;
  }
  return "none";
}

const NumberFormat& FormatTable::RowOn(FormatId id, int arch) const {
  const size_t r = static_cast<size_t>(id);
  if (arch < 0 || r >= variant_of.size() || variant_of[r].empty()) return Row(id);
  const int v = variant_of[r][static_cast<size_t>(arch)];
  return v < 0 ? Row(id) : variants[static_cast<size_t>(v)];
}

Result<FormatId> FormatTable::Find(std::string_view name) const {
  for (const auto& [n, id] : names) {
    if (n == name) return id;
  }
  return Status::Usage("unknown number format '" + EchoValue(std::string(name)) + "'" +
                       DidYouMean(std::string(name), Names()));
}

std::vector<std::string> FormatTable::Names() const {
  std::vector<std::string> out;
  for (const NumberFormat& f : rows) out.push_back(f.name);
  return out;
}

Result<FormatTable> ParseFormatTable(const std::string& json_text, const std::string& origin) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ParseJson(json_text, origin));
  JsonObject root(doc, origin, "");
  CAPPLAN_RETURN_IF_ERROR(root.CheckObject());
  root.Touch("format");
  root.Touch("comment");
  FormatTable t;
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject rows, root.Child("formats", true));
  CAPPLAN_RETURN_IF_ERROR(NameRows(rows, &t));
  CAPPLAN_RETURN_IF_ERROR(ReadAliases(rows, &t));
  for (NumberFormat& f : t.rows) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject o, rows.Child(f.name, true));
    CAPPLAN_RETURN_IF_ERROR(ReadRow(o, &t, &f));
  }
  CAPPLAN_RETURN_IF_ERROR(rows.Finish());
  t.variant_of.resize(t.rows.size());
  CAPPLAN_RETURN_IF_ERROR(ReadChoices(root, &t));
  CAPPLAN_RETURN_IF_ERROR(root.Finish());
  return t;
}

Result<const FormatTable*> GetFormatTable() {
  static const Result<FormatTable> kTable = []() -> Result<FormatTable> {
    const std::string path = DataPath("hw/formats.json");
    CAPPLAN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    return ParseFormatTable(text, path);
  }();
  if (!kTable.ok()) return kTable.status();
  return &kTable.value();
}

const FormatTable& Formats() {
  auto t = GetFormatTable();
  if (!t.ok()) {
    std::fprintf(stderr, "capplan: %s\n", t.status().message().c_str());
    std::abort();
  }
  return **t;
}

const char* FormatName(FormatId id) {
  auto t = GetFormatTable();
  if (!t.ok() || static_cast<size_t>(id) >= (*t)->rows.size()) return "?";
  return (*t)->Row(id).name.c_str();
}

Result<FormatId> ParseFormat(std::string_view name) {
  CAPPLAN_ASSIGN_OR_RETURN(const FormatTable* t, GetFormatTable());
  return t->Find(name);
}

int ArchitectureIndex(std::string_view architecture) {
  const std::vector<std::string>& archs = KnownArchitectures();
  for (size_t i = 0; i < archs.size(); ++i) {
    if (archs[i] == architecture) return static_cast<int>(i);
  }
  return -1;
}

MathRate RateOn(FormatId id, std::string_view architecture) {
  const int a = ArchitectureIndex(architecture);
  if (a < 0) return MathRate::kNone;
  return Formats().Row(id).math[static_cast<size_t>(a)];
}

std::string ArchitecturesRunning(FormatId id) {
  const std::vector<std::string>& archs = KnownArchitectures();
  const NumberFormat& f = Formats().Row(id);
  std::string out;
  for (size_t a = 0; a < archs.size(); ++a) {
    if (f.math[a] != MathRate::kNone) out += (out.empty() ? "" : ", ") + archs[a];
  }
  return out.empty() ? "none" : out;
}

}  // namespace capplan::hw
