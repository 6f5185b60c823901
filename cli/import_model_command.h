// `capplan import-model`: a model card from a Hugging Face model folder.
#ifndef CAPPLAN_CLI_IMPORT_MODEL_COMMAND_H_
#define CAPPLAN_CLI_IMPORT_MODEL_COMMAND_H_

#include <string>
#include <vector>

#include "common/cli.h"

namespace capplan::cli {

Status RunImportModel(const std::vector<std::string>& args, CommandContext& ctx);

}  // namespace capplan::cli

#endif  // CAPPLAN_CLI_IMPORT_MODEL_COMMAND_H_
