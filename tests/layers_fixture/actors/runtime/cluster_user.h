// A layering violation for check_layers_rejects_violations.
#include "actors/cluster/cluster.h"
