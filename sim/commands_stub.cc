#include "sim/commands.h"
namespace capplan {
void RegisterSimCommands(CommandTable*) {}
}  // namespace capplan
