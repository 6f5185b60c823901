#include "models/types.h"
