#include "report/commands.h"
namespace capplan {
void RegisterReportCommands(CommandTable*) {}
}  // namespace capplan
