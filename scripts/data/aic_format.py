"""Arithmetic and text format shared by aic_records.py's jobs.

The committed aic-*.json files were first written by a JavaScript script;
numbers here round and print as JavaScript's did, so that a regeneration is
byte-identical: sig() is Number(x.toPrecision(6)), dumps() is JSON.stringify
without spaces (an integral double prints without a fraction).
"""

import json
import struct
from decimal import ROUND_HALF_UP, Decimal

SCRIPT = 'scripts/data/aic_records.py'

HOPPER = ['sm90']
BLACKWELL = ['sm100', 'sm103']


def cdiv(a, b):
    return (a + b - 1) // b


def sig(x):
    """x to 6 significant digits: the exact binary value rounded half up
    (ECMA-262 toPrecision picks the larger n on a tie), back to a double."""
    d = Decimal(x)
    if d == 0:
        return 0.0
    return float(d.quantize(Decimal(1).scaleb(d.adjusted() - 5), rounding=ROUND_HALF_UP))


def bf16(x):
    """x rounded to the nearest bfloat16 (ties to even), through float32."""
    (u,) = struct.unpack('<I', struct.pack('<f', x))
    u = ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFFFFFF) & 0xFFFF0000
    return struct.unpack('<f', struct.pack('<I', u))[0]


def js_number(x):
    """A number as JavaScript's Number.prototype.toString writes it."""
    if isinstance(x, bool):
        raise TypeError('bool is not a number here')
    if isinstance(x, int):
        return str(x)
    if x != x or x in (float('inf'), float('-inf')):
        raise ValueError(f'{x} has no JSON form')
    if x.is_integer() and abs(x) < 1e21:
        return str(int(x))
    sign = '-' if x < 0 else ''
    t = Decimal(repr(abs(x))).normalize().as_tuple()
    digits = ''.join(map(str, t.digits))
    k, n = len(digits), len(digits) + t.exponent  # value = 0.digits x 10^n
    if 0 < n <= 21:
        body = digits[:n] + '.' + digits[n:] if k > n else digits + '0' * (n - k)
    elif -6 < n <= 0:
        body = '0.' + '0' * -n + digits
    else:
        e = n - 1
        body = digits[0] + ('.' + digits[1:] if k > 1 else '') + 'e' + ('+' if e >= 0 else '-') + str(abs(e))
    return sign + body


def dumps(v):
    """JSON.stringify(v): no spaces, keys in insertion order."""
    if isinstance(v, dict):
        return '{' + ','.join(json.dumps(k, ensure_ascii=False) + ':' + dumps(x) for k, x in v.items()) + '}'
    if isinstance(v, (list, tuple)):
        return '[' + ','.join(dumps(x) for x in v) + ']'
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if v is None:
        return 'null'
    if isinstance(v, bool):
        return 'true' if v else 'false'
    return js_number(v)
