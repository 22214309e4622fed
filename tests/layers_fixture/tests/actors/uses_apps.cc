// Not a test: check_layers must reject this file (a tests/actors/ source
// including apps/); tests/CMakeLists.txt runs it on this fixture.
#include "apps/models.h"
