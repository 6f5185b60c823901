#include "calibrate/commands.h"
namespace capplan {
void RegisterCalibrateCommands(CommandTable*) {}
}  // namespace capplan
