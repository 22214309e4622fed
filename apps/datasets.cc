#include "apps/datasets.h"
