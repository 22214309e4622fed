// check_layers must reject this: a test of actors/ including apps/.
#include "apps/models.h"
