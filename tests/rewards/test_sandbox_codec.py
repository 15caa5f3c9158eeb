"""The plain-data wire format between an answer's process and its tests' process: exact round trips of plain
data, handles for everything else, and a decoder that turns any malformed message into an error."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evr1.rewards.sandbox_codec import decode, dumps, encode, loads

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8),
                    st.binary(max_size=8), st.complex_numbers(allow_nan=False))  # fmt: skip
HASHABLE = st.recursive(SCALARS, lambda inner: st.one_of(st.tuples(inner, inner), st.frozensets(inner, max_size=3)), max_leaves=6)
PLAIN = st.recursive(
    SCALARS | HASHABLE,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.tuples(inner, inner), st.sets(HASHABLE, max_size=3),
                            st.dictionaries(HASHABLE, inner, max_size=3)),
    max_leaves=10,
)  # fmt: skip


def _no_handles(*args: object) -> object:
    raise AssertionError("plain data needs no handle")


def _same(a: object, b: object) -> bool:
    """Equal with exact types all the way down (True == 1 == 1.0 would hide a changed type)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    return a == b


@settings(max_examples=150, deadline=None)
@given(PLAIN)
def test_plain_data_round_trips_exactly(value: object) -> None:
    line = dumps({"v": encode(value, _no_handles)})
    assert line.endswith(b"\n") and line.count(b"\n") == 1  # one protocol line, whatever the strings hold
    assert _same(decode(loads(line)["v"], _no_handles), value)


def test_non_finite_floats_round_trip() -> None:
    back = decode(loads(dumps({"v": encode([math.inf, -math.inf, math.nan], _no_handles)}))["v"], _no_handles)
    assert back[:2] == [math.inf, -math.inf] and math.isnan(back[2])


class _Eq:
    __eq__ = lambda self, other: True


def test_anything_else_becomes_a_handle() -> None:
    objects: list[object] = []

    def handle(obj: object) -> dict:
        objects.append(obj)
        return {"h": len(objects) - 1, "truth": None}

    class Number(int):
        pass

    data = encode([_Eq(), Number(2), {"k": (1, _Eq())}], handle)
    assert data == [{"h": 0, "truth": None}, {"h": 1, "truth": None}, {"d": [["k", {"t": [1, {"h": 2, "truth": None}]}]]}]
    assert decode(data, lambda n, truth: ("remote", n)) == [("remote", 0), ("remote", 1), {"k": (1, ("remote", 2))}]


MALFORMED = [
    {}, {"x": 1}, {"t": 1}, {"s": "ab"}, {"d": [[1]]}, {"d": [1, 2]}, {"b": 12}, {"b": "zz"}, {"c": [1]},
    {"c": ["1", 2]}, {"h": "0"}, {"h": 0, "truth": 1}, {"h": 0, "x": 1}, {"t": [], "s": []},
]  # fmt: skip


@pytest.mark.parametrize("data", MALFORMED, ids=[json.dumps(m) for m in MALFORMED])
def test_malformed_values_are_errors(data: object) -> None:
    with pytest.raises(ValueError):
        decode(data, lambda n, truth: n)


@pytest.mark.parametrize("line", [b"[1]\n", b"1\n", b"not json\n", b'"text"\n'])
def test_a_line_that_is_not_an_object_is_an_error(line: bytes) -> None:
    with pytest.raises(ValueError):
        loads(line)
