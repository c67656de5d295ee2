"""Every kernel against numpy on random inputs with odd sizes (1, 7, 33), in the simulator."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from numpy.lib.stride_tricks import sliding_window_view

import memlab as ml
import memlab.cuda as mc

ODD = [1, 7, 33]
rng = np.random.default_rng(11)


def rand(*shape):
    return np.asarray(rng.standard_normal(shape), dtype=np.float32)


def dev(a):
    return mc.to_device(np.asarray(a))


def run(fn, out_shape, *args, **kw):
    out = mc.device_empty(out_shape)
    fn(*[dev(a) if isinstance(a, (np.ndarray, np.generic)) else a for a in args], out, **kw)
    return out.copy_to_host()


def close(got, want, tol=1e-5):
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


NUMPY_UNARY = {"identity": lambda x: x, "neg": np.negative, "exp": np.exp,
               "log": np.log, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
               "tanh": np.tanh, "relu": lambda x: np.maximum(x, 0)}
NUMPY_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
                "relu_grad": lambda x, g: g * (x > 0)}
shapes = st.lists(st.sampled_from(ODD), min_size=0, max_size=3).map(tuple)


@settings(max_examples=10)
@given(shapes, st.sampled_from(sorted(NUMPY_UNARY)))
def test_unary_kernels(shape, name):
    x = rand(*shape)
    if name == "log":
        x = np.abs(x) + np.float32(0.5)
    close(run(lambda a, o: mc.unary(name, a, o), shape, x), NUMPY_UNARY[name](x))


@settings(max_examples=12)
@given(shapes, st.sampled_from(sorted(NUMPY_BINARY)), st.integers(0, 3), st.integers(0, 3))
def test_binary_kernels_broadcast_scalars_and_biases(shape, name, cut_a, cut_b):
    """Each operand may lose leading axes or have axes set to 1: a scalar, a bias row, a column."""
    a_shape = tuple(1 if i < cut_a % (len(shape) + 1) else n for i, n in enumerate(shape))
    b_shape = shape[min(cut_b, len(shape)):]
    a, b = rand(*a_shape), rand(*b_shape)
    if name == "div":
        b = np.abs(b) + np.float32(0.5)
    want = np.asarray(NUMPY_BINARY[name](a, b))
    close(run(lambda x, y, o: mc.binary(name, x, y, o), want.shape, a, b), want)


def test_fill_place_take():
    close(run(lambda o: mc.fill(o, 2.5), (7, 33)), np.full((7, 33), 2.5))
    x, big = rand(7, 5), np.zeros((7, 33), np.float32)
    out = dev(big)
    mc.place(dev(x), out, 1, 20)
    want = big.copy()
    want[:, 20:25] = x
    close(out.copy_to_host(), want)
    y = rand(7, 33)
    close(run(lambda a, o: mc.take(a, o, 1, 3), (7, 11), y), y[:, 3:14])


@pytest.mark.parametrize("shape,axes", [((1,), [0]), ((7,), [0]), ((33,), [0]), ((7, 5), [0]),
                                        ((5, 7), [1]), ((3, 7, 5), [0, 2]), ((1, 3, 7), [1])])
def test_sum_and_mean_along_axes(shape, axes):
    x = rand(*shape)
    out_shape = tuple(n for i, n in enumerate(shape) if i not in axes)
    close(run(lambda a, o: mc.reduce_axes(a, o, axes), out_shape, x), x.sum(axis=tuple(axes)), 1e-4)
    close(run(lambda a, o: mc.reduce_axes(a, o, axes, mean=True), out_shape, x),
          x.mean(axis=tuple(axes)), 1e-5)


@pytest.mark.parametrize("n", ODD)
def test_sum_and_mean_of_all(n):
    x = rand(n, 3)
    close(run(mc.reduce_all, (), x), x.sum(), 1e-4)
    close(run(lambda a, o: mc.reduce_all(a, o, mean=True), (), x), x.mean())


@pytest.mark.parametrize("shape,to", [((7, 5), (5,)), ((7, 5), (1, 5)), ((7, 5), (7, 1)),
                                      ((3, 7, 5), (7, 1)), ((1,), ())])
def test_sum_to_is_the_bias_gradient(shape, to):
    x = rand(*shape)
    want = np.sum(x, axis=tuple(i for i in range(len(shape)) if i < len(shape) - len(to)
                                or to[i - len(shape) + len(to)] == 1 and shape[i] != 1),
                  keepdims=True).reshape(to)
    close(run(mc.sum_to, to, x), want, 1e-4)


@pytest.mark.parametrize("n,k,m,ta,tb,tile", [(1, 1, 1, False, False, None), (7, 33, 5, False, False, None),
                                              (7, 5, 33, True, False, None), (5, 7, 7, False, True, None),
                                              (7, 7, 1, True, True, 4), (7, 9, 3, False, False, 16)])
def test_tiled_matmul_with_transposes(n, k, m, ta, tb, tile):
    a = rand(k, n) if ta else rand(n, k)
    b = rand(m, k) if tb else rand(k, m)
    want = (a.T if ta else a) @ (b.T if tb else b)
    close(run(lambda x, y, o: mc.matmul(x, y, o, ta, tb, tile=tile), (n, m), a, b), want, 1e-4)


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("n,c", [(1, 1), (7, 5), (2, 33)])
def test_softmax_onehot_and_cross_entropy(n, c):
    x, y = rand(n, c) * 3, rng.integers(0, c, n).astype(np.int32)
    close(run(mc.softmax, (n, c), x), _softmax(x))
    onehot = np.eye(c, dtype=np.float32)[y]
    close(run(mc.onehot, (n, c), y), onehot)
    lse = np.log(np.exp(x - x.max(1, keepdims=True)).sum(1)) + x.max(1)
    close(run(mc.softmax_xent, (), x, y), np.mean(lse - x[np.arange(n), y]))
    g = np.float32(1.7).reshape(())
    close(run(mc.softmax_xent_backward, (n, c), x, y, g), (_softmax(x) - onehot) * 1.7 / n)


def test_cross_entropy_agrees_with_the_graph_op():
    """The kernel and memlab's numpy op (an independent implementation) give the same loss."""
    x, y = rand(7, 5), rng.integers(0, 5, 7).astype(np.int32)
    xs, ys = ml.placeholder("x", (7, 5)), ml.placeholder("y", (7,), np.int32)
    want = ml.Executor(ml.softmax_cross_entropy(xs, ys)).run({xs: x, ys: y})[0]
    close(run(mc.softmax_xent, (), x, y), want)


def _windows(x, k):
    r = k // 2
    return sliding_window_view(np.pad(x, [(0, 0)] * (x.ndim - 1) + [(r, r)]), k, axis=-1)


@pytest.mark.parametrize("shape,k", [((1,), 1), ((7,), 3), ((3, 33), 5), ((2, 7), 9)])
def test_pool_conv_flip_wgrad(shape, k):
    x, w, g = rand(*shape), rand(k), rand(*shape)
    close(run(lambda a, o: mc.pool(a, o, k), shape, x), _windows(x, k).mean(-1))
    close(run(mc.conv, shape, x, w), np.einsum("...k,k->...", _windows(x, k), w), 1e-4)
    close(run(mc.flip, (k,), w), w[::-1])
    want = np.einsum("bik,bi->k", _windows(x, k).reshape(-1, shape[-1], k), g.reshape(-1, shape[-1]))
    close(run(mc.conv_wgrad, (k,), x, g), want, 1e-4)


def test_tree_rounds_follow_the_halving_rule_and_the_kernel():
    """tree_rounds (numpy) against a hand computation, and its total against the kernel's."""
    import numpy as np
    rounds = mc.tree_rounds([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], threads=4)
    assert [list(r) for r in rounds] == [[6, 8, 10, 4], [16, 12, 10, 4], [28, 12, 10, 4]]
    x = np.random.default_rng(3).standard_normal((7, 1)).astype(np.float32)
    out = mc.device_empty((1,))
    mc.reduce_axes(mc.to_device(x), out, axes=[0])
    assert out.copy_to_host()[0] == mc.tree_rounds(x[:, 0])[-1][0]     # same adds, same order
    for bad in (0, 3, 2.0):
        with pytest.raises(ml.ShapeError, match="power of two"):
            mc.tree_rounds([1.0], threads=bad)
