// A layering violation for check_layers_rejects_violations.
#include <gloo/context.h>
