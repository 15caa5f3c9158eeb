"""Plain builtin data as JSON: the only thing that crosses between an answer's process and its tests' process.

Standard library only; its source is prepended to `sandbox_runner.py` and `code_harness.py`, which run as
`python -I -S -c SOURCE`. Plain data is exact `bool`, `int`, `float`, `complex`, `str`, `bytes`, `None` and
`list`, `tuple`, `set`, `frozenset`, `dict` of them. JSON keeps bool, int, float (NaN and infinities as
Python's `json` writes them), str, None and lists; the rest are one-key objects: {"t": [...]} tuple,
{"s": [...]} set, {"f": [...]} frozenset, {"d": [[key, value], ...]} dict, {"b": "hex"} bytes,
{"c": [real, imag]} complex, and {"h": n, "truth": bool | null} a handle to an object that stays in the
answer's process. `decode` accepts exactly these forms and raises ValueError on anything else, so whatever
bytes an answer writes, the tests receive plain data or handles.
"""

import json

_SCALARS = (bool, int, float, str, type(None))
_TAGS = {"t": tuple, "s": set, "f": frozenset}


def encode(value, handle):
    """`value` as JSON-ready data; `handle(obj)` gives the {"h": ...} form of an object that is not plain."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is list:
        return [encode(v, handle) for v in value]
    if kind in (tuple, set, frozenset):
        return {"tsf"[(tuple, set, frozenset).index(kind)]: [encode(v, handle) for v in value]}
    if kind is dict:
        return {"d": [[encode(k, handle), encode(v, handle)] for k, v in value.items()]}
    if kind is bytes:
        return {"b": value.hex()}
    if kind is complex:
        return {"c": [value.real, value.imag]}
    return handle(value)


def decode(data, handle):
    """The value `data` encodes; `handle(n, truth)` gives what a {"h": n, ...} stands for. ValueError if malformed."""
    kind = type(data)
    if kind in _SCALARS:
        return data
    if kind is list:
        return [decode(v, handle) for v in data]
    if kind is not dict or not data:
        raise ValueError(f"not an encoded value: {type(data).__name__}")
    tag = next(iter(data))
    body = data[tag]
    if tag == "h" and type(body) is int and set(data) <= {"h", "truth"} and type(data.get("truth")) in (bool, type(None)):
        return handle(body, data.get("truth"))
    if len(data) != 1:
        raise ValueError("an encoded value has one key")
    if tag in _TAGS and type(body) is list:
        return _TAGS[tag](decode(v, handle) for v in body)
    if tag == "d" and type(body) is list and all(type(p) is list and len(p) == 2 for p in body):
        return {decode(k, handle): decode(v, handle) for k, v in body}
    if tag == "b" and type(body) is str:
        return bytes.fromhex(body)
    if tag == "c" and type(body) is list and len(body) == 2 and all(type(x) in (int, float) for x in body):
        return complex(body[0], body[1])
    raise ValueError(f"not an encoded value: tag {tag!r}")


def dumps(message):
    """One protocol line (bytes, newline-terminated)."""
    return (json.dumps(message, separators=(",", ":")) + "\n").encode()


def loads(line):
    """The message of one protocol line; ValueError if it is not a JSON object."""
    message = json.loads(line)
    if type(message) is not dict:
        raise ValueError("a protocol message is a JSON object")
    return message
