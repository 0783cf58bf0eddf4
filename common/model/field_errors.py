"""Field errors: what validation returns, printed as Kubernetes prints them.

    spec.containers[1].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive

A FieldError names the field (its path), the kind of problem, the bad value
and what would be right. Validation collects them instead of raising, so one
call reports every problem in an object (see common/model/validation.py).
"""

from __future__ import annotations

from dataclasses import dataclass

# [START field-error]
REQUIRED = "Required value"
INVALID = "Invalid value"
NOT_SUPPORTED = "Unsupported value"
DUPLICATE = "Duplicate value"
NOT_FOUND = "Not found"
TOO_LONG = "Too long"
FORBIDDEN = "Forbidden"

# Kubernetes prints no value for these: the path and the reason say it all.
_VALUELESS = (REQUIRED, FORBIDDEN, TOO_LONG)


@dataclass(frozen=True)
class FieldError:
    """One problem at one field, printed like Kubernetes' field.Error."""

    path: str    # spec.containers[1].ports[0].containerPort
    type: str    # one of the constants above, e.g. "Invalid value"
    value: object
    detail: str = ""

    def __str__(self) -> str:
        body = self.type
        if self.type not in _VALUELESS:
            body += ": " + format_value(self.value)
        if self.detail:
            body += ": " + self.detail
        return f"{self.path}: {body}" if self.path else body
# [END field-error]


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(path, REQUIRED, None, detail)


def invalid(path: str, value, detail: str) -> FieldError:
    return FieldError(path, INVALID, value, detail)


def not_supported(path: str, value, supported) -> FieldError:
    """Kubernetes' field.NotSupported prints the values in the order its
    caller gives them: sorted where it passes sets.List(...), in its own
    order elsewhere (restartPolicy: "Always", "OnFailure", "Never"). So each
    caller here passes them in the order Kubernetes prints them."""
    quoted = ", ".join(_go_quote(str(v)) for v in supported)
    return FieldError(path, NOT_SUPPORTED, value, f"supported values: {quoted}")


def duplicate(path: str, value) -> FieldError:
    return FieldError(path, DUPLICATE, value)


def not_found(path: str, value, detail: str = "") -> FieldError:
    return FieldError(path, NOT_FOUND, value, detail)


def too_long(path: str, value, max_bytes: int) -> FieldError:
    return FieldError(path, TOO_LONG, value, f"may not be more than {max_bytes} bytes")


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(path, FORBIDDEN, None, detail)


def child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def key(path: str, k) -> str:
    return f"{path}[{k}]"


# ---------------------------------------------------------------- printing

@dataclass(frozen=True)
class GoValue:
    """A bad value as Go's %#v prints it; FieldError shows str(value).

    Kubernetes prints a bad map or struct with Go's `%#v`, so the message a
    learner searches for reads `Invalid value: []string{"a"}: ...`.
    """

    text: str

    def __str__(self) -> str:
        return self.text


def _go_str(value) -> str:
    """A Go string literal. A value that is not a string (the input may be
    anything) is shown by format_value first, so a huge int cannot raise."""
    return format_value(value if isinstance(value, str) else format_value(value))


def go_string_slice(value) -> GoValue:
    if not isinstance(value, list) or not value:
        return GoValue("[]string(nil)")
    return GoValue("[]string{" + ", ".join(_go_str(v) for v in value) + "}")


def format_value(value) -> str:
    """Print a bad value as Kubernetes does: strings quoted, numbers bare.

    Kubernetes prints a Go nil as "null" in quotes; we print null bare, so
    it is not mistaken for the string "null". Objects and lists are shown as
    short JSON, cut at 80 characters.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return _int_text(value)
    if isinstance(value, float):
        # 3.0 stays 3.0: integer fields refuse floats, and "Invalid value: 3:
        # must be an integer" would contradict itself.
        return repr(value)
    if isinstance(value, str):
        # A hostile megabyte-long name must not make a megabyte-long message.
        return _go_quote(value if len(value) <= 256 else value[:253] + "...")
    if isinstance(value, (dict, list)):
        text = _short_json(value, 80)
        return text if len(text) <= 80 else text[:77] + "..."
    return str(value)  # dates, bytes: what YAML gave us


# Longer than any 128-bit number, a number says nothing a reader can check;
# past 4300 digits Python refuses to print it at all (its ValueError names
# sys.set_int_max_str_digits, which must not reach an API client). So a
# longer one is described by its length.
MAX_INT_DIGITS = 39


def _int_text(value: int) -> str:
    digits = _digit_count(value)
    if digits > MAX_INT_DIGITS:
        return f"<an integer of {digits} digits>"
    return str(value)


def _digit_count(value: int) -> int:
    """Decimal digits of abs(value), without converting it to text."""
    value = abs(value)
    if value < 10:
        return 1
    # bit_length gives the count to within one; one comparison settles it.
    digits = int((value.bit_length() - 1) * 0.30102999566398120) + 1
    return digits + 1 if value >= 10 ** digits else digits


def _go_quote(text: str) -> str:
    """Quote like Go's %q: printable characters as they are, others escaped."""
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\a": "\\a", "\b": "\\b",
            "\f": "\\f", "\v": "\\v"}


def _short_json(value, budget: int, depth: int = 0) -> str:
    """JSON-like text of value, giving up after about `budget` characters."""
    if depth > 3 or budget <= 0:
        return "..."
    if isinstance(value, dict):
        parts = []
        for k, v in value.items():
            if budget <= 0:
                parts.append("...")
                break
            part = f"{format_value(str(k))}: {_short_json(v, budget, depth + 1)}"
            parts.append(part)
            budget -= len(part) + 2
        return "{" + ", ".join(parts) + "}"
    if isinstance(value, list):
        parts = []
        for v in value:
            if budget <= 0:
                parts.append("...")
                break
            part = _short_json(v, budget, depth + 1)
            parts.append(part)
            budget -= len(part) + 2
        return "[" + ", ".join(parts) + "]"
    text = format_value(value)
    return text if len(text) <= budget else text[:budget] + "..."
