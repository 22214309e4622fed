// CAF outside actors/: check_layers must reject it.
#include <caf/all.hpp>
