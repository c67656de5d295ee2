"""The codec that carries plain data from a student's kernel to the judge: round trips, and every
kind of message it must refuse (objects, pickles, oversize, deep nesting, malformed tags)."""
from __future__ import annotations

import json
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.grading.codec import CodecError, decode, encode

_scalars = st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.text(max_size=20) | \
    st.floats(allow_nan=False)
_keys = st.none() | st.booleans() | st.integers(-50, 50) | st.text(max_size=8) | \
    st.tuples(st.integers(0, 5), st.text(max_size=3))
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
                       | st.dictionaries(_keys, inner, max_size=4)
                       | st.sets(st.integers(-5, 5) | st.text(max_size=3), max_size=4), max_leaves=20)


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and \
            np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


@settings(max_examples=60, deadline=None)
@given(_values)
def test_plain_values_round_trip_with_their_types(value):
    assert _same(decode(encode(value)), value)


@pytest.mark.parametrize("dtype", ["bool", "int8", "int64", "uint16", "float16", "float32", "float64"])
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3), (2, 0, 4)])
def test_numeric_arrays_and_scalars_round_trip(dtype, shape):
    a = (np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) % 3).astype(dtype)
    back = decode(encode(a))
    assert _same(back, a)
    s = a.dtype.type(1)
    assert type(decode(encode(s))) is type(s) and decode(encode(s)) == s


def test_non_contiguous_arrays_keep_their_values():
    a = np.arange(12.0).reshape(3, 4)[:, ::2].T
    assert _same(decode(encode(a)), np.ascontiguousarray(a))


def test_nan_and_infinities_round_trip():
    # a NaN answer is a wrong answer (the comparison decides); the codec carries it exactly
    value = [math.nan, math.inf, -math.inf, np.array([np.nan, np.inf, 1.0])]
    back = decode(encode(value))
    assert math.isnan(back[0]) and back[1] == math.inf and back[2] == -math.inf
    assert np.isnan(back[3][0]) and back[3][1] == np.inf
    for bare in ("NaN", "[Infinity]", "[-Infinity]"):       # JSON's non-standard constants: refused
        with pytest.raises(CodecError):
            decode(bare)


class Thing:
    def __eq__(self, other):
        return True


@pytest.mark.parametrize("value", [Thing(), object(), [1, Thing()], {"k": Thing()}, print, type,
                                   np.array([Thing()], dtype=object), np.array(["a"]), 1 + 2j,
                                   np.array([1 + 2j]), b"bytes", range(3)])
def test_objects_are_not_plain(value):
    with pytest.raises(CodecError):
        encode(value)


@pytest.mark.parametrize("text", [
    '{"a": 1}',                                   # a bare dict: every dict is {"$d": ...}
    '{"$d": [[1]]}', '{"$d": [[[1], 2]]}',        # a pair that is not a pair; an unhashable key
    '{"$set": [[1]]}', '{"$t": 3}', '{"$zz": 1}', '{"$d": 1, "$t": 2}',
    '{"$a": ["O", [1], "AA=="]}',                 # object dtype
    '{"$a": ["<U1", [1], "YQAAAA=="]}',           # strings
    '{"$a": ["<f8", [2], "AAAAAAAA8D8="]}',       # 8 bytes for a shape of 2 float64
    '{"$a": ["<f8", [-1], ""]}', '{"$a": ["<f8", [1], "not base64!"]}',
    '{"$s": ["<f8", "AAA="]}', '{"$f": "big"}',
    '{"$x": ["node", 1]}',                        # an extension nobody asked for
    "not json", "",
])
def test_malformed_messages_are_refused(text):
    with pytest.raises(CodecError):
        decode(text)


def test_pickles_are_refused():
    with pytest.raises(CodecError):
        decode(pickle.dumps({"a": 1}))


def test_size_depth_and_item_caps():
    with pytest.raises(CodecError):
        decode(encode(list(range(1000))), max_bytes=100)
    with pytest.raises(CodecError):
        encode(list(range(1000)), max_bytes=100)
    deep = []
    for _ in range(80):
        deep = [deep]
    with pytest.raises(CodecError):
        encode(deep)
    with pytest.raises(CodecError):
        decode(json.dumps(deep))
    with pytest.raises(CodecError):                 # far deeper than Python's recursion limit
        decode("[" * 200_000 + "]" * 200_000)
    with pytest.raises(CodecError):
        decode(encode(list(range(100))), max_items=50)
    with pytest.raises(CodecError):                 # an array counts by its size too
        decode(encode(np.zeros(1_000_000, np.uint8)), max_items=1000)


def test_extensions_go_through_the_callers_hooks():
    class Node:
        def __init__(self, key):
            self.key = key
    text = encode({"n": Node(7)}, ext=lambda x: ("node", x.key) if isinstance(x, Node) else None)
    assert decode(text, ext=lambda kind, key: (kind, key)) == {"n": ("node", 7)}
    with pytest.raises(CodecError):
        decode(text)


# ---------------------------------------------------------------------------------------------
# memlab's structures cross by the codecs they register (memlab.plaindata), in the same wire format


def _obj_ext(x):
    from memlab import plaindata
    known = plaindata.to_plain(x)
    return None if known is None else ("obj", known)


def _obj_back(kind, payload):
    from memlab import plaindata
    assert kind == "obj"
    return plaindata.from_plain(*payload)


def test_structures_cross_by_their_registered_codecs():
    import memlab as ml
    from memlab.checkpoint import Backward, Forward, Free, hetero_chain
    tree = ml.Tree([-1, 0, 0], [1, 2, 3], [0, 1, 0])
    graph = ml.TaskGraph()
    graph.add_task("a", 1.0, 2)
    graph.add_task("b", 2.0, 1)
    graph.add_edge("a", "b", 3)
    chain = hetero_chain([4, 2, 1], [1.0, 2.0])
    actions = [Forward(0, True), Backward(1), Free("y1")]
    back = decode(encode([tree, graph, chain, actions], _obj_ext), _obj_back)
    assert (back[0].parent, back[0].f, back[0].m) == (tree.parent, tree.f, tree.m)
    assert back[1].to_plain() == graph.to_plain() and back[2].sizes == chain.sizes
    assert back[3] == actions
    # the wire format, written out by hand: an extension "obj" holding (kind, plain data); a tree
    # keeps its sizes as floats
    assert encode(tree, _obj_ext) == ('{"$x":["obj",{"$t":["tree",{"$d":[["parent",[-1,0,0]],'
                                      '["f",[1.0,2.0,3.0]],["m",[0.0,1.0,0.0]]]}]}]}')


def test_the_registry_refuses_unknown_kinds_clashes_and_subclasses():
    import memlab as ml
    from memlab import plaindata
    from memlab.plaindata import PlainDataError
    with pytest.raises(PlainDataError, match="no structure crosses as 'nope'"):
        plaindata.from_plain("nope", {})
    with pytest.raises(CodecError):                       # inside a message: refused with a reason
        decode('{"$x":["obj",{"$t":["nope",1]}]}', _obj_back)

    class Other:
        pass
    with pytest.raises(PlainDataError, match="already registered"):
        plaindata.register("tree", Other, lambda x: 0, lambda d: Other())
    with pytest.raises(PlainDataError, match="already crosses as 'tree'"):
        plaindata.register("tree2", ml.Tree, lambda x: 0, lambda d: None)
    assert "tree2" not in plaindata.kinds()
    with pytest.raises(PlainDataError, match="kind must be"):
        plaindata.register("", Other, lambda x: 0, lambda d: None)

    class MyTree(ml.Tree):                                # a subclass is not the structure
        pass
    assert plaindata.to_plain(MyTree([-1], [1], [0])) is None
    assert plaindata.to_plain(ml.Tree([-1], [1], [0]))[0] == "tree"
