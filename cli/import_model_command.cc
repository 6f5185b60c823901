// `capplan import-model PATH [--out CARD.json] [--name NAME]`: reads a model
// folder as published (config.json, its quantization config, the safetensors
// index when present), writes the card and prints what it holds.
#include "cli/import_model_command.h"

#include <cmath>
#include <cstdio>
#include <ostream>

#include "common/atomic_file.h"
#include "common/units.h"
#include "models/card.h"
#include "models/hf_import.h"

namespace po = boost::program_options;

namespace capplan::cli {

namespace {


std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

void PrintSummary(const models::ModelCard& card, const models::HfImport& imp,
                  const models::CardSummary& s, std::ostream& out) {
  out << card.name << ": " << imp.model_type
      << (imp.quant_method.empty() ? "" : ", quantization " + imp.quant_method) << "\n";
  out << "  parameters: " << Fixed(s.params_total / 1e9, 2) << "B total, "
      << Fixed(s.params_active / 1e9, 2) << "B active per token (MTP layers excluded)\n";
  out << "  weights as shipped: " << Fixed(s.weight_bytes / kBytesPerGiB, 2) << " GiB (" << s.weight_bytes
      << " B)\n";
  for (const auto& [name, bytes] : s.component_bytes) {
    if (bytes == 0) continue;
    const std::string dtype = models::DtypeName(card.checkpoint.at(*models::ParseComponent(name)).dtype);
    out << "    " << name << " (" << dtype << "): " << Fixed(bytes / kBytesPerGiB, 3) << " GiB\n";
  }
  if (s.mtp_weight_bytes > 0) {
    out << "  MTP layers (not served): " << Fixed(s.mtp_weight_bytes / kBytesPerGiB, 2) << " GiB\n";
  }
  out << "  KV bytes per token (all layers, one GPU):";
  for (const auto& [dtype, bytes] : s.kv_bytes_per_token) out << " " << dtype << " " << bytes;
  out << "\n";
  if (imp.index_total_size) {
    const int64_t ckpt = s.weight_bytes + s.mtp_weight_bytes;
    const int64_t diff = *imp.index_total_size - ckpt;
    out << "  " << imp.index_path << ": total_size " << *imp.index_total_size << " B over "
        << imp.index_tensors << " tensors; the card's weights and MTP layers "
        << ckpt << " B (difference " << diff << " B, "
        << Fixed(100.0 * std::abs(double(diff)) / double(*imp.index_total_size), 3) << "%)\n";
  }
}

}  // namespace

Status RunImportModel(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description desc("capplan import-model PATH options");
  std::string path, out_path, name;
  desc.add_options()
      ("help,h", "show these options")
      ("path", po::value(&path), "a Hugging Face model folder (or its config.json): config.json, "
                                 "its quantization config, model.safetensors.index.json if present")
      ("out", po::value(&out_path), "write the card here (a capplan.model_card.v1 .json)")
      ("name", po::value(&name), "the card's name (default: the folder's name)");
  po::positional_options_description pos;
  pos.add("path", 1);
  po::variables_map vm;
  CAPPLAN_RETURN_IF_ERROR(ParseCommandLine("import-model", args, desc, &pos, &vm));
  if (vm.count("help")) {
    *ctx.out << "usage: capplan import-model PATH [--out CARD.json] [--name NAME]\n"
             << desc << "\narchitectures (model_type):";
    for (const std::string& t : models::HfKnownModelTypes()) *ctx.out << " " << t;
    *ctx.out << "\nquantization methods:";
    for (const std::string& m : models::HfKnownQuantMethods()) *ctx.out << " " << m;
    *ctx.out << "\n";
    return Status::Ok();
  }
  if (path.empty()) return Status::Usage("import-model: give the model folder (PATH)");
  CAPPLAN_ASSIGN_OR_RETURN(models::HfImport imp, models::ImportHfModel(path, name));
  CAPPLAN_ASSIGN_OR_RETURN(models::ModelCard card,
                           models::ParseModelCard(imp.card_json, path + " (imported)"));
  CAPPLAN_ASSIGN_OR_RETURN(models::CardSummary s, models::SummarizeCard(card));
  if (!out_path.empty()) {
    CAPPLAN_RETURN_IF_ERROR(WriteFileAtomic(out_path, imp.card_json));
    *ctx.err << "wrote " << out_path << "\n";
  }
  PrintSummary(card, imp, s, *ctx.out);
  return Status::Ok();
}

}  // namespace capplan::cli
