"""parex: Fluid's executors on parex's actor runtime.

A PaddlePaddle (Fluid) training script keeps building its programs with
Paddle and runs them on parex by importing this module in place of Fluid's
executor classes::

    import parex as fluid          # or: from parex import ParallelExecutor
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup_program)
    train_exe = fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name,
                                       main_program=train_program)
    loss_value, = train_exe.run(fetch_list=[loss.name], feed=feed_dict)

Names, arguments and defaults are Fluid's (the ParallelExecutor user guide,
`../shared/seeds/001_*` in the repository). Programs may be a
`paddle.static.Program` (anything with ``.desc.serialize_to_string()``), its
serialized bytes, a path to a ``.pdmodel`` file, or a `parex.Program`. The
places: ``use_cuda=True`` takes every visible GPU (``CUDA_VISIBLE_DEVICES``),
``use_cuda=False`` takes ``CPU_NUM`` CPU places (the machine's core count
when unset, as Fluid did). Errors raise `parex.Error` carrying parex's
message (op, variable, place).
"""

import os
import sys
import weakref

import numpy as np

from . import _core
from ._core import (  # noqa: F401  (re-exported)
    BuildStrategy,
    Error,
    ExecutionStrategy,
    GradientScaleStrategy,
    Place,
    Program,
    ReduceStrategy,
    Scope,
)

__all__ = [
    "BuildStrategy", "CPUPlace", "CUDAPlace", "Cluster", "Error",
    "ExecutionStrategy",
    "Executor", "ParallelExecutor", "Place", "Program", "Scope",
    "default_main_program", "default_startup_program", "global_scope",
    "scope_guard",
]

# BuildStrategy.ReduceStrategy / GradientScaleStrategy, as Fluid spells them.
BuildStrategy.ReduceStrategy = ReduceStrategy
BuildStrategy.GradientScaleStrategy = GradientScaleStrategy


def CPUPlace():
    """The host (Fluid's CPUPlace)."""
    return Place.cpu(0)


def CUDAPlace(device_id=0):
    """GPU `device_id` (Fluid's CUDAPlace)."""
    return Place.cuda(int(device_id))


# --- scopes -----------------------------------------------------------------

_global_scope = Scope()
_scope_stack = []
# Live ParallelExecutors, so that reading a scope first brings it up to date
# with the places (Reduce mode, GPUs): see _ScopeView.find_var.
_executors = weakref.WeakSet()


class _ScopeView:
    """Fluid's Scope: find_var(name).get_tensor() readable as numpy."""

    def __init__(self, core_scope):
        self._core = core_scope

    def find_var(self, name):
        for pe in list(_executors):
            if pe._dirty and pe._core.scope is self._core:
                pe._core.sync_persistables()
                pe._dirty = False
        return self._core.find_var(name)

    def var(self, name):
        return self._core.var(name)

    def local_var_names(self):
        return self._core.local_var_names()


def global_scope():
    """The scope executors use when given none."""
    return _ScopeView(_scope_stack[-1] if _scope_stack else _global_scope)


class scope_guard:
    """``with parex.scope_guard(scope):`` makes `scope` the global scope."""

    def __init__(self, scope):
        self._scope = _core_scope(scope)

    def __enter__(self):
        _scope_stack.append(self._scope)

    def __exit__(self, *exc):
        _scope_stack.pop()


def _core_scope(scope):
    if scope is None:
        return _scope_stack[-1] if _scope_stack else _global_scope
    if isinstance(scope, _ScopeView):
        return scope._core
    if isinstance(scope, Scope):
        return scope
    raise TypeError("scope must be a parex.Scope (from parex.Scope() or "
                    "parex.global_scope()), not %s" % type(scope).__name__)


# --- programs ---------------------------------------------------------------

def _paddle_static():
    paddle = sys.modules.get("paddle")
    if paddle is None:
        raise Error("no program given and paddle is not imported: pass the "
                    "program (a paddle.static.Program, its bytes or a "
                    ".pdmodel path)")
    return paddle.static


def default_main_program():
    """Paddle's default main program (paddle must be imported)."""
    return _paddle_static().default_main_program()


def default_startup_program():
    """Paddle's default startup program (paddle must be imported)."""
    return _paddle_static().default_startup_program()


_programs = weakref.WeakKeyDictionary()  # Paddle program -> (bytes, parsed)


def _program(program, what):
    """A parex.Program from what Paddle gives (see the module's doc)."""
    if program is None:
        program = default_main_program()
    if isinstance(program, Program):
        return program
    if isinstance(program, (bytes, bytearray)):
        return Program.parse(bytes(program), what)
    if isinstance(program, (str, os.PathLike)):
        return Program.load(os.fspath(program))
    desc = getattr(program, "desc", None)
    if desc is not None and hasattr(desc, "serialize_to_string"):
        data = desc.serialize_to_string()
        try:
            cached = _programs.get(program)
        except TypeError:  # not weakly referenceable
            cached = None
        if cached is not None and cached[0] == data:
            return cached[1]
        parsed = Program.parse(data, what)
        try:
            _programs[program] = (data, parsed)
        except TypeError:
            pass
        return parsed
    raise TypeError(
        "%s: expected a paddle.static.Program, its serialized bytes, a "
        ".pdmodel path or a parex.Program, not %s"
        % (what, type(program).__name__))


def _names(fetch_list):
    if fetch_list is None:
        return []
    if isinstance(fetch_list, (str, bytes)) or hasattr(fetch_list, "name"):
        fetch_list = [fetch_list]
    names = []
    for f in fetch_list:
        name = f if isinstance(f, str) else getattr(f, "name", None)
        if not isinstance(name, str):
            raise TypeError("fetch_list entries are variable names or "
                            "variables, not %s" % type(f).__name__)
        names.append(name)
    return names


def _feed_dict(feed, what):
    if feed is None:
        return {}
    if not isinstance(feed, dict):
        raise TypeError("%s: expected a dict of name -> array, not %s"
                        % (what, type(feed).__name__))
    return {(k if isinstance(k, str) else getattr(k, "name", str(k))): v
            for k, v in feed.items()}


# --- executors --------------------------------------------------------------

class Executor:
    """Fluid's Executor: a program's ops in order on the host."""

    def __init__(self, place=None):
        self.place = place if place is not None else CPUPlace()
        self._core = _core.Executor(self.place)

    def run(self, program=None, feed=None, fetch_list=None,
            feed_var_name="feed", fetch_var_name="fetch", scope=None,
            return_numpy=True, use_program_cache=False):
        del feed_var_name, fetch_var_name, use_program_cache  # Fluid's
        prog = _program(program, "Executor.run program")
        names = _names(fetch_list)
        core_scope = _core_scope(scope)
        for pe in list(_executors):  # read what the places hold
            if pe._dirty and pe._core.scope is core_scope:
                pe._core.sync_persistables()
                pe._dirty = False
        out = self._core.run(prog, core_scope, _feed_dict(feed, "feed"),
                             names)
        return out if return_numpy else [_core_tensor_like(a) for a in out]

    def close(self):
        pass


def _core_tensor_like(array):
    return np.asarray(array)


def _default_places(use_cuda):
    if use_cuda:
        count = _core.cuda_device_count()
        if count == 0:
            raise Error("use_cuda=True, but no CUDA device is visible "
                        "(CUDA_VISIBLE_DEVICES=%r)"
                        % os.environ.get("CUDA_VISIBLE_DEVICES", ""))
        return [Place.cuda(i) for i in range(count)]
    cpu_num = os.environ.get("CPU_NUM")
    if cpu_num is None:
        count = os.cpu_count() or 1
    else:
        try:
            count = int(cpu_num)
        except ValueError:
            raise Error("CPU_NUM=%r is not a number of places" % cpu_num)
        if count <= 0:
            raise Error("CPU_NUM=%r is not a positive number of places"
                        % cpu_num)
    return [Place.cpu(i) for i in range(count)]


class ParallelExecutor:
    """Fluid's ParallelExecutor: the program over every place, gradients
    all-reduced (or reduced and broadcast) between them. With
    `num_trainers` > 1 this process is node `trainer_id` of the
    `parex.Cluster` it joined: the executor runs that node's places of the
    topology, its gradients summed across the nodes, each node feeding its
    own batch (Fluid's multi-trainer way)."""

    def __init__(self, use_cuda, loss_name=None, main_program=None,
                 share_vars_from=None, exec_strategy=None,
                 build_strategy=None, num_trainers=1, trainer_id=0,
                 scope=None):
        cluster = _cluster_for(num_trainers, trainer_id)
        if share_vars_from is not None and \
                not isinstance(share_vars_from, ParallelExecutor):
            raise TypeError("share_vars_from must be a parex."
                            "ParallelExecutor, not %s"
                            % type(share_vars_from).__name__)
        program = _program(main_program, "ParallelExecutor main_program")
        core_scope = (share_vars_from._core.scope
                      if share_vars_from is not None and scope is None
                      else _core_scope(scope))
        self._core = _core.ParallelExecutor(
            _default_places(bool(use_cuda)), program, loss_name or "",
            core_scope, build_strategy or BuildStrategy(),
            exec_strategy or ExecutionStrategy(),
            share_vars_from._core if share_vars_from is not None else None,
            cluster._core if cluster is not None else None)
        self._dirty = False
        _executors.add(self)

    @property
    def device_count(self):
        """The number of places (Fluid's device_count)."""
        return self._core.device_count

    def run(self, fetch_list, feed=None, feed_dict=None, return_numpy=True):
        """One step. `feed`: a dict of arrays split along dim 0 over the
        places, or a list of one dict per place. Returns the fetched values
        merged along dim 0 across the places, as Fluid merges them."""
        if feed is None and feed_dict is not None:
            feed = feed_dict
        names = _names(fetch_list)
        self._dirty = True
        if isinstance(feed, (list, tuple)):
            if len(feed) != self.device_count:
                raise Error("feed: %d dicts for %d places"
                            % (len(feed), self.device_count))
            per_place = self._core.run_per_place(
                [_feed_dict(f, "feed[%d]" % i) for i, f in enumerate(feed)],
                names)
            out = [_merge(arrays) for arrays in per_place]
        else:
            out = self._core.run(_feed_dict(feed, "feed"), names)
        return out if return_numpy else [_core_tensor_like(a) for a in out]

    def drop_local_exe_scopes(self):
        pass


# --- clusters ---------------------------------------------------------------

_cluster = None  # the Cluster this process joined, if any


class Cluster:
    """This process as node `node` of the topology file `topology` (see
    docs/cluster.md): joins the other nodes now (blocking until they came)
    and stays joined until leave(). ParallelExecutors made with
    num_trainers=cluster.size, trainer_id=cluster.rank train across the
    nodes, starting from rank 0's persistables."""

    def __init__(self, topology, node):
        global _cluster
        if _cluster is not None and _cluster._core is not None:
            raise Error("this process already joined a cluster as node '%s'"
                        % _cluster.node)
        self._core = _core.Cluster(os.fspath(topology), node)
        _cluster = self

    rank = property(lambda self: self._core.rank)
    size = property(lambda self: self._core.size)
    node = property(lambda self: self._core.node)
    places = property(lambda self: self._core.places)

    def leave(self):
        """Leaves together with the other nodes."""
        global _cluster
        if self._core is not None:
            self._core.leave()
        if _cluster is self:
            _cluster = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.leave()


def _cluster_for(num_trainers, trainer_id):
    """The joined cluster num_trainers / trainer_id name, or None."""
    if num_trainers == 1 and trainer_id == 0:
        return None
    if _cluster is None:
        raise Error("num_trainers=%d, trainer_id=%d: join the cluster first "
                    "(parex.Cluster(topology, node))"
                    % (num_trainers, trainer_id))
    if (num_trainers, trainer_id) != (_cluster.size, _cluster.rank):
        raise Error("num_trainers=%d, trainer_id=%d, but this process is node "
                    "'%s', rank %d of %d nodes"
                    % (num_trainers, trainer_id, _cluster.node, _cluster.rank,
                       _cluster.size))
    return _cluster


def _merge(arrays):
    """Per-place fetches along dim 0 (0-d values stack into a vector)."""
    if all(np.ndim(a) == 0 for a in arrays):
        return np.stack(arrays)
    return np.concatenate(arrays, axis=0)
