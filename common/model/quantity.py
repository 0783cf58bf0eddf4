"""Kubernetes resource quantities: "100m" of CPU, "128Mi" of memory, "1e3".

A quantity is a number plus a suffix. Kubernetes never stores one as a
float, because 0.1 + 0.2 must be exactly 0.3 when the scheduler adds up the
CPU requests on a node; we keep the exact value as a Fraction for the same
reason. The value is rounded *up* to a whole number of nano units (1n) when
parsed, so asking for a tiny amount still gets you something.

A quantity also remembers which family of suffix it was written in, so that
it prints back the way a person wrote it ("1Gi" stays binary, "1k" decimal):

    DecimalSI        n u m "" k M G T P E          powers of 1000
    BinarySI         Ki Mi Gi Ti Pi Ei             powers of 1024
    DecimalExponent  e3, E-3, e+2                  powers of 10

Where this module is simpler than Kubernetes (k8s.io/apimachinery
pkg/api/resource), the comment at that spot says so.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"
FORMATS = (DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT)

# Suffix -> power of ten (decimal) or power of 1024 (binary).
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0,
                     "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
_SUFFIX_FOR_EXPONENT = {exp: suffix for suffix, exp in _DECIMAL_SUFFIXES.items()}

# Kubernetes' own description of the syntax; quoted in errors so a user can
# search for it. The parser below is stricter than the expression (it needs
# at least one digit and checks the suffix), as Kubernetes' parser is.
SYNTAX = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_SPLIT = re.compile(r"(?P<sign>[+-]?)(?P<whole>[0-9]*)(?:\.(?P<fraction>[0-9]*))?"
                    r"(?P<suffix>(?:[eEinumkKMGTP]+[-+]?[0-9]*)?)")
_EXPONENT = re.compile(r"[eE](?P<exponent>[-+]?[0-9]+)")

# Limits that keep hostile input cheap. Kubernetes' own limit is int64
# arithmetic; ours exists because Python integers never overflow, so
# "1e999999999" would otherwise try to build a billion-digit number.
MAX_LENGTH = 64
MAX_EXPONENT = 100

_NANO = 10**9


class QuantityError(ValueError):
    """A quantity that cannot be parsed; the message says what is wrong."""


def parse_quantity(value) -> Quantity:
    """Parse "100m", "1.5Gi", "2e3", 2 or 0.5 into an exact Quantity."""
    if isinstance(value, Quantity):
        return value
    return _parse_text(_as_text(value))


@functools.lru_cache(maxsize=1024)
def _parse_text(text: str) -> Quantity:
    """Parsed once per text: a Quantity is immutable, and a cluster's pods
    repeat the same few amounts ("100m", "64Mi") in every request and check."""
    if not text:
        raise QuantityError("quantity is empty: write a number with an optional "
                            "suffix, e.g. 500m, 2 or 128Mi")
    if len(text) > MAX_LENGTH:
        raise QuantityError(f"quantity {text[:20]!r}... is too long "
                            f"({len(text)} characters, at most {MAX_LENGTH})")
    if text != text.strip():
        raise QuantityError(f"invalid quantity {text!r}: remove the whitespace around it")
    parts = _SPLIT.fullmatch(text)
    if parts is None:
        raise QuantityError(f"invalid quantity {text!r}: write a number with an "
                            "optional suffix, e.g. 500m, 1.5Gi or 1e3 (quantities "
                            f"must match the regular expression '{SYNTAX}')")
    whole, fraction = parts["whole"], parts["fraction"] or ""
    if not whole and not fraction:
        raise QuantityError(f"invalid quantity {text!r}: it has no digits; "
                            "write the number first, e.g. 1Mi rather than Mi")
    digits = Fraction(int(whole + fraction), 10 ** len(fraction))
    if parts["sign"] == "-":
        digits = -digits
    amount, format = _apply_suffix(text, digits, parts["suffix"])
    return Quantity(amount, format)


def _as_text(value) -> str:
    """Turn the accepted input types into the string form Kubernetes parses."""
    # bool is an int in Python, but "cpu: true" in a manifest is a mistake.
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise QuantityError("a quantity must be a string or a number, "
                            f"got {type(value).__name__}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"a quantity must be a finite number, got {value}")
        # repr() is the shortest text that reads back as this float: 0.1 gives
        # "0.1" (what the manifest said), not 0.1000000000000000055...
        return repr(value)
    if isinstance(value, int):
        if abs(value) >= 10**MAX_LENGTH:
            raise QuantityError(f"quantity is too long (more than {MAX_LENGTH} digits)")
        return str(value)
    return value


def _apply_suffix(text: str, digits: Fraction, suffix: str) -> tuple[Fraction, str]:
    if suffix in _DECIMAL_SUFFIXES:
        exponent = _DECIMAL_SUFFIXES[suffix]
        return digits * Fraction(10) ** exponent, DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        amount = digits * 1024 ** _BINARY_SUFFIXES.index(suffix)
        # Kubernetes shows a binary quantity between -1 and 1 as decimal,
        # since "0.5Ki" would need a fraction to print.
        return amount, BINARY_SI if abs(amount) >= 1 else DECIMAL_SI
    match = _EXPONENT.fullmatch(suffix)
    if match is None:
        raise QuantityError(
            f"invalid quantity {text!r}: unknown suffix {suffix!r}; use one of "
            "n u m k M G T P E (powers of 1000), Ki Mi Gi Ti Pi Ei (powers of "
            "1024) or an exponent such as e3")
    exponent = int(match["exponent"])
    if abs(exponent) > MAX_EXPONENT:
        raise QuantityError(f"invalid quantity {text!r}: exponent {exponent} is "
                            f"out of range (-{MAX_EXPONENT} to {MAX_EXPONENT})")
    return digits * Fraction(10) ** exponent, DECIMAL_EXPONENT


@functools.total_ordering
class Quantity:
    """An exact, immutable amount plus the suffix family it prints in.

    Compare and add Quantities like numbers; the format only decides how
    str() writes the value.
    """

    __slots__ = ("_amount", "_format")

    def __init__(self, amount: Fraction | int = 0, format: str = DECIMAL_SI):
        if format not in FORMATS:
            raise QuantityError(f"unknown quantity format {format!r}; "
                                f"use one of {', '.join(FORMATS)}")
        if isinstance(amount, bool) or not isinstance(amount, (int, Fraction)):
            # A float here would carry its binary rounding error into the value.
            raise QuantityError(f"Quantity() takes an int or a Fraction, got "
                                f"{type(amount).__name__}; use parse_quantity() for text")
        object.__setattr__(self, "_amount", _round_up_to_nano(Fraction(amount)))
        object.__setattr__(self, "_format", format)

    def __setattr__(self, name, value):
        raise AttributeError("Quantity is immutable; build a new one")

    @property
    def amount(self) -> Fraction:
        """The exact value, always a whole number of nano units."""
        return self._amount

    @property
    def format(self) -> str:
        return self._format

    def value(self) -> int:
        """The value rounded up to a whole number, like Kubernetes' Value()."""
        # Kubernetes documents ceil(); for negative values its int64 fast
        # path actually rounds away from zero. We keep the documented ceil.
        return math.ceil(self._amount)

    def milli_value(self) -> int:
        """ceil(value * 1000): CPU in millicores, as the scheduler counts it."""
        return math.ceil(self._amount * 1000)

    def is_zero(self) -> bool:
        return self._amount == 0

    def sign(self) -> int:
        return (self._amount > 0) - (self._amount < 0)

    # Arithmetic keeps the left operand's format, unless it is zero, so that
    # a running total started at zero takes the format of what it adds up.
    def __add__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        return Quantity(self._amount + other._amount, self._result_format(other))

    def __radd__(self, other):
        # Lets sum(quantities) work: sum() starts from the int 0.
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self
        return NotImplemented

    def __sub__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        return Quantity(self._amount - other._amount, self._result_format(other))

    def __neg__(self) -> Quantity:
        return Quantity(-self._amount, self._format)

    def _result_format(self, other: Quantity) -> str:
        return other._format if self.is_zero() else self._format

    # Equality and order are by value: "1Gi" == "1024Mi", "1k" == "1e3".
    # (total_ordering derives <=, > and >= from these two.)
    def __eq__(self, other):
        return self._amount == other._amount if isinstance(other, Quantity) else NotImplemented

    def __lt__(self, other):
        return self._amount < other._amount if isinstance(other, Quantity) else NotImplemented

    def __reduce__(self):
        # copy, deepcopy and pickle rebuild through __init__ (slots are frozen).
        return (Quantity, (self._amount, self._format))

    def __hash__(self):
        return hash(self._amount)

    def __str__(self):
        return _canonical(self._amount, self._format)

    def __repr__(self):
        return f"Quantity({str(self)!r})"


def _round_up_to_nano(amount: Fraction) -> Fraction:
    """Round away from zero to a whole number of nano units, as Kubernetes does."""
    rounded = math.ceil(abs(amount) * _NANO)
    return Fraction(rounded if amount >= 0 else -rounded, _NANO)


def _canonical(amount: Fraction, format: str) -> str:
    """The one string Kubernetes would print: no fraction, largest suffix."""
    if amount == 0:
        return "0"
    sign = "-" if amount < 0 else ""
    magnitude = abs(amount)
    # Binary only for whole numbers of at least 1Ki; anything else would
    # need a fraction ("1.5Ki" prints as "1536"), so it falls back to decimal.
    if format == BINARY_SI and magnitude >= 1024 and magnitude.denominator == 1:
        number, power = int(magnitude), 0
        # Kubernetes caps binary quantities at 2**63-1 instead; we keep the
        # exact value and stop at Ei, the largest suffix ("1024Ei").
        while number % 1024 == 0 and power < len(_BINARY_SUFFIXES) - 1:
            number, power = number // 1024, power + 1
        return f"{sign}{number}{_BINARY_SUFFIXES[power]}"

    # Write the value as mantissa * 10**exponent, move every trailing zero
    # into the exponent, then step the exponent down to a multiple of 3
    # (so 5e5 becomes 500e3, which is "500k").
    mantissa, exponent = int(magnitude * _NANO), -9
    while mantissa % 10 == 0:
        mantissa, exponent = mantissa // 10, exponent + 1
    step = exponent % 3
    mantissa, exponent = mantissa * 10**step, exponent - step
    if format == DECIMAL_EXPONENT:
        return f"{sign}{mantissa}" + (f"e{exponent}" if exponent else "")
    if exponent > 18:
        # There is no SI suffix beyond E: keep E and a longer mantissa
        # ("1000E"), which still reads back as the same value.
        mantissa, exponent = mantissa * 10 ** (exponent - 18), 18
    return f"{sign}{mantissa}{_SUFFIX_FOR_EXPONENT[exponent]}"
