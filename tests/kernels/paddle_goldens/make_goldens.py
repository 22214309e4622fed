#!/usr/bin/env python3
"""Golden outputs of PaddlePaddle 2.6.2 for parex's kernels, in float64:
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
                    sum(w * Y) with respect to x, scale and bias.
Run: python3 -m venv v && v/bin/pip install paddlepaddle==2.6.2 &&
     v/bin/python make_goldens.py
Never needed by CI: the output is committed."""
import json
import os

import numpy as np
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
    # Paddle breaks by the lower index.
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


if __name__ == "__main__":
    main()
