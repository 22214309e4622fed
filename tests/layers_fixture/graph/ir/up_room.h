// A layering violation for check_layers_rejects_violations.
#include "graph/builder/layers.h"
