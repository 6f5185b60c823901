#include "engine/commands.h"
namespace capplan {
void RegisterEngineCommands(CommandTable*) {}
}  // namespace capplan
