// A graph/ file that includes a runtime header: check_layers must reject it.
#include "actors/executor/parallel_executor.h"
