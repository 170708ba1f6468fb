"""Database values as JSON values, by one documented convention for every backend.

None, bool, int, str         as they are
float                        as is; NaN and the infinities as the strings "NaN", "Infinity", "-Infinity"
Decimal                      a string ("12.30"), so no digit is lost
date, datetime, time         ISO 8601 strings ("2024-01-02T03:04:05+00:00")
timedelta (interval)         an ISO 8601 duration ("P1DT2H", "-PT0.5S")
bytes (bytea, blob)          "base64:" followed by the standard base64 of the bytes
UUID, IP addresses, ranges   their text form
JSON (already parsed)        the same structure, its values converted by these rules
arrays, tuples, sets         lists
anything else                its text form
"""

from __future__ import annotations

import base64
import datetime as dt
import math
from decimal import Decimal
from typing import Any

__all__ = ["BYTES_PREFIX", "iso_duration", "json_safe", "mysql_time"]

BYTES_PREFIX = "base64:"
_MICROS_PER_SECOND = 1_000_000


def json_safe(value: Any) -> Any:
    """`value` as something `json.dumps(..., allow_nan=False)` accepts, by the module's rules."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (dt.date, dt.time)):  # datetime is a date
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return iso_duration(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return BYTES_PREFIX + base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    if isinstance(value, (set, frozenset)):
        return sorted((json_safe(item) for item in value), key=str)
    return str(value)


def iso_duration(delta: dt.timedelta) -> str:
    """An ISO 8601 duration: days, hours, minutes and seconds (with a fraction when present)."""
    micros = _micros(delta)
    sign = "-" if micros < 0 else ""
    days, micros = divmod(abs(micros), 86_400 * _MICROS_PER_SECOND)
    hours, micros = divmod(micros, 3_600 * _MICROS_PER_SECOND)
    minutes, micros = divmod(micros, 60 * _MICROS_PER_SECOND)
    seconds, micros = divmod(micros, _MICROS_PER_SECOND)
    time_part = ""
    if hours:
        time_part += f"{hours}H"
    if minutes:
        time_part += f"{minutes}M"
    if micros:
        time_part += f"{seconds}.{micros:06d}".rstrip("0") + "S"
    elif seconds:
        time_part += f"{seconds}S"
    text = f"P{days}D" if days else "P"
    if time_part:
        text += "T" + time_part
    elif not days:
        text += "T0S"
    return sign + text


def mysql_time(delta: dt.timedelta) -> str:
    """A MySQL TIME value (which the driver hands over as a timedelta) in MySQL's own form."""
    micros = _micros(delta)
    sign = "-" if micros < 0 else ""
    seconds, micros = divmod(abs(micros), _MICROS_PER_SECOND)
    hours, seconds = divmod(seconds, 3_600)
    minutes, seconds = divmod(seconds, 60)
    text = f"{sign}{hours:02d}:{minutes:02d}:{seconds:02d}"
    return f"{text}.{micros:06d}" if micros else text


def _micros(delta: dt.timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * _MICROS_PER_SECOND + delta.microseconds
