#include "models/commands.h"
namespace capplan {
void RegisterModelsCommands(CommandTable*) {}
}  // namespace capplan
