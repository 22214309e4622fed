#!/usr/bin/env python3
"""Golden outputs of PaddlePaddle 2.6.2 for parex's kernels, in float64
unless a case says otherwise:
  activations.json  (tests/kernels/activation_kernels_test.cc) for each op
                    and attribute set: x, Paddle's output, and Paddle's
                    gradient of sum(w * out) with respect to x;
  views.json        (tests/kernels/shape_kernels_test.cc) unsqueeze2,
                    squeeze2 and flatten_contiguous_range: input dims,
                    attributes, the output dims Paddle gives;
  slice.json        (tests/kernels/shape_kernels_test.cc) slice: x's dims,
                    axes, starts, ends, decrease_axis; Paddle's output dims,
                    its values (x = 0, 1, 2, ...) and the gradient of
                    sum(w * out);
  top_k_v2.json     (tests/kernels/metric_kernels_test.cc) top_k_v2 with
                    ties: x, k, axis, largest; Paddle's values, indices and
                    the gradient of sum(w * values);
  layer_norm.json   (tests/kernels/layer_norm_kernel_test.cc) x, scale,
                    bias, begin_norm_axis, epsilon, w: Y and the gradients of
                    sum(w * Y) with respect to x, scale and bias;
  tensor_ops.json   (tests/kernels/paddle_golden.h, read by the tests of
                    stack, gather, expand_v2, where, equal,
                    fill_constant_batch_size_like, one_hot_v2, arg_max,
                    cumsum and sigmoid_cross_entropy_with_logits): each case
                    runs one op of a static program built with the op's
                    attributes as written here (append_op), its inputs
                    by slot (dtype, dims, values), Paddle's outputs and, for
                    differentiable ops, w per float output and the gradients
                    of sum(w * out) that Paddle's own gradient op gives for
                    the inputs listed in "grads", with the gradient op's
                    type and slots ("grad_op"). NaN is written as null,
                    infinities as "inf" and "-inf";
  the files of OP_GROUP_FILES (depthwise_conv2d.json ... more_nn.json;
                    `make_goldens.py --only FILE` writes one of them):
                    as tensor_ops.json, one op group each (see each group's
                    function).
Run: python3 -m venv v && v/bin/pip install paddlepaddle==2.6.2 &&
     v/bin/python make_goldens.py
Never needed by CI: the output is committed."""
import json
import os

import numpy as np  # before paddle: NumPy's RandomState crashes otherwise
import paddle
import paddle.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))

CASES = [
    ("exp", {}, lambda x: paddle.exp(x), False),
    ("log", {}, lambda x: paddle.log(x), True),
    ("abs", {}, lambda x: paddle.abs(x), False),
    ("gelu", {"approximate": False}, lambda x: F.gelu(x, approximate=False), False),
    ("gelu", {"approximate": True}, lambda x: F.gelu(x, approximate=True), False),
    ("leaky_relu", {"alpha": 0.1}, lambda x: F.leaky_relu(x, 0.1), False),
    ("hard_swish", {}, lambda x: F.hardswish(x), False),
    ("swish", {}, lambda x: F.swish(x), False),
    # Bounds exact in fp32: the static op stores them as float attributes.
    ("clip", {"min": -0.5, "max": 1.25}, lambda x: paddle.clip(x, -0.5, 1.25), False),
    ("sigmoid", {}, lambda x: F.sigmoid(x), False),
    ("tanh", {}, lambda x: paddle.tanh(x), False),
    ("relu", {}, lambda x: F.relu(x), False),
]


def main():
    rng = np.random.RandomState(26)
    out = []
    for op, attrs, fn, positive in CASES:
        # Away from every kink (0, +-3 for hard_swish, the clip bounds).
        x = rng.uniform(0.1, 3.0, size=12) if positive else rng.uniform(-4, 4, size=12)
        x = np.where(np.abs(np.abs(x) - 3) < 0.05, x + 0.2, x)
        w = rng.uniform(-1, 1, size=12)
        xt = paddle.to_tensor(x, dtype="float64", stop_gradient=False)
        y = fn(xt)
        (y * paddle.to_tensor(w, dtype="float64")).sum().backward()
        out.append({"op": op, "attrs": attrs, "x": x.tolist(), "w": w.tolist(),
                    "out": y.numpy().tolist(), "x_grad": xt.grad.numpy().tolist()})
    with open(os.path.join(HERE, "activations.json"), "w") as f:
        json.dump({"paddle": paddle.__version__, "cases": out}, f, indent=1)
    print(len(out), "activation cases")

    norms = []
    for shape, axis, affine in [((2, 3, 4), 1, True), ((2, 3, 4), 2, True),
                                ((5, 6), 1, False)]:
        x = rng.uniform(-2, 2, size=shape)
        right = int(np.prod(shape[axis:]))
        scale = rng.uniform(0.5, 1.5, size=right)
        bias = rng.uniform(-0.5, 0.5, size=right)
        w = rng.uniform(-1, 1, size=shape)
        xt = paddle.to_tensor(x, dtype="float64", stop_gradient=False)
        st = paddle.to_tensor(scale, dtype="float64",
                              stop_gradient=False)
        bt = paddle.to_tensor(bias, dtype="float64",
                              stop_gradient=False)
        y = F.layer_norm(xt, shape[axis:], st if affine else None,
                         bt if affine else None, 1e-5)
        (y * paddle.to_tensor(w, dtype="float64")).sum().backward()
        case = {"shape": list(shape), "begin_norm_axis": axis, "epsilon": 1e-5,
                "affine": affine, "x": x.ravel().tolist(), "w": w.ravel().tolist(),
                "y": y.numpy().ravel().tolist(),
                "x_grad": xt.grad.numpy().ravel().tolist()}
        if affine:
            case.update({"scale": scale.tolist(), "bias": bias.tolist(),
                         "scale_grad": st.grad.numpy().ravel().tolist(),
                         "bias_grad": bt.grad.numpy().ravel().tolist()})
        norms.append(case)
    with open(os.path.join(HERE, "layer_norm.json"), "w") as f:
        json.dump({"paddle": paddle.__version__, "cases": norms}, f, indent=1)
    print(len(norms), "layer_norm cases")

    views = []
    for shape, axes in [((2, 3), [0]), ((2, 3), [-1]), ((2, 3), [1, 2]),
                        ((2, 3), [0, -1]), ((4,), [-1, 0]), ((2, 1, 3), [2, 0])]:
        y = paddle.unsqueeze(paddle.zeros(shape), axes)
        views.append({"op": "unsqueeze2", "x": list(shape), "attrs": {"axes": axes},
                      "out": list(y.shape)})
    for shape, axes in [((2, 1, 3, 1), []), ((2, 1, 3, 1), [1]), ((2, 1, 3, 1), [-1]),
                        ((2, 1, 3, 1), [0, 1]), ((1, 1), [0])]:
        y = paddle.squeeze(paddle.zeros(shape), axes)
        views.append({"op": "squeeze2", "x": list(shape), "attrs": {"axes": axes},
                      "out": list(y.shape)})
    for shape, start, stop in [((2, 3, 4, 5), 1, 2), ((2, 3, 4, 5), 0, -1),
                               ((2, 3, 4, 5), -2, -1), ((2, 3, 4), 1, 1)]:
        y = paddle.flatten(paddle.zeros(shape), start, stop)
        views.append({"op": "flatten_contiguous_range", "x": list(shape),
                      "attrs": {"start_axis": start, "stop_axis": stop},
                      "out": list(y.shape)})
    with open(os.path.join(HERE, "views.json"), "w") as f:
        json.dump({"paddle": paddle.__version__, "cases": views}, f, indent=1)
    print(len(views), "view cases")

    slices = []
    # (dims, axes, starts, ends, decrease_axis): negative and clamped bounds,
    # dropped axes (what x[:, 1] records). An end before its
    # start is an error in Paddle 2.6.
    for dims, axes, starts, ends, decrease in [
            ((3, 4, 5), [1], [1], [3], []), ((3, 4, 5), [0, 2], [-2, 1], [100, -1], []),
            ((3, 4, 5), [2], [-100], [2], []), ((3, 4), [1], [1], [2], [1]),
            ((3, 4), [1, 0], [2, 0], [3, 1], [1]), ((6,), [0], [-2], [6], [])]:
        x = np.arange(int(np.prod(dims)), dtype=np.float64).reshape(dims)
        xt = paddle.to_tensor(x, stop_gradient=False)
        y = paddle.slice(xt, axes, starts, ends)
        if decrease:  # what slice's decrease_axis does to the dims
            y = paddle.squeeze(y, decrease)
        w = rng.uniform(-1, 1, size=y.shape)
        (y * paddle.to_tensor(w)).sum().backward()
        slices.append({"x": list(dims), "axes": axes, "starts": starts, "ends": ends,
                       "decrease_axis": decrease, "out_dims": list(y.shape),
                       "out": y.numpy().ravel().tolist(), "w": w.ravel().tolist(),
                       "x_grad": xt.grad.numpy().ravel().tolist()})
    with open(os.path.join(HERE, "slice.json"), "w") as f:
        json.dump({"paddle": paddle.__version__, "cases": slices}, f, indent=1)
    print(len(slices), "slice cases")

    topk = []
    # (dims, k, axis, largest): small integers as values give ties, which
    # fall where Paddle's CPU kernel (partial_sort / nth_element) leaves them.
    for dims, k, axis, largest in [((2, 5), 2, -1, True), ((2, 4, 3), 3, 1, True),
                                   ((2, 4, 3), 2, 1, False), ((3, 2, 4), 1, 0, False),
                                   ((6,), 6, 0, True)]:
        x = rng.randint(0, 4, size=dims).astype(np.float64)
        xt = paddle.to_tensor(x, stop_gradient=False)
        values, indices = paddle.topk(xt, k, axis=axis, largest=largest)
        w = rng.uniform(-1, 1, size=values.shape)
        (values * paddle.to_tensor(w)).sum().backward()
        topk.append({"x_dims": list(dims), "x": x.ravel().tolist(), "k": k, "axis": axis,
                     "largest": largest, "out_dims": list(values.shape),
                     "out": values.numpy().ravel().tolist(),
                     "indices": indices.numpy().ravel().tolist(), "w": w.ravel().tolist(),
                     "x_grad": xt.grad.numpy().ravel().tolist()})
    with open(os.path.join(HERE, "top_k_v2.json"), "w") as f:
        json.dump({"paddle": paddle.__version__, "cases": topk}, f, indent=1)
    print(len(topk), "top_k_v2 cases")

    paddle.enable_static()
    cases = tensor_op_cases(rng)
    paddle.disable_static()
    with open(os.path.join(HERE, "tensor_ops.json"), "w") as f:
        json.dump({"paddle": paddle.__version__, "cases": cases}, f, indent=1,
                  allow_nan=False)
    print(len(cases), "tensor op cases")

    # Later op groups, each in a file of its own from a generator of its own,
    # so adding a group leaves the files above byte for byte as they were.
    paddle.enable_static()
    for name, make, seed in OP_GROUP_FILES:
        cases = make(np.random.RandomState(seed))
        with open(os.path.join(HERE, name), "w") as f:
            json.dump({"paddle": paddle.__version__, "cases": cases}, f, indent=1,
                      allow_nan=False)
        print(len(cases), "cases in", name)
    paddle.disable_static()


def as_list(a):
    """Values of an array for JSON: floats, ints or bools; NaN as None,
    infinities as "inf" and "-inf"."""
    flat = np.asarray(a).ravel()
    if flat.dtype.kind == "f":
        return [None if np.isnan(v) else ("inf" if v > 0 else "-inf") if np.isinf(v)
                else float(v) for v in flat]
    if flat.dtype.kind == "b":
        return [bool(v) for v in flat]
    return [int(v) for v in flat]


# Outputs an op writes that hold no values to fetch (reshape2's XShape
# carries only dims for the gradient op).
UNFETCHED = {"XShape"}


def run_static(op, inputs, attrs, outs, wrt, rng):
    """Runs `op` in a static program (append_op, so the attributes are the
    op's own) on `inputs` ({slot: [array, ...]}); returns one golden case.
    With `wrt` (input var names "<slot>_<k>"), also w per output and the
    gradients of sum(w * out) through Paddle's gradient op."""
    out_dims = None
    if wrt:  # the outputs' dims at run time (-1s in the program's)
        forward = run_static(op, inputs, attrs, outs, [], rng)
        out_dims = {slot: [o["dims"] for o in v] for slot, v in forward["outputs"].items()}
    main, start = paddle.static.Program(), paddle.static.Program()
    case = {"op": op, "attrs": attrs, "inputs": {}, "outputs": {}, "w": {}, "grads": {}}
    with paddle.static.program_guard(main, start):
        block = main.global_block()
        feed, in_vars = {}, {}
        for slot, arrays in inputs.items():
            in_vars[slot] = []
            case["inputs"][slot] = []
            for k, a in enumerate(arrays):
                name = "%s_%d" % (slot, k)
                v = paddle.static.data(name, list(a.shape), str(a.dtype))
                v.stop_gradient = name not in wrt
                feed[name] = a
                in_vars[slot].append(v)
                case["inputs"][slot].append({"dtype": str(a.dtype), "dims": list(a.shape),
                                             "values": as_list(a)})
        out_vars = {slot: [block.create_var(name="%s_out_%d" % (slot, k)) for k in range(n)]
                    for slot, n in outs.items()}
        block.append_op(type=op, inputs=in_vars, outputs=out_vars, attrs=dict(attrs))
        fetch = [v for slot, vs in out_vars.items() if slot not in UNFETCHED for v in vs]
        grads = []
        if wrt:
            terms = []
            for slot, vs in out_vars.items():
                if slot in UNFETCHED:
                    continue
                case["w"][slot] = []
                for k, v in enumerate(vs):
                    w = rng.uniform(-1, 1, size=out_dims[slot][k]).astype("float64")
                    wv = paddle.static.data("w_%s_%d" % (slot, k), list(w.shape), "float64")
                    feed[wv.name] = w
                    case["w"][slot].append(as_list(w))
                    terms.append((paddle.cast(v, "float64") * wv).sum())
            loss = paddle.add_n(terms) if len(terms) > 1 else terms[0]
            grads = paddle.static.gradients([loss], [block.var(n) for n in wrt])
            for g in block.ops:  # the gradient op Paddle records, by its slots
                if g.type == op + "_grad":
                    case["grad_op"] = {"type": g.type, "inputs": sorted(g.input_names),
                                       "outputs": sorted(g.output_names)}
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(start)
    values = exe.run(main, feed=feed, fetch_list=fetch + grads)
    i = 0
    for slot, vs in out_vars.items():
        if slot in UNFETCHED:
            continue
        case["outputs"][slot] = []
        for _ in vs:
            case["outputs"][slot].append({"dtype": str(values[i].dtype),
                                          "dims": list(values[i].shape),
                                          "values": as_list(values[i])})
            i += 1
    for name in wrt:
        slot, k = name.rsplit("_", 1)
        case["grads"].setdefault(slot, {})[k] = as_list(values[i])
        i += 1
    return case


def tensor_op_cases(rng):
    def u(*dims, dtype="float64"):
        return rng.uniform(-2, 2, size=dims).astype(dtype)

    def ints(lo, hi, *dims, dtype="int64"):
        return rng.randint(lo, hi, size=dims).astype(dtype)

    cases = []

    def add(op, inputs, attrs, outs, wrt=()):
        cases.append(run_static(op, inputs, attrs, outs, list(wrt), rng))

    # stack: axes in [-(rank+1), rank]; stack_grad for every input.
    add("stack", {"X": [u(2, 3), u(2, 3)]}, {"axis": 0}, {"Y": 1}, ["X_0", "X_1"])
    add("stack", {"X": [u(2, 3), u(2, 3), u(2, 3)]}, {"axis": 1}, {"Y": 1},
        ["X_0", "X_1", "X_2"])
    add("stack", {"X": [u(2, 3), u(2, 3)]}, {"axis": -1}, {"Y": 1}, ["X_0", "X_1"])
    add("stack", {"X": [u(4, dtype="float32"), u(4, dtype="float32")]}, {"axis": 0},
        {"Y": 1}, ["X_0", "X_1"])
    add("stack", {"X": [ints(0, 9, 2, 2), ints(0, 9, 2, 2)]}, {"axis": 1}, {"Y": 1})
    # gather: repeated indices sum in the gradient; int32 and [N, 1] Index.
    # Paddle 2.6.2's CPU gather_grad with axis > 0 gives every leading index
    # the first one's gradient (it leaves out their offset into Out@GRAD), so
    # gradients are taken only where the dims before the axis hold one row;
    # parex's are checked by finite differences everywhere. A negative axis
    # reads out of bounds in Paddle's kernel: none here.
    add("gather", {"X": [u(5, 3)], "Index": [np.array([2, 0, 2], "int64")]}, {"axis": 0},
        {"Out": 1}, ["X_0"])
    add("gather", {"X": [u(2, 4, 3)], "Index": [np.array([3, 1], "int32")]}, {"axis": 1},
        {"Out": 1})
    add("gather", {"X": [u(1, 4, 3)], "Index": [np.array([3, 1, 3], "int32")]}, {"axis": 1},
        {"Out": 1}, ["X_0"])
    add("gather", {"X": [u(2, 4, 3)], "Index": [np.array([[1], [0], [1]], "int64")]},
        {"axis": 2}, {"Out": 1})
    add("gather", {"X": [u(1, 1, 3)], "Index": [np.array([[1], [0], [1]], "int64")]},
        {"axis": 2}, {"Out": 1}, ["X_0"])
    add("gather", {"X": [u(4, 3, dtype="float32")], "Index": [np.array([0, 3, 3], "int64")]},
        {"axis": 0}, {"Out": 1}, ["X_0"])
    add("gather", {"X": [ints(0, 9, 4, 2)], "Index": [np.array([3, 3, 0], "int64")]},
        {"axis": 0}, {"Out": 1})
    # expand_v2: new leading dims, -1 keeping an extent, 1s expanded.
    add("expand_v2", {"X": [u(3, 1)]}, {"shape": [2, 3, 4]}, {"Out": 1}, ["X_0"])
    add("expand_v2", {"X": [u(1, 4)]}, {"shape": [-1, 4]}, {"Out": 1}, ["X_0"])
    add("expand_v2", {"X": [u(2, 1, 3)]}, {"shape": [2, 2, 5, -1]}, {"Out": 1}, ["X_0"])
    add("expand_v2", {"X": [u(3, dtype="float32")]}, {"shape": [2, 3]}, {"Out": 1}, ["X_0"])
    add("expand_v2", {"X": [np.array([[True], [False]])]}, {"shape": [2, 3]}, {"Out": 1})
    # where and where_grad (equal dims: Paddle's Python layer broadcasts).
    cond = rng.uniform(size=(2, 3)) > 0.5
    add("where", {"Condition": [cond], "X": [u(2, 3)], "Y": [u(2, 3)]}, {}, {"Out": 1},
        ["X_0", "Y_0"])
    add("where", {"Condition": [np.array([True, False, False, True])],
                  "X": [u(4, dtype="float32")], "Y": [u(4, dtype="float32")]}, {}, {"Out": 1},
        ["X_0", "Y_0"])
    add("where", {"Condition": [cond], "X": [ints(0, 9, 2, 3)], "Y": [ints(0, 9, 2, 3)]}, {},
        {"Out": 1})
    # equal: floats equal within 1e-8 (inf only to inf, NaN to nothing);
    # broadcasting both ways and at an axis.
    a = np.array([[1.0, 2.0, np.inf], [np.nan, 0.5, -3.0]])
    b = np.array([[1.0 + 1e-9, 2.0 + 1e-7, np.inf], [np.nan, 0.5, 3.0]])
    add("equal", {"X": [a], "Y": [b]}, {"axis": -1}, {"Out": 1})
    add("equal", {"X": [ints(0, 3, 3, 1)], "Y": [ints(0, 3, 1, 4)]}, {"axis": -1}, {"Out": 1})
    add("equal", {"X": [ints(0, 2, 4, dtype="int32")], "Y": [ints(0, 2, 3, 4, dtype="int32")]},
        {"axis": -1}, {"Out": 1})
    # Y lined up with X's dim 0 (Paddle 2.6's kernel; its shape inference
    # ignores axis, so only dims that also broadcast from the right work).
    add("equal", {"X": [np.array([[0.0, 0, 0], [1, 1, 1], [2, 5, 2]])],
                  "Y": [np.array([0.0, 1.0, 2.0])]}, {"axis": 0}, {"Out": 1})
    add("equal", {"X": [np.array([1.0, 1.0000001], "float32")],
                  "Y": [np.array([1.0, 1.0], "float32")]}, {"axis": -1}, {"Out": 1})
    add("equal", {"X": [np.array([True, False, True])], "Y": [np.array([True])]}, {"axis": -1},
        {"Out": 1})
    # fill_constant_batch_size_like: the batch extent from Input.
    fill = {"value": 0.0, "str_value": "", "dtype": 5, "input_dim_idx": 0,
            "output_dim_idx": 0, "force_cpu": False}
    add("fill_constant_batch_size_like", {"Input": [u(4, 3)]},
        dict(fill, shape=[-1, 5], value=2.5), {"Out": 1})
    add("fill_constant_batch_size_like", {"Input": [u(2, 3, dtype="float32")]},
        dict(fill, shape=[2, -1, 3], value=-1.25, dtype=6, input_dim_idx=1,
             output_dim_idx=1), {"Out": 1})
    add("fill_constant_batch_size_like", {"Input": [u(3, 2)]},
        dict(fill, shape=[1, 1], str_value="123456789012", dtype=3), {"Out": 1})
    add("fill_constant_batch_size_like", {"Input": [u(2, 2)]},
        dict(fill, shape=[-1, 2], value=7.0, dtype=2, input_dim_idx=1), {"Out": 1})
    add("fill_constant_batch_size_like", {"Input": [u(3)]},
        dict(fill, shape=[-1], value=1.0, dtype=0), {"Out": 1})
    # one_hot_v2: Out is X's dims plus depth, of `dtype`.
    add("one_hot_v2", {"X": [np.array([0, 4, 2, 2], "int64")]},
        {"depth": 5, "dtype": 5, "allow_out_of_range": False}, {"Out": 1})
    add("one_hot_v2", {"X": [np.array([[3, 0, 1], [1, 1, 2]], "int32")]},
        {"depth": 4, "dtype": 6, "allow_out_of_range": False}, {"Out": 1})
    add("one_hot_v2", {"X": [np.array([[1], [0]], "int64")]},
        {"depth": 3, "dtype": 3, "allow_out_of_range": False}, {"Out": 1})
    # arg_max: ties go to the first; flatten; keepdims; int32 indices.
    tie = np.array([[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, 0.0, 2.0], [-1.0, -2.0, 5.0, 5.0]])
    arg = {"keepdims": False, "flatten": False, "dtype": 3}
    add("arg_max", {"X": [tie]}, dict(arg, axis=1), {"Out": 1})
    add("arg_max", {"X": [tie]}, dict(arg, axis=0, keepdims=True), {"Out": 1})
    add("arg_max", {"X": [u(2, 3, 4)]}, dict(arg, axis=-2, dtype=2), {"Out": 1})
    add("arg_max", {"X": [u(2, 3, 4, dtype="float32")]}, dict(arg, axis=2), {"Out": 1})
    add("arg_max", {"X": [u(3, 4)]}, dict(arg, axis=0, flatten=True), {"Out": 1})
    add("arg_max", {"X": [u(3, 4)]}, dict(arg, axis=1, flatten=True, keepdims=True), {"Out": 1})
    add("arg_max", {"X": [ints(-5, 5, 3, 4)]}, dict(arg, axis=1), {"Out": 1})
    # cumsum: exclusive, reverse, flatten; gradients as Paddle's cumsum_grad.
    scan = {"axis": -1, "flatten": False, "exclusive": False, "reverse": False}
    add("cumsum", {"X": [u(3, 4)]}, dict(scan, axis=1), {"Out": 1}, ["X_0"])
    add("cumsum", {"X": [u(3, 4)]}, dict(scan, axis=0, reverse=True), {"Out": 1}, ["X_0"])
    add("cumsum", {"X": [u(2, 3, 4)]}, dict(scan, axis=1, exclusive=True), {"Out": 1}, ["X_0"])
    add("cumsum", {"X": [u(2, 3, 4)]}, dict(scan, exclusive=True, reverse=True), {"Out": 1},
        ["X_0"])
    add("cumsum", {"X": [u(2, 3)]}, dict(scan, axis=0, flatten=True), {"Out": 1}, ["X_0"])
    add("cumsum", {"X": [u(2, 3, dtype="float32")]}, dict(scan, axis=0, flatten=True,
                                                            reverse=True), {"Out": 1}, ["X_0"])
    add("cumsum", {"X": [ints(-5, 5, 2, 3)]}, dict(scan, axis=1, exclusive=True), {"Out": 1})
    # sigmoid_cross_entropy_with_logits: ignored labels (int(label) ==
    # ignore_index), normalize by the labels farther than 1e-6 from it
    # (all ignored: 0 / 0).
    label = rng.uniform(0, 1, size=(3, 4))
    label[0, 1] = label[2, 3] = -100
    sce = {"ignore_index": -100, "normalize": False}
    add("sigmoid_cross_entropy_with_logits", {"X": [u(3, 4)], "Label": [label]}, sce,
        {"Out": 1}, ["X_0"])
    add("sigmoid_cross_entropy_with_logits", {"X": [u(3, 4)], "Label": [label]},
        dict(sce, normalize=True), {"Out": 1}, ["X_0"])
    hard = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    add("sigmoid_cross_entropy_with_logits", {"X": [u(2, 3)], "Label": [hard]},
        dict(sce, ignore_index=1, normalize=True), {"Out": 1}, ["X_0"])
    add("sigmoid_cross_entropy_with_logits",
        {"X": [u(2, 3, dtype="float32")], "Label": [hard.astype("float32")]}, sce,
        {"Out": 1}, ["X_0"])
    add("sigmoid_cross_entropy_with_logits",
        {"X": [u(2, 2)], "Label": [np.full((2, 2), -100.0)]}, dict(sce, normalize=True),
        {"Out": 1})
    return cases


def conv_attrs(**kw):
    attrs = {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1,
             "padding_algorithm": "EXPLICIT", "data_format": "NCHW"}
    attrs.update(kw)
    return attrs


def depthwise_conv2d_cases(rng):
    """depthwise_conv2d: one group per input channel (channel multiplier 1
    or 2), 2- and 4-entry paddings, strides, dilations, SAME and VALID."""
    def u(*dims, dtype="float64"):
        return rng.uniform(-2, 2, size=dims).astype(dtype)
    cases = []

    def add(inputs, attrs):
        cases.append(run_static("depthwise_conv2d", inputs, attrs, {"Output": 1},
                                ["Input_0", "Filter_0"], rng))

    add({"Input": [u(2, 3, 5, 5)], "Filter": [u(3, 1, 3, 3)]},
        conv_attrs(groups=3, paddings=[1, 1]))
    add({"Input": [u(1, 2, 6, 7)], "Filter": [u(4, 1, 3, 2)]},
        conv_attrs(groups=2, strides=[2, 1], paddings=[1, 0, 2, 1], dilations=[1, 2]))
    add({"Input": [u(1, 3, 5, 6)], "Filter": [u(3, 1, 3, 3)]},
        conv_attrs(groups=3, strides=[2, 2], padding_algorithm="SAME", dilations=[2, 2]))
    add({"Input": [u(2, 2, 4, 4, dtype="float32")], "Filter": [u(2, 1, 2, 2, dtype="float32")]},
        conv_attrs(groups=2, paddings=[3, 3], padding_algorithm="VALID"))
    return cases


def conv2d_transpose_cases(rng):
    """conv2d_transpose: groups, strides, 4-entry paddings, dilations,
    output_padding, output_size, SAME and VALID, fp32."""
    def u(*dims, dtype="float64"):
        return rng.uniform(-2, 2, size=dims).astype(dtype)
    cases = []

    def add(inputs, attrs):
        attrs = dict(conv_attrs(output_size=[], output_padding=[]), **attrs)
        cases.append(run_static("conv2d_transpose", inputs, attrs, {"Output": 1},
                                ["Input_0", "Filter_0"], rng))

    add({"Input": [u(2, 3, 4, 4)], "Filter": [u(3, 2, 3, 3)]}, {})
    add({"Input": [u(1, 4, 3, 4)], "Filter": [u(4, 3, 3, 2)]},
        {"groups": 2, "strides": [2, 3], "paddings": [1, 0, 2, 1], "dilations": [1, 2],
         "output_padding": [1, 2]})
    add({"Input": [u(1, 2, 3, 3)], "Filter": [u(2, 2, 3, 3)]},
        {"strides": [2, 2], "paddings": [1, 1], "output_size": [6, 5]})
    add({"Input": [u(1, 2, 5, 4)], "Filter": [u(2, 1, 3, 3)]},
        {"strides": [2, 2], "padding_algorithm": "SAME", "dilations": [2, 1]})
    add({"Input": [u(2, 2, 3, 3, dtype="float32")], "Filter": [u(2, 3, 2, 2, dtype="float32")]},
        {"paddings": [1, 1], "padding_algorithm": "VALID"})
    return cases


def pool3d_cases(rng):
    """pool3d: max and avg (exclusive or not), 3- and 6-entry paddings,
    ceil_mode (with a max window wholly in the padding: -FLT_MAX, as
    Paddle), global_pooling, adaptive windows, SAME, fp32. Values drawn
    without ties, so max pooling has one maximum per window. Paddle's avg
    gradient scales by 1 / window in float32, also for float64."""
    def u(*dims, dtype="float64"):
        return rng.permutation(int(np.prod(dims))).reshape(dims).astype(dtype) / 8.0 - 4
    cases = []

    def add(x, **kw):
        attrs = {"pooling_type": "max", "ksize": [2, 2, 2], "strides": [1, 1, 1],
                 "paddings": [0, 0, 0], "global_pooling": False, "exclusive": True,
                 "adaptive": False, "ceil_mode": False, "padding_algorithm": "EXPLICIT",
                 "data_format": "NCDHW"}
        attrs.update(kw)
        cases.append(run_static("pool3d", {"X": [x]}, attrs, {"Out": 1}, ["X_0"], rng))

    add(u(2, 2, 4, 4, 4), strides=[2, 2, 2])
    add(u(1, 2, 5, 4, 4), pooling_type="avg", ksize=[3, 3, 2], strides=[2, 1, 2],
        paddings=[1, 1, 0])
    add(u(1, 1, 4, 5, 5), pooling_type="avg", exclusive=False, ksize=[2, 3, 3],
        strides=[1, 2, 2], paddings=[1, 0, 0, 1, 1, 1], ceil_mode=True)
    add(u(1, 2, 4, 5, 5), ksize=[2, 3, 3], strides=[2, 2, 2], paddings=[0, 1, 1, 0, 1, 1],
        ceil_mode=True)
    add(u(2, 3, 3, 4, 2), global_pooling=True)
    add(u(1, 2, 5, 7, 4), pooling_type="avg", adaptive=True, ksize=[2, 3, 2])
    # No adaptive max: Paddle 2.6.2's pool3d op takes other windows there
    # than its adaptive_max_pool3d (max_pool3d_with_index) and the
    # definition, which parex follows (finite differences check it).
    add(u(1, 2, 5, 5, 4, dtype="float32"), ksize=[3, 3, 3], strides=[2, 2, 2],
        padding_algorithm="SAME")
    return cases


def conv3d_cases(rng):
    """conv3d: groups, strides, 3- and 6-entry paddings, dilations, SAME,
    VALID, 1x1x1, fp32."""
    def u(*dims, dtype="float64"):
        return rng.uniform(-2, 2, size=dims).astype(dtype)
    cases = []

    def add(inputs, **kw):
        attrs = {"strides": [1, 1, 1], "paddings": [0, 0, 0], "dilations": [1, 1, 1],
                 "groups": 1, "padding_algorithm": "EXPLICIT", "data_format": "NCDHW"}
        attrs.update(kw)
        cases.append(run_static("conv3d", inputs, attrs, {"Output": 1},
                                ["Input_0", "Filter_0"], rng))

    add({"Input": [u(2, 2, 4, 4, 3)], "Filter": [u(3, 2, 2, 3, 2)]}, paddings=[1, 1, 0])
    add({"Input": [u(1, 4, 5, 4, 6)], "Filter": [u(6, 2, 3, 2, 3)]}, groups=2,
        strides=[2, 1, 2], paddings=[1, 0, 0, 1, 2, 1], dilations=[1, 2, 1])
    add({"Input": [u(1, 2, 5, 5, 4)], "Filter": [u(2, 2, 3, 3, 3)]}, strides=[2, 2, 2],
        padding_algorithm="SAME")
    add({"Input": [u(1, 3, 3, 3, 3)], "Filter": [u(2, 3, 1, 1, 1)]})
    add({"Input": [u(2, 2, 3, 4, 4, dtype="float32")],
         "Filter": [u(2, 2, 2, 2, 2, dtype="float32")]}, paddings=[1, 1, 1],
        padding_algorithm="VALID")
    return cases


def pad3d_cases(rng):
    """pad3d: constant (with value), reflect, replicate, circular; paddings
    {left, right, top, bottom, front, back}; fp32."""
    def u(*dims, dtype="float64"):
        return rng.uniform(-2, 2, size=dims).astype(dtype)
    cases = []

    def add(x, paddings, mode, value=0.0):
        attrs = {"paddings": paddings, "mode": mode, "value": value, "data_format": "NCDHW"}
        cases.append(run_static("pad3d", {"X": [x]}, attrs, {"Out": 1}, ["X_0"], rng))

    add(u(2, 2, 2, 3, 4), [1, 2, 0, 1, 2, 0], "constant", 1.5)
    add(u(1, 2, 3, 4, 4), [2, 1, 1, 2, 1, 0], "reflect")
    add(u(1, 1, 2, 3, 3), [1, 1, 2, 0, 0, 3], "replicate")
    add(u(1, 2, 3, 3, 4), [1, 2, 1, 1, 2, 1], "circular")
    add(u(1, 2, 2, 2, 3, dtype="float32"), [0, 1, 1, 0, 1, 1], "constant")
    return cases


def interp_cases(rng):
    """nearest_interp_v2 / bilinear_interp_v2 (NCHW): upscale and downscale,
    align_corners true / false, align_mode 0 / 1, the scale attribute or
    out_h / out_w, equal extents (a copy), one output row; fp64 and fp32. A
    nearest_interp_v2 case keeps the default interp_method, "bilinear"."""
    def u(*dims, dtype="float64"):
        return rng.uniform(-2, 2, size=dims).astype(dtype)
    cases = []

    def add(op, x, method, size=None, scale=None, **kw):
        attrs = {"data_layout": "NCHW"}
        if method is not None:
            attrs["interp_method"] = method
        if size is not None:
            attrs["out_h"], attrs["out_w"] = size
        if scale is not None:
            attrs["scale"] = [float(s) for s in scale]
        attrs.update(kw)
        cases.append(run_static(op, {"X": [x]}, attrs, {"Out": 1}, ["X_0"], rng))

    b = "bilinear_interp_v2"
    add(b, u(2, 2, 3, 4), "bilinear", size=(5, 7), align_corners=False, align_mode=0)
    add(b, u(1, 2, 6, 5), "bilinear", size=(4, 3), align_corners=True, align_mode=1)
    add(b, u(1, 1, 4, 3), "bilinear", scale=(1.5, 2.0), align_corners=False, align_mode=1)
    add(b, u(2, 1, 5, 6), "bilinear", scale=(0.6, 0.5), align_corners=False, align_mode=0)
    add(b, u(2, 1, 5, 6, dtype="float32"), "bilinear", size=(8, 4),
        align_corners=False, align_mode=0)
    add(b, u(1, 1, 3, 3), "bilinear", size=(3, 3), align_corners=False, align_mode=0)
    add(b, u(1, 1, 4, 4), "bilinear", size=(1, 3), align_corners=True, align_mode=1)
    # Ratios that are not short binary fractions.
    add(b, u(1, 1, 7, 5), "bilinear", size=(3, 9), align_corners=False, align_mode=0)
    add(b, u(1, 2, 10, 6), "bilinear", scale=(0.3, 1.7), align_corners=False, align_mode=0)
    add(b, u(1, 1, 5, 4, dtype="float32"), "bilinear", size=(9, 11), align_corners=True,
        align_mode=1)
    add(b, u(1, 1, 9, 7), "bilinear", size=(4, 3), align_corners=False, align_mode=1)
    # The attribute, not the op type, picks the method.
    add(b, u(1, 1, 3, 4), "nearest", size=(5, 7), align_corners=False)
    n = "nearest_interp_v2"
    add(n, u(2, 2, 3, 3), "nearest", size=(7, 5), align_corners=False)
    add(n, u(1, 2, 7, 6), "nearest", size=(3, 4), align_corners=True)
    add(n, u(1, 1, 3, 4, dtype="float32"), "nearest", scale=(2.5, 1.5), align_corners=False)
    add(n, u(1, 2, 6, 5), "nearest", scale=(0.5, 0.7), align_corners=True)
    add(n, u(1, 1, 3, 4), None, size=(5, 6))
    add(n, u(1, 1, 5, 7), "nearest", size=(7, 3), align_corners=False)
    add(n, u(1, 1, 4, 6), "nearest", size=(9, 11), align_corners=True)
    add(n, u(1, 1, 6, 10), "nearest", scale=(1.7, 0.3), align_corners=False)
    return cases


def elementwise_cases(rng):
    """elementwise.json (tests/kernels/elementwise_kernels_test.cc): the
    binary elementwise ops where both operands broadcast (numpy's rule, axis
    -1: [3,1] and [1,4], [4] and [2,3,4], [2,1,4] and [3,1]), with Paddle's
    gradient op; one case per op of Y inside X at an explicit axis (Fluid's
    rule) for add, sub, mul and div (Paddle 2.6.2's elementwise_max_grad,
    min_grad and pow_grad fail there, "Broadcast dimension mismatch"). fp64;
    Y away from 0 for div, X positive for pow."""
    cases = []
    shapes = [((3, 1), (1, 4), -1), ((4,), (2, 3, 4), -1), ((2, 1, 4), (3, 1), -1),
              ((2, 3, 4), (3,), 1)]
    for op in ["elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div",
               "elementwise_max", "elementwise_min", "elementwise_pow"]:
        for xs, ys, axis in shapes:
            if axis != -1 and op in ("elementwise_max", "elementwise_min", "elementwise_pow"):
                continue
            x = rng.uniform(0.5, 2, size=xs) if op == "elementwise_pow" else \
                rng.uniform(-2, 2, size=xs)
            y = rng.uniform(-2, 2, size=ys)
            if op == "elementwise_div":
                y = np.where(y < 0, y - 0.5, y + 0.5)
            cases.append(run_static(op, {"X": [x], "Y": [y]}, {"axis": axis}, {"Out": 1},
                                    ["X_0", "Y_0"], rng))
    return cases


# unary_math.json: (op, attrs, input range) for Paddle 2.x's further
# element-wise ops; ranges keep away from each op's kinks and poles.
UNARY_MATH = [
    ("sqrt", {}, (0.2, 3.0)), ("rsqrt", {}, (0.2, 3.0)),
    ("reciprocal", {}, (0.2, 3.0)), ("sin", {}, (-3, 3)), ("cos", {}, (-3, 3)),
    ("tan", {}, (-1.2, 1.2)), ("asin", {}, (-0.9, 0.9)), ("acos", {}, (-0.9, 0.9)),
    ("atan", {}, (-3, 3)), ("sinh", {}, (-3, 3)), ("cosh", {}, (-3, 3)),
    ("erf", {}, (-2, 2)), ("log2", {}, (0.2, 3.0)), ("log10", {}, (0.2, 3.0)),
    ("log1p", {}, (-0.5, 3.0)), ("expm1", {}, (-3, 3)),
    ("floor", {}, (-3, 3)), ("ceil", {}, (-3, 3)), ("round", {}, (-3, 3)),
    ("silu", {}, (-4, 4)), ("softsign", {}, (-4, 4)), ("tanh_shrink", {}, (-3, 3)),
    ("logsigmoid", {}, (-6, 6)),
    ("relu6", {}, (-2, 8)),
    ("hard_sigmoid", {"slope": 0.2, "offset": 0.5}, (-4, 4)),
    ("softplus", {"beta": 2.0, "threshold": 4.0}, (-4, 4)),
    ("mish", {"threshold": 20.0}, (-4, 4)),
    ("elu", {"alpha": 0.7}, (-3, 3)), ("celu", {"alpha": 1.5}, (-3, 3)),
    ("selu", {"scale": 1.0507009873554805, "alpha": 1.6732632423543772}, (-3, 3)),
    ("hard_shrink", {"threshold": 0.5}, (-2, 2)),
    ("softshrink", {"lambda": 0.5}, (-2, 2)),
    ("thresholded_relu", {"threshold": 1.0}, (-3, 3)),
    ("brelu", {"t_min": -1.0, "t_max": 1.5}, (-3, 3)),
]


def unary_math_cases(rng):
    """unary_math.json (tests/kernels/unary_math_kernels_test.cc): each op
    of UNARY_MATH on 12 fp64 values of its range, kept 0.05 away from the
    kinks (0, +-0.5, 1, +-1, 1.5, 6, +-2.5, the integers and halves of
    floor/ceil/round), with Paddle's gradient op (sign has none)."""
    kinks = np.array([0.0, 0.5, -0.5, 1.0, -1.0, 1.5, 6.0, 2.5, -2.5])
    cases = []
    for op, attrs, (lo, hi) in UNARY_MATH:
        x = rng.uniform(lo, hi, size=(3, 4))
        near = np.min(np.abs(x[..., None] - kinks), axis=-1) < 0.05
        if op in ("floor", "ceil", "round"):
            near |= np.abs(x * 2 - np.round(x * 2)) < 0.1
        x = np.where(near, x + 0.13, x)
        cases.append(run_static(op, {"X": [x]}, attrs, {"Out": 1}, ["X_0"], rng))
    x = rng.uniform(-3, 3, size=(3, 4))
    x[0, 0] = 0.0
    cases.append(run_static("sign", {"X": [x]}, {}, {"Out": 1}, [], rng))
    return cases


def reduce_cases(rng):
    """reduce.json (tests/kernels/reduce_kernels_test.cc): reduce_max,
    reduce_min and reduce_prod over one dim, two dims (keep_dim) and all,
    fp64, with Paddle's gradient op (which reads X, Out and Out@GRAD); prod
    on values away from 0."""
    cases = []
    for op in ("reduce_max", "reduce_min", "reduce_prod"):
        for attrs in ({"dim": [1], "keep_dim": False, "reduce_all": False},
                      {"dim": [0, 2], "keep_dim": True, "reduce_all": False},
                      {"dim": [0], "keep_dim": False, "reduce_all": True}):
            x = rng.uniform(0.5, 1.5, size=(2, 3, 4)) * rng.choice([-1, 1], size=(2, 3, 4))
            cases.append(run_static(op, {"X": [x]}, attrs, {"Out": 1}, ["X_0"], rng))
    return cases


def shape_value_cases(rng):
    """shape_values.json (tests/kernels/fill_kernels_test.cc): ops whose
    output shape comes from input values: range in each dtype, counting up,
    down, by a fraction (Paddle adds Step value after value) and empty."""
    cases = []
    for dtype, start, end, step in (("int64", 0, 5, 1), ("int64", 10, 2, -3),
                                    ("int32", -4, 7, 2), ("float32", 0.5, 2.0, 0.3),
                                    ("float64", -1.0, 1.0, 0.1), ("int64", 3, 3, 1)):
        inputs = {slot: [np.array([v], dtype=dtype)]
                  for slot, v in (("Start", start), ("End", end), ("Step", step))}
        cases.append(run_static("range", inputs, {}, {"Out": 1}, [], rng))
    return cases


def pool2d_cases(rng):
    """pool2d.json (tests/kernels/pool2d_kernel_test.cc): max with
    ceil_mode and a bottom padding, so the last row of windows lies wholly
    in the padding (Paddle's max gives -FLT_MAX there), avg with ceil_mode
    inside the image, and a plain max; values without ties. (Paddle's avg
    over a window wholly in the padding is 0 / 0 = NaN; parex gives 0, as
    its pool3d, and the case is left out.)"""
    def u(*dims):
        return rng.permutation(int(np.prod(dims))).reshape(dims).astype("float64") / 8.0 - 4
    cases = []
    for kw in ({"pooling_type": "max", "ceil_mode": True, "paddings": [0, 1, 1, 1]},
               {"pooling_type": "avg", "ceil_mode": True, "paddings": [0, 0, 1, 1]},
               {"pooling_type": "max", "ceil_mode": False, "paddings": [0, 0, 0, 0]}):
        attrs = {"ksize": [2, 3], "strides": [2, 2], "global_pooling": False,
                 "exclusive": True, "adaptive": False, "padding_algorithm": "EXPLICIT",
                 "data_format": "NCHW"}
        attrs.update(kw)
        cases.append(run_static("pool2d", {"X": [u(1, 2, 4, 5)]}, attrs, {"Out": 1},
                                ["X_0"], rng))
    return cases


def more_ops_cases(rng):
    """more_ops.json (tests/kernels/more_ops_test.cc): comparisons and
    logic with both-way broadcasting, pow, fill_any_like, size, log_softmax
    and logsumexp (with their gradient ops), fp64 unless a case says
    otherwise."""
    cases = []
    x = rng.uniform(-2, 2, size=(3, 4))
    y = rng.uniform(-2, 2, size=(1, 4))
    y[0, 1] = x[1, 1]  # one equal pair
    for op in ("greater_than", "greater_equal", "less_equal", "not_equal"):
        cases.append(run_static(op, {"X": [x], "Y": [y]}, {"axis": -1}, {"Out": 1}, [], rng))
    a = rng.uniform(size=(3, 4)) > 0.5
    b = rng.uniform(size=(1, 4)) > 0.5
    for op in ("logical_and", "logical_or", "logical_xor"):
        cases.append(run_static(op, {"X": [a], "Y": [b]}, {}, {"Out": 1}, [], rng))
    cases.append(run_static("logical_not", {"X": [a]}, {}, {"Out": 1}, [], rng))
    pos = rng.uniform(0.5, 2.0, size=(3, 4))
    for factor in (2.0, 0.5, -1.5):
        cases.append(run_static("pow", {"X": [pos]}, {"factor": factor}, {"Out": 1}, ["X_0"], rng))
    for value, dtype in ((1.0, -1), (2.5, 5), (7.0, 3)):
        cases.append(run_static("fill_any_like", {"X": [x]}, {"value": value, "dtype": dtype},
                                {"Out": 1}, [], rng))
    cases.append(run_static("size", {"Input": [x]}, {}, {"Out": 1}, [], rng))
    z = rng.uniform(-3, 3, size=(2, 3, 4))
    for axis in (-1, 1):
        cases.append(run_static("log_softmax", {"X": [z]}, {"axis": axis}, {"Out": 1},
                                ["X_0"], rng))
    for attrs in ({"axis": [1], "keepdim": False, "reduce_all": False},
                  {"axis": [0, 2], "keepdim": True, "reduce_all": False},
                  {"axis": [0], "keepdim": False, "reduce_all": True}):
        cases.append(run_static("logsumexp", {"X": [z]}, attrs, {"Out": 1}, ["X_0"], rng))
    return cases


def layout_cases(rng):
    """layout_ops.json (tests/kernels/layout_ops_test.cc): tile, flip, roll
    and index_select with their gradient ops, assign_value and linspace;
    fp64 unless a case says otherwise."""
    cases = []
    x = rng.uniform(-2, 2, size=(2, 3, 4))
    for times in ([2, 1, 1], [1, 2, 3], [2, 1, 1, 2]):
        cases.append(run_static("tile", {"X": [x]}, {"repeat_times": times}, {"Out": 1},
                                ["X_0"], rng))
    for axis in ([0], [1, 2], [-1]):
        # Paddle's gradient of flip is a flip op (no flip_grad): forward only.
        cases.append(run_static("flip", {"X": [x]}, {"axis": axis}, {"Out": 1}, [], rng))
    for shifts, axis in (([1], [0]), ([2, -1], [1, 2]), ([5], [])):
        cases.append(run_static("roll", {"X": [x]}, {"shifts": shifts, "axis": axis},
                                {"Out": 1}, ["X_0"], rng))
    for dim, index in ((1, [2, 0, 2]), (0, [1]), (-1, [3, 1])):
        cases.append(run_static("index_select",
                                {"X": [x], "Index": [np.array(index, dtype="int64")]},
                                {"dim": dim}, {"Out": 1}, ["X_0"], rng))
    cases.append(run_static("assign_value", {}, {"shape": [2, 3], "dtype": 5,
                                                  "fp32_values": [1.5, -2, 3, 0.25, 5, 6]},
                            {"Out": 1}, [], rng))
    cases.append(run_static("assign_value", {}, {"shape": [3], "dtype": 3,
                                                  "int64_values": [7, -1, 9]},
                            {"Out": 1}, [], rng))
    for dtype, start, stop, num in (("float32", 0.0, 1.0, 5), ("float64", -2.0, 3.0, 7),
                                    ("int64", 0, 9, 4)):
        inputs = {"Start": [np.array([start], dtype="float32" if dtype == "int64" else dtype)],
                  "Stop": [np.array([stop], dtype="float32" if dtype == "int64" else dtype)],
                  "Num": [np.array([num], dtype="int32")]}
        dtype_code = {"float32": 5, "float64": 6, "int64": 3}[dtype]
        cases.append(run_static("linspace", inputs, {"dtype": dtype_code}, {"Out": 1}, [], rng))
    return cases


def nn_ops_cases(rng):
    """nn_ops.json (tests/kernels/nn_ops_test.cc): prelu (all, channel,
    element modes), pixel_shuffle, p_norm, frobenius_norm and reduce_amax,
    with Paddle's gradient ops; fp64, inputs away from kinks."""
    cases = []
    x = rng.uniform(0.2, 2, size=(2, 3, 2, 2)) * rng.choice([-1, 1], size=(2, 3, 2, 2))
    for mode, alpha_shape in (("all", [1]), ("channel", [3]), ("element", [1, 3, 2, 2])):
        alpha = rng.uniform(0.05, 0.5, size=alpha_shape)
        cases.append(run_static("prelu", {"X": [x], "Alpha": [alpha]},
                                {"mode": mode, "data_format": "NCHW"}, {"Out": 1},
                                ["X_0", "Alpha_0"], rng))
    ps = rng.uniform(-1, 1, size=(2, 8, 2, 3))
    cases.append(run_static("pixel_shuffle", {"X": [ps]}, {"upscale_factor": 2,
                                                            "data_format": "NCHW"},
                            {"Out": 1}, ["X_0"], rng))
    z = rng.uniform(0.2, 2, size=(2, 3, 4)) * rng.choice([-1, 1], size=(2, 3, 4))
    for attrs in ({"porder": 2.0, "axis": -1, "keepdim": False, "asvector": False,
                   "epsilon": 1e-12},
                  {"porder": 1.0, "axis": 1, "keepdim": True, "asvector": False,
                   "epsilon": 1e-12},
                  {"porder": 3.0, "axis": 0, "keepdim": False, "asvector": True,
                   "epsilon": 1e-12}):
        cases.append(run_static("p_norm", {"X": [z]}, attrs, {"Out": 1}, ["X_0"], rng))
    for attrs in ({"dim": [1, 2], "keep_dim": False, "reduce_all": False},
                  {"dim": [0, 1], "keep_dim": True, "reduce_all": False}):
        cases.append(run_static("frobenius_norm", {"X": [z]}, attrs, {"Out": 1}, ["X_0"], rng))
    t = np.round(rng.uniform(-2, 2, size=(2, 3, 4)), 0)  # ties
    for attrs in ({"dim": [1], "keep_dim": False, "reduce_all": False},
                  {"dim": [0, 2], "keep_dim": True, "reduce_all": False}):
        cases.append(run_static("reduce_amax", {"X": [t]}, attrs, {"Out": 1}, ["X_0"], rng))
    return cases


def more_nn_cases(rng):
    """more_nn.json (tests/kernels/nn_ops_test.cc): argsort (both
    directions, with Paddle's gradient op) and max_pool2d_with_index
    (adaptive and windowed, Mask), fp64; strided_slice (steps, negative
    steps, out-of-range starts and ends; Paddle clamps a negative end to 0
    where numpy would run past it: x[-1:-4:-1] of 3 rows gives 2)."""
    cases = []
    x = rng.permutation(60).reshape(3, 4, 5).astype("float64") / 7.0 - 4
    for attrs in ({"axes": [1, 2], "starts": [0, 4], "ends": [4, 0], "strides": [2, -2],
                   "infer_flags": [1, 1], "decrease_axis": []},
                  {"axes": [0], "starts": [-1], "ends": [-4], "strides": [-1],
                   "infer_flags": [1], "decrease_axis": []},
                  {"axes": [0, 2], "starts": [10, -9], "ends": [-10, 99], "strides": [-1, 3],
                   "infer_flags": [1, 1], "decrease_axis": []}):
        cases.append(run_static("strided_slice", {"Input": [x]}, attrs, {"Out": 1},
                                ["Input_0"], rng))
    for descending in (False, True):
        cases.append(run_static("argsort", {"X": [x]}, {"axis": -1, "descending": descending},
                                {"Out": 1, "Indices": 1}, ["X_0"], rng))
    img = rng.permutation(2 * 3 * 6 * 6).reshape(2, 3, 6, 6).astype("float64") / 9.0
    for attrs in ({"ksize": [2, 2], "strides": [2, 2], "paddings": [0, 0],
                   "global_pooling": False, "adaptive": False},
                  {"ksize": [4, 3], "strides": [1, 1], "paddings": [0, 0],
                   "global_pooling": False, "adaptive": True}):
        cases.append(run_static("max_pool2d_with_index", {"X": [img]}, attrs,
                                {"Out": 1, "Mask": 1}, ["X_0"], rng))
    return cases


def group_norm_cases(rng):
    """group_norm.json (tests/kernels/nn_ops_test.cc): group_norm in NCHW and
    NHWC (several groups, one group) and instance_norm, with their gradient
    ops (Mean and Variance of group_norm; instance_norm's SavedVariance is
    1 / sqrt(var + epsilon)); fp64."""
    cases = []
    x = rng.uniform(-2, 2, size=(2, 6, 3, 4))
    scale, bias = rng.uniform(0.5, 1.5, size=6), rng.uniform(-0.5, 0.5, size=6)
    for groups, layout in ((3, "NCHW"), (1, "NCHW"), (2, "NHWC")):
        xi = x.transpose(0, 2, 3, 1).copy() if layout == "NHWC" else x
        cases.append(run_static("group_norm", {"X": [xi], "Scale": [scale], "Bias": [bias]},
                                {"groups": groups, "epsilon": 1e-5, "data_layout": layout},
                                {"Y": 1, "Mean": 1, "Variance": 1},
                                ["X_0", "Scale_0", "Bias_0"], rng))
    for xi in (x, rng.uniform(-1, 1, size=(3, 2, 5))):
        c = xi.shape[1]
        cases.append(run_static("instance_norm",
                                {"X": [xi], "Scale": [rng.uniform(0.5, 1.5, size=c)],
                                 "Bias": [rng.uniform(-0.5, 0.5, size=c)]},
                                {"epsilon": 1e-5},
                                {"Y": 1, "SavedMean": 1, "SavedVariance": 1},
                                ["X_0", "Scale_0", "Bias_0"], rng))
    return cases


def shape_tensor_cases(rng):
    """shape_tensors.json (tests/kernels/shape_kernels_test.cc): shapes and
    bounds given as tensors, as dynamic-shape exports write them: reshape2's
    ShapeTensor (one int32 per extent, 0 and -1 included) and Shape (one
    int64 tensor), expand_v2's expand_shapes_tensor and Shape, slice's
    StartsTensorList / EndsTensorList and StartsTensor / EndsTensor; fp64, with
    Paddle's gradient ops. The attributes hold the same values: Paddle 2.6's
    static backward reads them instead of the tensors (a reshape2 whose
    attribute says [4, 3, 2] and whose ShapeTensor says [2, 6, 2] fails
    there), so tests/kernels/shape_kernels_test.cc checks by hand that the
    tensors win."""
    cases = []
    x = rng.uniform(-1, 1, size=(2, 3, 4))
    one = lambda v, t="int32": np.array([v], dtype=t)  # noqa: E731
    cases.append(run_static("reshape2", {"X": [x], "ShapeTensor": [one(0), one(-1), one(2)]},
                            {"shape": [2, 6, 2]}, {"Out": 1, "XShape": 1}, ["X_0"], rng))
    cases.append(run_static("reshape2", {"X": [x], "Shape": [np.array([4, 6], dtype="int64")]},
                            {"shape": [4, 6]}, {"Out": 1, "XShape": 1}, ["X_0"], rng))
    col = rng.uniform(-1, 1, size=(3, 1))
    cases.append(run_static("expand_v2", {"X": [col], "expand_shapes_tensor":
                                          [one(2), one(-1), one(5)]},
                            {"shape": [2, -1, 5]}, {"Out": 1}, ["X_0"], rng))
    cases.append(run_static("expand_v2", {"X": [col], "Shape": [np.array([3, 4], dtype="int64")]},
                            {"shape": [3, 4]}, {"Out": 1}, ["X_0"], rng))
    cases.append(run_static("slice", {"Input": [x], "StartsTensorList": [one(1), one(-3, "int64")],
                                      "EndsTensorList": [one(3), one(99, "int64")]},
                            {"axes": [1, 2], "starts": [1, -3], "ends": [3, 99],
                             "decrease_axis": [], "infer_flags": [-1, -1]},
                            {"Out": 1}, ["Input_0"], rng))
    cases.append(run_static("slice", {"Input": [x], "StartsTensor": [np.array([1], dtype="int64")],
                                      "EndsTensor": [np.array([2], dtype="int64")]},
                            {"axes": [0], "starts": [1], "ends": [2], "decrease_axis": [0],
                             "infer_flags": [-1]},
                            {"Out": 1}, [], rng))  # Paddle fetches a bool tensor as its gradient
    img = rng.uniform(-1, 1, size=(1, 2, 3, 4))
    base = {"data_layout": "NCHW", "out_d": 0, "align_corners": False, "align_mode": 1}
    cases.append(run_static("bilinear_interp_v2",
                            {"X": [img], "Scale": [np.array([1.5, 2.0], dtype="float32")]},
                            dict(base, interp_method="bilinear", out_h=0, out_w=0,
                                 scale=[1.5, 2.0]), {"Out": 1}, ["X_0"], rng))
    cases.append(run_static("nearest_interp_v2",
                            {"X": [img], "OutSize": [np.array([5, 3], dtype="int32")]},
                            dict(base, interp_method="nearest", out_h=5, out_w=3),
                            {"Out": 1}, ["X_0"], rng))
    cases.append(run_static("bilinear_interp_v2",
                            {"X": [img], "SizeTensor": [one(4), one(7)]},
                            dict(base, interp_method="bilinear", out_h=4, out_w=7,
                                 align_corners=True), {"Out": 1}, ["X_0"], rng))
    vol = rng.uniform(-1, 1, size=(1, 2, 2, 3, 3))
    pads = [1, 0, 2, 1, 0, 1]
    cases.append(run_static("pad3d", {"X": [vol], "Paddings": [np.array(pads, dtype="int32")]},
                            {"paddings": pads, "mode": "reflect", "value": 0.0,
                             "data_format": "NCDHW"}, {"Out": 1}, ["X_0"], rng))
    cases.append(run_static("top_k_v2", {"X": [rng.permutation(24).reshape(4, 6) / 5.0],
                                         "K": [np.array([2], dtype="int32")]},
                            {"k": 2, "axis": -1, "largest": True, "sorted": True},
                            {"Out": 1, "Indices": 1}, [], rng))  # grad: top_k_v2.json
    return cases


def channels_last_cases(rng):
    """channels_last.json (tests/kernels/conv2d_kernel_test.cc): conv2d,
    depthwise_conv2d, pool2d (max and avg), conv2d_transpose, the bilinear /
    nearest interps, pixel_shuffle and prelu (every mode) with data_format
    (data_layout) NHWC, and conv3d, pool3d and pad3d with NDHWC, with
    Paddle's gradient ops; fp64."""
    def u(*dims):
        return rng.uniform(-2, 2, size=dims)
    cases = []
    for op, x, w, attrs in (
            ("conv2d", u(2, 5, 6, 3), u(4, 3, 3, 2),
             conv_attrs(strides=[2, 1], paddings=[1, 0, 1, 1], data_format="NHWC")),
            ("conv2d", u(1, 4, 4, 4), u(2, 2, 3, 3),
             conv_attrs(groups=2, padding_algorithm="SAME", data_format="NHWC")),
            ("depthwise_conv2d", u(1, 5, 5, 3), u(3, 1, 3, 3),
             conv_attrs(groups=3, paddings=[1, 1], data_format="NHWC"))):
        cases.append(run_static(op, {"Input": [x], "Filter": [w]}, attrs, {"Output": 1},
                                ["Input_0", "Filter_0"], rng))
    img = rng.permutation(2 * 4 * 5 * 3).reshape(2, 4, 5, 3).astype("float64") / 8.0 - 4
    for kw in ({"pooling_type": "max", "paddings": [0, 1, 1, 1], "ceil_mode": True},
               {"pooling_type": "avg", "paddings": [0, 0, 0, 0], "ceil_mode": False}):
        attrs = {"ksize": [2, 3], "strides": [2, 2], "global_pooling": False,
                 "exclusive": True, "adaptive": False, "padding_algorithm": "EXPLICIT",
                 "data_format": "NHWC"}
        attrs.update(kw)
        cases.append(run_static("pool2d", {"X": [img]}, attrs, {"Out": 1}, ["X_0"], rng))
    cases.append(run_static("conv2d_transpose", {"Input": [u(1, 3, 4, 2)], "Filter": [u(2, 3, 3, 3)]},
                            conv_attrs(strides=[2, 1], paddings=[1, 0], data_format="NHWC",
                                       output_padding=[], output_size=[]),
                            {"Output": 1}, ["Input_0", "Filter_0"], rng))
    for method in ("bilinear", "nearest"):
        cases.append(run_static(method + "_interp_v2", {"X": [u(1, 3, 4, 2)]},
                                {"data_layout": "NHWC", "out_d": 0, "out_h": 5, "out_w": 7,
                                 "interp_method": method, "align_corners": False,
                                 "align_mode": 1}, {"Out": 1}, ["X_0"], rng))
    # Appended after the cases above, so their draws stay as they were.
    cases.append(run_static("pixel_shuffle", {"X": [u(2, 3, 2, 8)]},
                            {"upscale_factor": 2, "data_format": "NHWC"}, {"Out": 1},
                            ["X_0"], rng))
    for mode, alpha in (("channel", u(1, 1, 1, 3)), ("channel", u(3)),
                        ("element", u(1, 2, 4, 3)), ("all", u(1))):
        cases.append(run_static("prelu", {"X": [u(2, 2, 4, 3)], "Alpha": [alpha]},
                                {"mode": mode, "data_format": "NHWC"}, {"Out": 1},
                                ["X_0", "Alpha_0"], rng))
    cases.append(run_static("conv3d", {"Input": [u(1, 3, 4, 3, 2)], "Filter": [u(2, 2, 2, 3, 2)]},
                            conv_attrs(strides=[1, 2, 1], paddings=[1, 0, 1],
                                       dilations=[1, 1, 1], data_format="NDHWC"),
                            {"Output": 1}, ["Input_0", "Filter_0"], rng))
    vol = rng.permutation(2 * 4 * 4 * 3 * 2).reshape(2, 4, 4, 3, 2).astype("float64") / 8.0 - 6
    for kw in ({"pooling_type": "max", "paddings": [1, 0, 1], "ceil_mode": False},
               {"pooling_type": "avg", "paddings": [0, 1, 0], "ceil_mode": True}):
        attrs = {"ksize": [2, 2, 2], "strides": [2, 2, 1], "global_pooling": False,
                 "exclusive": True, "adaptive": False, "padding_algorithm": "EXPLICIT",
                 "data_format": "NDHWC"}
        attrs.update(kw)
        cases.append(run_static("pool3d", {"X": [vol]}, attrs, {"Out": 1}, ["X_0"], rng))
    for mode in ("reflect", "constant"):
        cases.append(run_static("pad3d", {"X": [u(1, 2, 3, 3, 2)]},
                                {"paddings": [1, 0, 2, 1, 0, 1], "mode": mode, "value": 0.5,
                                 "data_format": "NDHWC"}, {"Out": 1}, ["X_0"], rng))
    return cases


# (file, cases, seed of the file's own generator)
OP_GROUP_FILES = [
    ("depthwise_conv2d.json", depthwise_conv2d_cases, 2602),
    ("conv2d_transpose.json", conv2d_transpose_cases, 2603),
    ("pool3d.json", pool3d_cases, 2604),
    ("conv3d.json", conv3d_cases, 2605),
    ("pad3d.json", pad3d_cases, 2606),
    ("interp.json", interp_cases, 2607),
    ("elementwise.json", elementwise_cases, 2608),
    ("unary_math.json", unary_math_cases, 2609),
    ("reduce.json", reduce_cases, 2610),
    ("shape_values.json", shape_value_cases, 2611),
    ("pool2d.json", pool2d_cases, 2612),
    ("more_ops.json", more_ops_cases, 2613),
    ("layout_ops.json", layout_cases, 2614),
    ("nn_ops.json", nn_ops_cases, 2615),
    ("more_nn.json", more_nn_cases, 2616),
    ("group_norm.json", group_norm_cases, 2617),
    ("shape_tensors.json", shape_tensor_cases, 2618),
    ("channels_last.json", channels_last_cases, 2619),
]


if __name__ == "__main__":
    import sys
    if sys.argv[1:2] == ["--only"]:  # one group of OP_GROUP_FILES, by hand
        paddle.enable_static()
        for name, make, seed in OP_GROUP_FILES:
            if name == sys.argv[2]:
                cases = make(np.random.RandomState(seed))
                with open(os.path.join(HERE, name), "w") as f:
                    json.dump({"paddle": paddle.__version__, "cases": cases}, f,
                              indent=1, allow_nan=False)
                print(len(cases), "cases in", name)
    else:
        main()
