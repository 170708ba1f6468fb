"""Valid arguments for any declared tool, for tests that walk the whole catalog."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel

from homeport.core.catalog import ToolSpec


def sample_arguments(spec: ToolSpec) -> dict[str, Any]:
    """Valid arguments for `spec`: a value of the right type for each required argument."""
    model: type[BaseModel] = spec._arguments_model
    out: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if not info.is_required():
            continue
        out[name] = _value_for(info.annotation)
    spec.validate(out)  # the sample itself must pass the first step
    return out


def _value_for(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return typing.get_args(annotation)[0]
    if origin is typing.Annotated:
        return _value_for(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return _value_for(next(a for a in typing.get_args(annotation) if a is not type(None)))
    if annotation is int or (origin is None and annotation is int):
        return 1
    if annotation is str:
        return "x"
    if annotation is bool:
        return False
    if origin in (list, tuple) or annotation in (list, tuple):
        return []
    if origin is dict or annotation is dict:
        return {}
    return "x"
