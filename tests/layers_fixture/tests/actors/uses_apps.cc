// Not a test: a tests/actors/ file including apps/, which check_layers must reject.
#include "apps/models.h"
