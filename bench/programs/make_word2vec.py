#!/usr/bin/env python3
"""Writes the word2vec-style program of bench/pserver_bench.py with
PaddlePaddle 2.6 (run by hand; the bench never needs Paddle): 4 context ids
-> embedding [1000000, 16] with is_sparse -> fc 32 relu -> fc 10 -> softmax
cross entropy, SGD 0.5, as word2vec/main.pdmodel and startup.pdmodel.

    python3 bench/programs/make_word2vec.py
"""
import os

import paddle

paddle.enable_static()


def main():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "word2vec")
    os.makedirs(here, exist_ok=True)
    main_prog, startup = paddle.static.Program(), paddle.static.Program()
    main_prog.random_seed = startup.random_seed = 11
    with paddle.static.program_guard(main_prog, startup):
        ids = paddle.static.data("ids", [-1, 4, 1], "int64")
        label = paddle.static.data("label", [-1, 1], "int64")
        emb = paddle.static.nn.embedding(
            ids, size=[1000000, 16], is_sparse=True,
            param_attr=paddle.ParamAttr(
                name="emb",
                initializer=paddle.nn.initializer.Uniform(-0.5, 0.5)))
        hidden = paddle.static.nn.fc(paddle.reshape(emb, [-1, 64]), 32,
                                     activation="relu")
        logits = paddle.static.nn.fc(hidden, 10)
        loss = paddle.mean(
            paddle.nn.functional.softmax_with_cross_entropy(logits, label))
        paddle.optimizer.SGD(learning_rate=0.5).minimize(loss)
    for name, prog in (("main", main_prog), ("startup", startup)):
        with open(os.path.join(here, name + ".pdmodel"), "wb") as f:
            f.write(prog.desc.serialize_to_string())
    print("wrote", here, "loss", loss.name)


if __name__ == "__main__":
    main()
