// A graph/ file that includes a runtime header: check_layers must reject it.
#include "actors/parallel_executor.h"
