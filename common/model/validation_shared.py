"""Building blocks that several kinds' validation shares.

* Go-printed values. Kubernetes prints a bad map or struct with Go's `%#v`,
  so the message a learner searches for reads
  `Invalid value: map[string]string{"app":"web"}: ...`. GoValue carries that
  text; FieldError prints it as it is.
* Label selectors ({matchLabels, matchExpressions}), checked as
  metav1validation.ValidateLabelSelector does, and matched against labels.
* Int-or-percent fields (maxUnavailable: 1 or "25%").
* The immutable-field check every update runs ("field is immutable").
"""

from __future__ import annotations

from common.model.field_errors import (FieldError, GoValue, _go_str, child, forbidden, format_value,
                                 go_string_slice, index, invalid, required)
from common.model.names import is_qualified_name, is_valid_label_value
from common.model.selectors import SelectorError, selector_from_label_selector
from common.model.validation import (INT32_MAX, _as_int, _get_dict, _get_int, _get_list, _get_str,
                               _items, _matches, _regex_error, _type_error, validate_labels)

FIELD_IMMUTABLE = "field is immutable"


# ------------------------------------------------------- Go-printed values

def go_string_map(value) -> GoValue:
    """map[string]string{"a":"b"}; Go prints map keys sorted. A JSON `{}`
    decodes to an empty map, which Go prints as map[string]string{}; only a
    missing map is (nil)."""
    if not isinstance(value, dict):
        return GoValue("map[string]string(nil)")
    pairs = ", ".join(f"{_go_str(k)}:{_go_str(v)}"
                      for k, v in sorted(value.items(), key=lambda kv: str(kv[0])))
    return GoValue("map[string]string{" + pairs + "}")


def go_label_selector(value) -> GoValue:
    """The text of the famous `spec.selector: ... field is immutable` message."""
    value = value if isinstance(value, dict) else {}
    labels = go_string_map(value.get("matchLabels")).text
    expressions = [e for e in value.get("matchExpressions") or () if isinstance(e, dict)] \
        if isinstance(value.get("matchExpressions"), list) else []
    if expressions:
        parts = [f'v1.LabelSelectorRequirement{{Key:{_go_str(e.get("key", ""))}, '
                 f'Operator:{_go_str(e.get("operator", ""))}, '
                 f'Values:{go_string_slice(e.get("values")).text}}}' for e in expressions]
        exprs = "[]v1.LabelSelectorRequirement{" + ", ".join(parts) + "}"
    else:
        exprs = "[]v1.LabelSelectorRequirement(nil)"
    return GoValue(f"v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{exprs}}}")


def go_int_or_string(value) -> GoValue:
    if isinstance(value, str):
        return GoValue(f'intstr.IntOrString{{Type:1, IntVal:0, StrVal:{_go_str(value)}}}')
    return GoValue(f'intstr.IntOrString{{Type:0, IntVal:{format_value(value)}, StrVal:""}}')


# ---------------------------------------------------------- label selectors

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def validate_label_selector(errs: list, selector, path: str) -> dict | None:
    """Check {matchLabels, matchExpressions}; return it if it is an object."""
    selector = _get_dict(errs, selector, path)
    if selector is None:
        return None
    errs += validate_labels(selector.get("matchLabels"), child(path, "matchLabels"))
    exprs_path = child(path, "matchExpressions")
    for _, expr_path, expr in _items(errs, selector.get("matchExpressions"), exprs_path,
                                     "label selector requirements"):
        # ValidateLabelSelectorRequirement's order: operator, key, values.
        key = _get_str(errs, expr.get("key"), child(expr_path, "key"))
        operator = _get_str(errs, expr.get("operator"), child(expr_path, "operator"))
        values_path = child(expr_path, "values")
        values = _get_list(errs, expr.get("values"), values_path, "a list of strings")
        if operator in ("In", "NotIn"):
            if not values:
                errs.append(required(values_path,
                                     "must be specified when `operator` is 'In' or 'NotIn'"))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errs.append(forbidden(values_path, "may not be specified when `operator` is "
                                      "'Exists' or 'DoesNotExist'"))
        elif operator is not None or expr.get("operator") is None:
            errs.append(invalid(child(expr_path, "operator"), operator or "",
                                "not a valid selector operator"))
        # An empty key fails the qualified-name check, as in Kubernetes.
        if key is not None or expr.get("key") is None:
            errs += [invalid(child(expr_path, "key"), key or "", m)
                     for m in is_qualified_name(key or "")]
        for i, value in enumerate(values or ()):
            value = _get_str(errs, value, index(values_path, i))
            if value is not None:
                errs += [invalid(index(values_path, i), value, m)
                         for m in is_valid_label_value(value)]
    return selector


def selector_is_empty(selector: dict) -> bool:
    return not selector.get("matchLabels") and not selector.get("matchExpressions")


def selector_matches(selector: dict, labels) -> bool | None:
    """Does the selector pick these labels? None if either cannot be read
    (the errors are reported elsewhere, so no second error is due)."""
    try:
        return selector_from_label_selector(selector).matches(
            labels if isinstance(labels, dict) else {})
    except (SelectorError, TypeError, ValueError):
        return None


def normalized_selector(selector) -> dict:
    """For comparisons: Kubernetes' semantic equality treats empty and unset alike."""
    if not isinstance(selector, dict):
        return {}
    return {k: v for k, v in selector.items() if v not in (None, {}, [])}


# ------------------------------------------------------------ int or percent

_PERCENT_FMT = "[0-9]+%"


def int_or_percent(errs: list, value, path: str):
    """A count or a percentage; returns (number, is_percent) or None."""
    if value is None:
        return None
    if isinstance(value, str):
        if not _matches(_PERCENT_FMT, value):
            errs.append(invalid(path, go_int_or_string(value), _regex_error(
                "a valid percent string must be a numeric string followed by an ending '%'",
                _PERCENT_FMT, "1%", "93%")))
            return None
        return int(value[:-1]), True
    number = _as_int(value)
    if number is None:
        # Ours: Kubernetes fails this while decoding (see _type_error).
        errs.append(_type_error(path, value, "an integer or percentage (e.g '5%')"))
        return None
    if number < 0:
        errs.append(invalid(path, number, "must be greater than or equal to 0"))
        return None
    return number, False


def not_more_than_100_percent(errs: list, value, parsed, path: str) -> None:
    if parsed and parsed[1] and parsed[0] > 100:
        errs.append(invalid(path, go_int_or_string(value), "must not be greater than 100%"))


# ------------------------------------------------------------------ updates

def check_immutable(errs: list, new, old, path: str, value=None) -> None:
    """new must equal old; value is what the message shows (default: new)."""
    if new != old:
        errs.append(invalid(path, new if value is None else value, FIELD_IMMUTABLE))


def nonnegative(errs: list, obj: dict, fields, path: str) -> None:
    """Counts and durations that may be 0 but not below (ValidateNonnegativeField)."""
    for field in fields:
        _get_int(errs, obj.get(field), child(path, field), 0, INT32_MAX)


__all__ = ["FieldError", "GoValue", "FIELD_IMMUTABLE", "go_string_map", "go_string_slice",
           "go_label_selector", "go_int_or_string", "validate_label_selector",
           "selector_is_empty", "selector_matches", "normalized_selector", "int_or_percent",
           "not_more_than_100_percent", "check_immutable", "nonnegative"]
