#!/bin/sh
# Runs a test program under mpirun (ctest's MpiCommunicatorTest):
#   tests/mpirun_test.sh MPIRUN PROCESSES PROGRAM [ARGS...]
# As root too (CI's containers), and more processes than cores; shared
# memory without the single-copy path that needs ptrace rights a container
# may not grant (the tests check results, not speed). Under
# LeakSanitizer the ranks unwind malloc's stacks whole, so that OpenMPI's
# leaks at exit match tests/lsan.supp.
set -eu
mpirun="$1"
processes="$2"
shift 2
if [ -n "${LSAN_OPTIONS:-}" ]; then
  exec "$mpirun" --allow-run-as-root --oversubscribe \
    --mca btl_vader_single_copy_mechanism none \
    -x "LSAN_OPTIONS=$LSAN_OPTIONS:fast_unwind_on_malloc=0" -np "$processes" "$@"
fi
exec "$mpirun" --allow-run-as-root --oversubscribe \
  --mca btl_vader_single_copy_mechanism none -np "$processes" "$@"
