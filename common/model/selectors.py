"""Kubernetes label selectors: which objects does "app=web,tier!=cache" pick?

A selector is a list of requirements that must all hold. It comes in two
forms, and both end up as the same Selector:

    the string kubectl sends      kubectl get pods -l 'app=web,env in (prod,qa)'
    the structured form in specs  {"matchLabels": {...}, "matchExpressions": [...]}

Services select pods with a plain label map (Selector.from_labels), a
ReplicaSet with the structured form, and the API server filters a list with
the string form (?labelSelector=...).
"""

from __future__ import annotations

import re
from typing import NamedTuple

# Operator names as Kubernetes' selection package spells them.
EQUALS, NOT_EQUALS = "=", "!="
IN, NOT_IN = "in", "notin"
EXISTS, DOES_NOT_EXIST = "exists", "!"
GREATER_THAN, LESS_THAN = "gt", "lt"
OPERATORS = (EQUALS, NOT_EQUALS, IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GREATER_THAN, LESS_THAN)

# The structured form's operators, and what each means here.
_STRUCTURED_OPERATORS = {"In": IN, "NotIn": NOT_IN,
                         "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}

_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_INTEGER = re.compile(r"-?[0-9]{1,18}")  # fits in an int64, as Kubernetes requires
_NAME_RULE = ("must be 63 characters or less, start and end with a letter or digit, "
              "and contain only letters, digits, '-', '_' and '.'")


class SelectorError(ValueError):
    """A selector that cannot be parsed or built; the message says where and why."""


def _short(text: str, limit: int = 80) -> str:
    """Text to quote in an error; a hostile megabyte of input is cut short."""
    text = text if len(text) <= limit else text[:limit - 3] + "..."
    # Escape what would garble the message: control and direction-changing
    # characters, lone surrogates.
    return "".join(c if c.isprintable() and not 0xD800 <= ord(c) <= 0xDFFF else repr(c)[1:-1] for c in text)


def validate_key(key) -> None:
    """Check a label key: an optional DNS subdomain prefix, '/', and a name."""
    if not isinstance(key, str):
        raise SelectorError(f"label key must be a string, got {type(key).__name__}")
    prefix, slash, name = key.rpartition("/")
    if slash and not (len(prefix) <= 253 and _DNS_SUBDOMAIN.fullmatch(prefix)):
        raise SelectorError(f"invalid label key {_short(key)!r}: the prefix before '/' must be a "
                            "lowercase DNS subdomain (e.g. example.com), 253 characters or less")
    if not (len(name) <= 63 and _NAME.fullmatch(name)):
        raise SelectorError(f"invalid label key {_short(key)!r}: the name {_NAME_RULE}")


def validate_value(value) -> None:
    """Check a label value: empty, or a name of at most 63 characters."""
    if not isinstance(value, str):
        raise SelectorError(f"label value must be a string, got {type(value).__name__}")
    if value and not (len(value) <= 63 and _NAME.fullmatch(value)):
        raise SelectorError(f"invalid label value {_short(value)!r}: a label value {_NAME_RULE}")


class Requirement(NamedTuple):
    """One condition on one label key: key, operator, and sorted values."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: dict) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.operator in (EQUALS, IN):
            return present and value in self.values
        if self.operator in (NOT_EQUALS, NOT_IN):
            # As in Kubernetes: "tier!=cache" also picks objects with no tier.
            return not present or value not in self.values
        if self.operator == EXISTS:
            return present
        if self.operator == DOES_NOT_EXIST:
            return not present
        # gt/lt compare numbers; a label that is not an integer never matches.
        if not isinstance(value, str) or not _INTEGER.fullmatch(value):
            return False
        if self.operator == GREATER_THAN:
            return int(value) > int(self.values[0])
        return int(value) < int(self.values[0])

    def __str__(self):
        if self.operator == EXISTS:
            return self.key
        if self.operator == DOES_NOT_EXIST:
            return f"!{self.key}"
        if self.operator in (IN, NOT_IN):
            return f"{self.key} {self.operator} ({','.join(self.values)})"
        symbol = {GREATER_THAN: ">", LESS_THAN: "<"}.get(self.operator, self.operator)
        return f"{self.key}{symbol}{self.values[0]}"


def requirement(key: str, operator: str, values=()) -> Requirement:
    """Build a checked Requirement; values are deduplicated and sorted."""
    validate_key(key)
    if operator not in OPERATORS:
        raise SelectorError(f"unknown operator {operator!r}; use one of {', '.join(OPERATORS)}")
    if isinstance(values, str):
        raise SelectorError(f"values for key {key!r} must be a list of strings, not one string")
    values = list(values)  # read once, even if given a generator
    for value in values:
        if operator not in (GREATER_THAN, LESS_THAN):
            validate_value(value)
        elif not (isinstance(value, str) and _INTEGER.fullmatch(value)):
            raise SelectorError(f"operator {operator!r} on key {key!r} needs an "
                                f"integer value, got {_short(repr(value))}")
    values = tuple(sorted(set(values)))
    if operator in (EXISTS, DOES_NOT_EXIST):
        if values:
            raise SelectorError(f"operator {operator!r} on key {key!r} takes no values")
    elif operator in (IN, NOT_IN):
        if not values:
            raise SelectorError(f"operator {operator!r} on key {key!r} needs at least "
                                "one value; the list of values is empty")
    elif len(values) != 1:
        raise SelectorError(f"operator {operator!r} on key {key!r} needs exactly one "
                            f"value, got {len(values)}")
    return Requirement(key, operator, values)


class Selector:
    """All requirements must hold. No requirements selects everything."""

    __slots__ = ("requirements", "_nothing")

    def __init__(self, requirements=(), *, nothing: bool = False):
        # Sorted by key (stable), as Kubernetes does, so str() is canonical.
        self.requirements = tuple(sorted(requirements, key=lambda r: r.key))
        self._nothing = nothing

    @classmethod
    def everything(cls) -> Selector:
        return cls()

    @classmethod
    def nothing(cls) -> Selector:
        """Matches no object. Some APIs read a missing (null) selector this way."""
        return cls(nothing=True)

    @classmethod
    def from_labels(cls, labels: dict | None) -> Selector:
        """key=value for every pair, e.g. a Service's spec.selector."""
        if labels is None:
            return cls()
        if not isinstance(labels, dict):
            raise SelectorError(f"labels must be a map, got {type(labels).__name__}")
        return cls(requirement(key, EQUALS, [value]) for key, value in labels.items())

    def matches(self, labels: dict | None) -> bool:
        labels = labels or {}
        return not self._nothing and all(r.matches(labels) for r in self.requirements)

    def is_empty(self) -> bool:
        """True if this selects everything."""
        return not self._nothing and not self.requirements

    def __eq__(self, other):
        if not isinstance(other, Selector):
            return NotImplemented
        return (self.requirements, self._nothing) == (other.requirements, other._nothing)

    def __hash__(self):
        return hash((self.requirements, self._nothing))

    def __str__(self):
        # Like Kubernetes, nothing() also prints as "": it has no string form.
        return ",".join(str(r) for r in self.requirements)

    def __repr__(self):
        return "Selector.nothing()" if self._nothing else f"parse_selector({str(self)!r})"


# Tokens: an operator, or a word (a run of anything that is not whitespace
# or one of the operator characters). "in" and "notin" are words that act as
# operators when one is expected, so "a=in" still means the value "in".
_TOKEN = re.compile(r"[ \t\r\n]*(?:(?P<op>!=|==|=|!|\(|\)|,|>|<)|(?P<word>[^ \t\r\n!=<>(),]+))")


# What each operator token means. (Word tokens never contain "=", "!", "<"
# or ">", and operator tokens are never "in", so one lookup serves both.)
_STRING_OPERATORS = {"=": EQUALS, "==": EQUALS, "!=": NOT_EQUALS, ">": GREATER_THAN,
                     "<": LESS_THAN, "in": IN, "notin": NOT_IN}


def parse_selector(text: str) -> Selector:
    """Parse kubectl's form: "app=web,tier!=cache,env in (a,b),!canary,rank>2"."""
    if not isinstance(text, str):
        raise SelectorError(f"a selector must be a string, got {type(text).__name__}")
    return _Parser(text).parse()


class _Parser:
    def __init__(self, text: str):
        self.shown = _short(text)  # quoted in every error
        self.tokens = []  # (kind, text, position); kind is "op", "word" or "end"
        position = 0
        # Every character is whitespace, an operator or part of a word, so
        # matching stops only at the end (or at trailing whitespace).
        while match := _TOKEN.match(text, position):
            kind = "op" if match["op"] else "word"
            self.tokens.append((kind, match[kind], match.start(kind)))
            position = match.end()
        self.tokens.append(("end", "", len(text)))
        self.index = 0

    def fail(self, problem: str):
        _, token, position = self.tokens[self.index]
        found = f'"{_short(token)}"' if token else "end of input"
        raise SelectorError(f'unable to parse requirement: "{self.shown}": {problem}, '
                            f"found {found} at position {position}")

    def peek(self) -> tuple[str, str]:
        kind, token, _ = self.tokens[self.index]
        return kind, token

    def take(self) -> str:
        token = self.tokens[self.index][1]
        self.index += 1
        return token

    def parse(self) -> Selector:
        if self.peek()[0] == "end":
            return Selector()  # "" selects everything
        requirements = [self.requirement()]
        while self.peek() == ("op", ","):
            self.take()
            requirements.append(self.requirement())
        if self.peek()[0] != "end":
            self.fail('expected "," between requirements')
        return Selector(requirements)

    def requirement(self) -> Requirement:
        if self.peek() == ("op", "!"):
            self.take()
            return self.checked(self.key(), DOES_NOT_EXIST, [])
        key = self.key()
        kind, token = self.peek()
        if kind == "end" or token == ",":
            return self.checked(key, EXISTS, [])
        operator = _STRING_OPERATORS.get(token)
        if operator is None:
            self.fail(f'expected an operator (=, ==, !=, in, notin, >, <) or "," '
                      f'after key "{_short(key)}"')
        self.take()
        if operator in (IN, NOT_IN):
            return self.checked(key, operator, self.value_list())
        return self.checked(key, operator, [self.value()])

    def key(self) -> str:
        kind, token = self.peek()
        if kind != "word" or token in (IN, NOT_IN):
            self.fail("expected a label key")
        return self.take()

    def value(self) -> str:
        kind, token = self.peek()
        if kind == "word":
            return self.take()
        if kind == "end" or token == ",":
            return ""  # "a=" selects the empty value, as in Kubernetes
        self.fail("expected a value")

    def value_list(self) -> list[str]:
        if self.peek() != ("op", "("):
            self.fail('expected "(" to start the list of values')
        self.take()
        if self.peek() == ("op", ")"):
            self.take()
            return []  # checked() reports the empty list
        values = [self.value_in_list()]
        while self.peek() == ("op", ","):
            self.take()
            values.append(self.value_in_list())
        if self.peek() != ("op", ")"):
            self.fail('expected "," or ")" in the list of values')
        self.take()
        return values

    def value_in_list(self) -> str:
        # An empty item ("(a,,b)") is the empty value, as in Kubernetes.
        return self.take() if self.peek()[0] == "word" else ""

    def checked(self, key: str, operator: str, values: list[str]) -> Requirement:
        try:
            return requirement(key, operator, values)
        except SelectorError as err:
            raise SelectorError(f'unable to parse requirement: "{self.shown}": {err}') from None


def selector_from_label_selector(obj: dict | None) -> Selector:
    """Build a Selector from {matchLabels: {...}, matchExpressions: [...]}.

    None or {} selects everything, as Kubernetes' LabelSelectorAsSelector
    does for an empty selector. (For a *missing* selector some APIs mean
    "nothing"; callers that need that use Selector.nothing().)
    """
    if obj is None:
        return Selector()
    if not isinstance(obj, dict):
        raise SelectorError(f"selector: must be a map, got {type(obj).__name__}")
    unknown = sorted(set(obj) - {"matchLabels", "matchExpressions"})
    if unknown:
        # A typo such as "matchLabel" would otherwise silently select everything.
        raise SelectorError(f"selector.{unknown[0]}: unknown field; a label selector "
                            "has only matchLabels and matchExpressions")
    labels = _field(obj, "matchLabels", {})
    if not isinstance(labels, dict):
        raise SelectorError("matchLabels: must be a map of key to value, "
                            f"got {type(labels).__name__}")
    requirements = []
    for key, value in labels.items():
        path = f"matchLabels[{_short(str(key))}]"
        requirements.append(_at(path, requirement, key, EQUALS, [value]))
    expressions = _field(obj, "matchExpressions", [])
    if not isinstance(expressions, list):
        raise SelectorError("matchExpressions: must be a list, got "
                            f"{type(expressions).__name__}")
    for i, expression in enumerate(expressions):
        requirements.append(_expression(f"matchExpressions[{i}]", expression))
    return Selector(requirements)


def _expression(path: str, expression) -> Requirement:
    if not isinstance(expression, dict):
        raise SelectorError(f"{path}: must be a map with key, operator and values, "
                            f"got {type(expression).__name__}")
    key = expression.get("key")
    if key is None:
        raise SelectorError(f"{path}.key: required; name the label this expression tests")
    _at(f"{path}.key", validate_key, key)
    operator = expression.get("operator")
    if not isinstance(operator, str) or operator not in _STRUCTURED_OPERATORS:
        raise SelectorError(f"{path}.operator: unknown operator {_short(repr(operator))}; "
                            f"use one of {', '.join(_STRUCTURED_OPERATORS)}")
    values = _field(expression, "values", [])
    if not isinstance(values, list):
        raise SelectorError(f"{path}.values: must be a list, got {type(values).__name__}")
    if operator in ("In", "NotIn") and not values:
        raise SelectorError(f"{path}.values: must be non-empty when operator is {operator}")
    if operator in ("Exists", "DoesNotExist") and values:
        raise SelectorError(f"{path}.values: must be empty when operator is {operator}")
    for j, value in enumerate(values):
        _at(f"{path}.values[{j}]", validate_value, value)
    return Requirement(key, _STRUCTURED_OPERATORS[operator], tuple(sorted(set(values))))


def _field(obj: dict, name: str, default):
    """obj[name], where a missing field or null means the empty default."""
    value = obj.get(name)
    return default if value is None else value


def _at(path: str, check, *args):
    """Run check(*args); prefix any SelectorError with the field path."""
    try:
        return check(*args)
    except SelectorError as err:
        raise SelectorError(f"{path}: {err}") from None
