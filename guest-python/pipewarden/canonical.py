"""Canonical JSON (RFC 8785, JCS) and the digests stamped on renders.

The same text, byte for byte, as the Rust SDK (`pipewarden_guest::canonical`) and the
JavaScript SDK write for the same JSON value: object keys sorted by their UTF-16 code units,
no whitespace, strings escaped only where JSON requires it (lowercase `\\u00xx`), numbers as
ECMAScript writes them (integers as integers, `1e+30`, `0.002`, `-0` as `0`).
"""

import hashlib
import json
import math

_MAX_EXACT_INT = 2**53


def canonical_json(value) -> str:
    """`value` (as `json.loads` returns it) as RFC 8785 canonical JSON text."""
    out = []
    _write(value, out)
    return "".join(out)


def _utf16_key(key: str) -> list:
    """The key's UTF-16 code units (by hand: a component's Python has no utf-16 codec)."""
    units = []
    for char in key:
        point = ord(char)
        if point < 0x10000:
            units.append(point)
        else:
            point -= 0x10000
            units += [0xD800 + (point >> 10), 0xDC00 + (point & 0x3FF)]
    return units


def _write(value, out) -> None:
    if isinstance(value, dict):
        out.append("{")
        for index, key in enumerate(sorted(value, key=_utf16_key)):
            if not isinstance(key, str):
                raise TypeError(f"object key {key!r} is not a string")
            if index:
                out.append(",")
            out.append(_string(key))
            out.append(":")
            _write(value[key], out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _write(item, out)
        out.append("]")
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(value) if abs(value) <= _MAX_EXACT_INT else number(float(value)))
    elif isinstance(value, float):
        out.append(number(value))
    elif isinstance(value, str):
        out.append(_string(value))
    else:
        raise TypeError(f"{type(value).__name__} is not JSON")


def _string(text: str) -> str:
    # json.dumps escapes exactly `"`, `\\` and the control characters, with \b \t \n \f \r
    # short forms and lowercase \u00xx otherwise: what RFC 8785 asks for.
    return json.dumps(text, ensure_ascii=False)


def number(value: float) -> str:
    """A double as ECMAScript's Number.prototype.toString writes it (RFC 8785, 3.2.2.3)."""
    if math.isnan(value) or math.isinf(value):
        raise ValueError("NaN and Infinity are not JSON")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    # repr gives the shortest digits that read back as the same double, as ECMAScript does.
    mantissa, _, exponent = repr(abs(value)).partition("e")
    point = mantissa.find(".")
    point = len(mantissa) if point < 0 else point
    digits = mantissa.replace(".", "")
    # n: where the decimal point goes after the first significant digit run (ECMAScript's n).
    n = point + int(exponent or 0)
    stripped = digits.lstrip("0")
    n -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        text = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return sign + text


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest(value) -> str:
    """`sha256:<hex>` of the canonical JSON of `value`."""
    return "sha256:" + sha256_hex(canonical_json(value).encode("utf-8"))


def settings_digest(text: str) -> str:
    """`sha256:` of settings text: of its canonical JSON (reformatting is no change), of the
    bytes if it is not JSON."""
    try:
        value = json.loads(text)
    except ValueError:
        return "sha256:" + sha256_hex(text.encode("utf-8"))
    return digest(value)


def render_settings_digest(text: str) -> str:
    """The settings digest stamped on renders: without `notify`, which no render reads."""
    try:
        value = json.loads(text)
    except ValueError:
        return settings_digest(text)
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if k != "notify"}
        return digest(value)
    return settings_digest(text)
