"""DevDB's REST paths on an HTTP server: scripts and the editor extension's calls, answered by the tools.

DevDB's HTTP side answers four paths; here each runs the database tool of the same meaning through
the call pipeline, exactly as an MCP call would (`CallPipeline.call`: validation, the allowlist of
the access rules, the workspace's resolution within the guards and its access check, read-only
unless the project allows writes, the statement guard, the timeout and the row limit), and answers
in DevDB's shape (the `devdb` aliases' shapes) beside Homeport's fields:

    GET  /tables                   get_tables         {"tables": [...], ...}
    GET  /tables/{table}/schema    get_schema         {"schema": "CREATE TABLE ...", "columns": ...}
    POST /query                    run_query          body {"query": "...", "params"?: {...}} -> {"result": [rows]}
    GET  /database-type            get_database_type  {"type": "sqlite", ...}

The workspace is the `X-Workspace-Id` header or DevDB's `?projectRoot=` (resolved as the header and
`?project_path=` are on /mcp: must be absolute, inside the allowed roots). Before any of that, the
same Host and Origin checks as /mcp (a DNS-rebinding page or another site's script is refused;
POST must be JSON, so no HTML form can send one), and under `--auth` a bearer token verified as
/mcp verifies it: none, or one that does not verify, is 401. A refused call is a JSON error
`{"error": {"code", "message"}}` with 400, 403 (access), 404 (no such table) or 500 (a bug).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from homeport.core.catalog import CATALOG, ToolSpec
from homeport.core.pipeline import CallPipeline
from homeport.core.runtime import Runtime
from homeport.errors import (
    HomeportError,
    InvalidArgumentError,
    ItemNotFoundError,
    PermissionDeniedError,
    error_for_code,
)
from homeport.server.http_exposure import transport_security
from homeport.server.request import caller_of, workspaces_chosen
from homeport.workspace import CallInputs

__all__ = ["DEVDB_PATHS", "devdb_routes"]

logger = logging.getLogger("homeport")

DEVDB_PATHS = ("/tables", "/tables/{table}/schema", "/query", "/database-type")
_PROJECT_ROOT = "projectRoot"  # DevDB's query parameter for the project


class _RestRequest:
    """One REST call as the pipeline sees it (`core.pipeline.CallRequest`): principal and claims from the
    verified token, the workspace from the header or ?projectRoot=, no roots, no session."""

    forwarded = False
    client = ("devdb-rest", None)

    def __init__(self, runtime: Runtime, request: Request) -> None:
        token = get_access_token()
        self.principal, self.claims = caller_of(runtime, token, request)
        self.agent: str | None = (token.subject or token.client_id) if token is not None else None
        chosen = dict(workspaces_chosen(request))
        self._header = chosen.get("header")
        self._query = request.query_params.get(_PROJECT_ROOT) or chosen.get("query")

    @property
    def names_workspace(self) -> bool:
        return bool(self._header or self._query)

    def inputs(self, argument: str | None) -> CallInputs:
        return CallInputs(principal=self.principal, argument=argument, header=self._header, query=self._query)

    async def attach_roots(self, inputs: CallInputs) -> CallInputs:
        return inputs

    def bind_session(self, root: str) -> bool:
        return False

    def describe(self) -> dict[str, Any]:
        return {"transport": "devdb-rest", "session": False}


def devdb_routes(runtime: Runtime, bearer: Any) -> list[BaseRoute]:
    """The four routes, for `build_http_app` (`bearer`: the check /mcp makes of a token; None without auth)."""
    pipeline = CallPipeline(runtime)
    security = TransportSecurityMiddleware(transport_security(runtime.settings))

    def endpoint(tool: str, alias: str, arguments: Callable[[Request, Any], dict[str, Any]]) -> Any:
        spec, shape = CATALOG[tool], _shape_of(alias)

        async def answer(request: Request) -> Response:
            is_post = request.method == "POST"
            refused = await security.validate_request(request, is_post=is_post)
            if refused is not None:
                return refused
            if not _authenticated(request, bearer):
                return JSONResponse(
                    {"error": {"code": "unauthorized", "message": "send Authorization: Bearer TOKEN"}},
                    status_code=401,
                    headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
                )
            call = _RestRequest(runtime, request)
            if not call.names_workspace:
                return _error(
                    InvalidArgumentError(
                        "name the project: send the X-Workspace-Id header or ?projectRoot= with its absolute path"
                    )
                )
            try:
                body = await _json_body(request) if is_post else None
                result = await _call(pipeline, spec, arguments(request, body), call)
            except HomeportError as exc:
                return _error(exc)
            except Exception as exc:  # a bug: the caller gets a code, the log the traceback
                logger.exception("DevDB REST %s failed unexpectedly", request.url.path)
                return JSONResponse(
                    {"error": {"code": "internal_error", "message": f"{tool} failed on {type(exc).__name__}"}},
                    status_code=500,
                )
            return JSONResponse(shape(result, {}))

        return answer

    return [
        Route("/tables", endpoint("get_tables", "get-tables", lambda r, b: {}), methods=["GET"]),
        Route(
            "/tables/{table}/schema",
            endpoint("get_schema", "get-schema", lambda r, b: {"table": r.path_params["table"]}),
            methods=["GET"],
        ),
        Route("/query", endpoint("run_query", "run-query", lambda r, b: _query_arguments(b)), methods=["POST"]),
        Route("/database-type", endpoint("get_database_type", "get-database-type", lambda r, b: {}), methods=["GET"]),
    ]


def _authenticated(request: Request, bearer: Any) -> bool:
    """Without auth, everyone; with it, a request the app's bearer middleware verified (as /mcp's)."""
    if bearer is None:
        return True
    user = request.scope.get("user")
    return user is not None and getattr(user, "is_authenticated", False)


async def _json_body(request: Request) -> Any:
    try:
        return json.loads(await request.body())
    except (ValueError, RecursionError):
        raise InvalidArgumentError(
            'the body is not JSON; send {"query": "SELECT ...", "params": {...}} with Content-Type: application/json'
        ) from None


def _query_arguments(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidArgumentError('the body must be a JSON object: {"query": "SELECT ...", "params": {...}}')
    unknown = sorted(set(body) - {"query", "params"})
    if unknown:
        raise InvalidArgumentError(f"unknown field(s) {', '.join(unknown)} in the body; send query and params only")
    if not isinstance(body.get("query"), str):
        raise InvalidArgumentError('the body needs "query": a string holding one SQL statement')
    out: dict[str, Any] = {"query": body["query"]}
    if body.get("params") is not None:
        out["params"] = body["params"]
    return out


async def _call(
    pipeline: CallPipeline, spec: ToolSpec, arguments: dict[str, Any], call: _RestRequest
) -> dict[str, Any]:
    """The tool's result as a dict; a forwarded answer (an SDK result) is unwrapped, its error re-raised."""
    result = await pipeline.call(spec, arguments, call)
    if isinstance(result, dict):
        return result
    content = getattr(result, "structured_content", None)
    if getattr(result, "is_error", False):
        error = (content or {}).get("error") or {}
        raise error_for_code(str(error.get("code", "internal_error")), str(error.get("message", "the call failed")))
    if not isinstance(content, dict):
        raise InvalidArgumentError(f"{spec.name} answered without structured content")
    return content


def _shape_of(alias: str) -> Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]:
    spec = CATALOG[alias]
    assert spec.alias is not None and spec.alias.shape is not None, f"{alias} is DevDB's alias with a shape"
    return spec.alias.shape


def _error(exc: HomeportError) -> JSONResponse:
    status = 400
    if isinstance(exc, PermissionDeniedError) or exc.code in _FORBIDDEN:
        status = 403
    elif isinstance(exc, ItemNotFoundError):
        status = 404
    return JSONResponse({"error": {"code": exc.code, "message": exc.message}}, status_code=status)


# Refusals of who may do this (not of how it was asked): the workspace guards and the database's own.
_FORBIDDEN = frozenset({"workspace_denied", "workspace_contains_projects", "database_not_allowed"})
