// Fluid's elementwise broadcasting (filled in with the elementwise kernels).
#pragma once
