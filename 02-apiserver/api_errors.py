"""API errors as Kubernetes sends them: a `Status` object with code and reason.

kubectl prints `message` and decides what to do from `reason` and `code`
(a 409 Conflict makes `kubectl edit` retry, a 404 makes `--wait` stop), so
every error the server returns, even for a route that does not exist, is one
of these and never an HTML page.
"""
from __future__ import annotations

from typing import Any


class APIError(Exception):
    """Raise anywhere in a request; the app turns it into a Status reply."""

    def __init__(self, code: int, reason: str, message: str,
                 details: dict[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": self.message,
            "reason": self.reason,
        }
        if self.details:
            body["details"] = self.details
        body["code"] = self.code          # last, as Kubernetes writes it
        return body


def _details(resource, name: str | None, causes: list | None = None) -> dict[str, Any]:
    """`resource` is a registry.Resource (or a plain plural string)."""
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    group = getattr(resource, "group", "")
    if group:
        details["group"] = group
    details["kind"] = getattr(resource, "plural", resource)
    if causes:
        details["causes"] = causes
    return details


def not_found(resource, name: str) -> APIError:
    return APIError(404, "NotFound", f'{resource} "{name}" not found', _details(resource, name))


def already_exists(resource, name: str) -> APIError:
    return APIError(409, "AlreadyExists", f'{resource} "{name}" already exists',
                    _details(resource, name))


def conflict(resource, name: str, why: str = "the object has been modified; please apply "
             "your changes to the latest version and try again") -> APIError:
    return APIError(409, "Conflict", f'Operation cannot be fulfilled on {resource} "{name}": {why}',
                    _details(resource, name))


# Status cause reasons by field error type, as Kubernetes names them.
_CAUSE_REASONS = {
    "Required value": "FieldValueRequired", "Invalid value": "FieldValueInvalid",
    "Unsupported value": "FieldValueNotSupported", "Duplicate value": "FieldValueDuplicate",
    "Not found": "FieldValueNotFound", "Too long": "FieldValueTooLong",
    "Forbidden": "FieldValueForbidden",
}


def invalid(resource, kind: str, name: str, errors) -> APIError:
    """422 Invalid, with one `details.causes` entry per common.model.field_errors.FieldError.

    kubectl prints the message: `The Pod "web" is invalid: spec.containers[0].image: Required value`."""
    causes = [{"reason": _CAUSE_REASONS.get(e.type, "FieldValueInvalid"),
               "message": str(e)[len(e.path) + 2:] if e.path else str(e),
               "field": e.path} for e in errors]
    summary = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(map(str, errors)) + "]"
    details = _details(resource, name, causes)
    details["kind"] = kind            # Invalid names the Kind (kubectl prints `The Pod "x" is invalid`)
    return APIError(422, "Invalid", f'{kind} "{name or ""}" is invalid: {summary}', details)


def unauthorized() -> APIError:
    # Kubernetes says no more than this, whatever went wrong: telling a
    # stranger "malformed" versus "unknown" only helps them guess.
    return APIError(401, "Unauthorized", "Unauthorized")


def bad_request(message: str) -> APIError:
    return APIError(400, "BadRequest", message)


def method_not_allowed(message: str) -> APIError:
    return APIError(405, "MethodNotAllowed", message)


def unsupported_media_type(content_type: str, allowed) -> APIError:
    return APIError(415, "UnsupportedMediaType",
                    f'the body of the request was in an unknown format - accepted media types '
                    f'include: {", ".join(allowed)} (got "{content_type}")')


def too_large(limit: int) -> APIError:
    return APIError(413, "RequestEntityTooLarge",
                    f"the request body is larger than the limit of {limit} bytes")


def gone(message: str) -> APIError:
    return APIError(410, "Expired", message)


def too_many_requests(message: str, retry_after: int = 1) -> APIError:
    return APIError(429, "TooManyRequests", message, {"retryAfterSeconds": retry_after})


def internal(message: str) -> APIError:
    return APIError(500, "InternalError", message)
