"""The JSON convention for database values, the same for every backend."""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import re
import uuid
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pymysql.constants import FIELD_TYPE

from homeport.projectdb._values import iso_duration, json_safe, mysql_time
from homeport.projectdb.query import _mysql_converters


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        (True, True),
        (7, 7),
        ("text", "text"),
        (1.25, 1.25),
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
        (Decimal("12.30"), "12.30"),
        (Decimal("NaN"), "NaN"),
        (dt.date(2024, 1, 2), "2024-01-02"),
        (dt.datetime(2024, 1, 2, 3, 4, 5, 500000), "2024-01-02T03:04:05.500000"),
        (dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC), "2024-01-02T03:04:05+00:00"),
        (dt.time(3, 4, 5), "03:04:05"),
        (dt.timedelta(days=1, hours=2), "P1DT2H"),
        (b"\x00\xff", "base64:AP8="),
        (bytearray(b"ab"), "base64:YWI="),
        (memoryview(b"ab"), "base64:YWI="),
        (uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        (ipaddress.ip_address("10.0.0.1"), "10.0.0.1"),
        ({"a": [1, Decimal("2.5"), {"b": dt.date(2024, 1, 2)}]}, {"a": [1, "2.5", {"b": "2024-01-02"}]}),
        ((1, b"x"), [1, "base64:eA=="]),
        ({"b", "a"}, ["a", "b"]),
        (object, "<class 'object'>"),
    ],
)
def test_values_follow_the_json_convention(value, expected):
    assert json_safe(value) == expected
    json.dumps(json_safe(value), allow_nan=False)


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (dt.timedelta(0), "PT0S"),
        (dt.timedelta(seconds=90), "PT1M30S"),
        (dt.timedelta(days=2), "P2D"),
        (dt.timedelta(milliseconds=-500), "-PT0.5S"),
        (dt.timedelta(days=-1, hours=23), "-PT1H"),
        (dt.timedelta(days=3, hours=4, minutes=5, seconds=6, microseconds=7), "P3DT4H5M6.000007S"),
    ],
)
def test_durations_are_iso_8601(delta, text):
    assert iso_duration(delta) == text


_DURATION = re.compile(r"^(-)?P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")


@given(st.timedeltas(min_value=dt.timedelta(days=-(10**6)), max_value=dt.timedelta(days=10**6)))
def test_an_iso_duration_reads_back_as_the_same_timedelta(delta):
    match = _DURATION.match(iso_duration(delta))
    assert match is not None
    sign, days, hours, minutes, seconds = match.groups()
    whole, _, fraction = (seconds or "0").partition(".")
    back = dt.timedelta(
        days=int(days or 0),
        hours=int(hours or 0),
        minutes=int(minutes or 0),
        seconds=int(whole),
        microseconds=int(fraction.ljust(6, "0")) if fraction else 0,
    )
    assert (-back if sign else back) == delta


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (dt.timedelta(hours=3, minutes=4, seconds=5), "03:04:05"),
        (dt.timedelta(hours=-27, minutes=-4, seconds=-5), "-27:04:05"),
        (dt.timedelta(hours=838, minutes=59, seconds=59, microseconds=5), "838:59:59.000005"),
    ],
)
def test_mysql_time_values_keep_mysqls_own_form(delta, text):
    assert mysql_time(delta) == text


def test_mysql_json_columns_are_parsed_and_time_columns_formatted():
    description = [("j", FIELD_TYPE.JSON), ("t", FIELD_TYPE.TIME), ("s", FIELD_TYPE.VAR_STRING)]
    converters = _mysql_converters(description)
    assert converters[0]('{"a": [1]}') == {"a": [1]}
    assert converters[0]("not json") == "not json"
    assert converters[1](dt.timedelta(hours=1)) == "01:00:00"
    assert 2 not in converters
