"""Resource quantities: parsing, exact arithmetic, Kubernetes' canonical form."""

import copy
import pickle
from fractions import Fraction

import pytest

from common.model.quantity import (BINARY_SI, DECIMAL_EXPONENT, DECIMAL_SI, Quantity,
                             QuantityError, parse_quantity)

q = parse_quantity

# (text, exact value, format family): every suffix, and every number shape.
PARSED = [
    ("1n", Fraction(1, 10**9), DECIMAL_SI),
    ("1u", Fraction(1, 10**6), DECIMAL_SI),
    ("1m", Fraction(1, 1000), DECIMAL_SI),
    ("1", Fraction(1), DECIMAL_SI),
    ("1k", Fraction(10**3), DECIMAL_SI),
    ("1M", Fraction(10**6), DECIMAL_SI),
    ("1G", Fraction(10**9), DECIMAL_SI),
    ("1T", Fraction(10**12), DECIMAL_SI),
    ("1P", Fraction(10**15), DECIMAL_SI),
    ("1E", Fraction(10**18), DECIMAL_SI),
    ("1Ki", Fraction(2**10), BINARY_SI),
    ("1Mi", Fraction(2**20), BINARY_SI),
    ("1Gi", Fraction(2**30), BINARY_SI),
    ("1Ti", Fraction(2**40), BINARY_SI),
    ("1Pi", Fraction(2**50), BINARY_SI),
    ("1Ei", Fraction(2**60), BINARY_SI),
    ("1e3", Fraction(1000), DECIMAL_EXPONENT),
    ("1E3", Fraction(1000), DECIMAL_EXPONENT),
    ("1E-3", Fraction(1, 1000), DECIMAL_EXPONENT),
    ("2e+2", Fraction(200), DECIMAL_EXPONENT),
    ("1.5", Fraction(3, 2), DECIMAL_SI),
    (".5", Fraction(1, 2), DECIMAL_SI),
    ("1.", Fraction(1), DECIMAL_SI),
    ("+7", Fraction(7), DECIMAL_SI),
    ("-7", Fraction(-7), DECIMAL_SI),
    ("0", Fraction(0), DECIMAL_SI),
    ("007", Fraction(7), DECIMAL_SI),
    ("1.5Gi", Fraction(3 * 2**29), BINARY_SI),
    ("0.5Ki", Fraction(512), BINARY_SI),
    # A binary amount below 1 would need a fraction, so it turns decimal.
    ("0.0001Ki", Fraction(1024, 10**4), DECIMAL_SI),
    ("9" * 64, Fraction(int("9" * 64)), DECIMAL_SI),
]


@pytest.mark.parametrize("text, amount, format", PARSED, ids=[row[0][:12] for row in PARSED])
def test_parse_exact_value_and_format(text, amount, format):
    quantity = q(text)
    assert quantity.amount == amount
    assert quantity.format == format


# (written, what Kubernetes prints)
CANONICAL = [
    ("100m", "100m"),
    ("0.5", "500m"),
    ("2", "2"),
    ("128Mi", "128Mi"),
    ("1Gi", "1Gi"),
    ("1e3", "1e3"),
    ("500k", "500k"),
    ("1000m", "1"),
    ("1024Mi", "1Gi"),
    ("1.5Gi", "1536Mi"),
    ("0.1", "100m"),
    ("1000", "1k"),
    ("12e6", "12e6"),
    ("1.5", "1500m"),
    ("1500000", "1500k"),
    ("0.000001", "1u"),
    ("10n", "10n"),
    ("2e+2", "200"),
    ("1.5e3", "1500"),
    ("1E-3", "1e-3"),
    ("0.5e0", "500e-3"),
    ("1.5Ki", "1536"),  # whole but not a multiple of 1Ki: plain number
    ("512Ki", "512Ki"),
    ("1023", "1023"),
    ("0.5Ki", "512"),  # binary below 1Ki prints as decimal
    ("1.0001Ki", "1024102400u"),  # not whole: decimal, nothing lost
    ("-1Ki", "-1Ki"),
    ("-100m", "-100m"),
    ("0Mi", "0"),
    ("-0", "0"),
    ("+0.0", "0"),
    ("1000E", "1000E"),  # no SI suffix above E
    ("1024Ei", "1024Ei"),  # no binary suffix above Ei
    ("1e30", "1e30"),
    # Below 1n rounds away from zero to a whole nano unit.
    ("0.1n", "1n"),
    ("1.5n", "2n"),
    ("-0.1n", "-1n"),
    ("0.0000000001", "1n"),
    ("1e-100", "1e-9"),  # the exponent form stays an exponent
]


@pytest.mark.parametrize("text, expected", CANONICAL, ids=[row[0] for row in CANONICAL])
def test_canonical_form(text, expected):
    assert str(q(text)) == expected
    # The canonical form reads back as the same value.
    assert q(expected) == q(text)


@pytest.mark.parametrize("value, expected", [
    (2, "2"),
    (1000, "1k"),
    (-5, "-5"),
    (0.5, "500m"),
    (0.1, "100m"),  # what the manifest said, not the float's binary expansion
    (2.0, "2"),
    (-0.0, "0"),
    (1e20, "100e18"),
], ids=["int", "int-1000", "negative-int", "float-half", "float-tenth", "float-whole",
        "negative-zero", "float-huge"])
def test_numbers_from_json_or_yaml(value, expected):
    assert str(q(value)) == expected


def test_parse_returns_a_quantity_unchanged():
    quantity = q("1Gi")
    assert q(quantity) is quantity


@pytest.mark.parametrize("left, op, right, expected", [
    ("0.1", "+", "0.2", "300m"),
    ("1", "-", "0.9", "100m"),
    ("1Gi", "+", "1Gi", "2Gi"),
    ("1Gi", "-", "512Mi", "512Mi"),
    ("100m", "+", "900m", "1"),
    ("1Ki", "+", "1k", "2024"),  # binary, but 2024 is no whole number of Ki
    ("0", "+", "1Gi", "1Gi"),  # a zero left side takes the right side's format
    ("1k", "-", "1k", "0"),
], ids=["tenths", "sub", "binary", "binary-sub", "milli-to-whole", "mixed-formats",
        "zero-takes-format", "to-zero"])
def test_exact_arithmetic(left, op, right, expected):
    result = q(left) + q(right) if op == "+" else q(left) - q(right)
    assert str(result) == expected
    assert result == q(expected)


def test_sum_of_quantities():
    assert sum([q("100m"), q("200m"), q("0.7")]) == q("1")
    assert str(sum([q("1Gi"), q("1Gi")], Quantity(0, BINARY_SI))) == "2Gi"


def test_negation_keeps_format():
    assert str(-q("1Gi")) == "-1Gi"
    assert str(-q("-100m")) == "100m"


@pytest.mark.parametrize("smaller, larger", [
    ("999", "1k"),
    ("1000Mi", "1Gi"),
    ("100m", "1"),
    ("1n", "1u"),
    ("-1", "0"),
    ("1k", "1Ki"),
    ("1G", "1Gi"),
], ids=lambda row: row)
def test_ordering(smaller, larger):
    assert q(smaller) < q(larger)
    assert q(smaller) <= q(larger)
    assert q(larger) > q(smaller)
    assert q(larger) >= q(smaller)
    assert q(smaller) != q(larger)


@pytest.mark.parametrize("a, b", [
    ("1Gi", "1024Mi"),
    ("1k", "1e3"),
    ("1k", "1000"),
    ("0.5", "500m"),
    ("1", "1000000000n"),
    ("0", "0Ki"),
], ids=lambda row: row)
def test_equal_values_in_different_forms(a, b):
    assert q(a) == q(b)
    assert hash(q(a)) == hash(q(b))


def test_compare_with_other_types_is_refused():
    assert q("1") != 1  # no silent coercion
    with pytest.raises(TypeError):
        q("1") < 1
    with pytest.raises(TypeError):
        q("1") + 1


# (text, value(), milli_value()): both round up (ceil).
ROUNDING = [
    ("100m", 1, 100),
    ("1.5", 2, 1500),
    ("1n", 1, 1),
    ("1.0001m", 1, 2),
    ("2", 2, 2000),
    ("1Ki", 1024, 1024000),
    ("0", 0, 0),
    ("-1.5", -1, -1500),
    ("-100m", 0, -100),
]


@pytest.mark.parametrize("text, value, milli", ROUNDING, ids=[row[0] for row in ROUNDING])
def test_value_and_milli_value_round_up(text, value, milli):
    assert q(text).value() == value
    assert q(text).milli_value() == milli


@pytest.mark.parametrize("text, sign, zero", [
    ("1m", 1, False), ("0", 0, True), ("-0.0Gi", 0, True), ("-3Ki", -1, False),
], ids=["positive", "zero", "negative-zero", "negative"])
def test_sign_and_is_zero(text, sign, zero):
    assert q(text).sign() == sign
    assert q(text).is_zero() is zero


def test_immutable_hashable_copyable():
    quantity = q("128Mi")
    with pytest.raises(AttributeError, match="immutable"):
        quantity._amount = Fraction(1)
    assert {q("1Gi"), q("1024Mi")} == {q("1Gi")}
    assert copy.deepcopy(quantity) == quantity
    assert str(pickle.loads(pickle.dumps(quantity))) == "128Mi"
    assert repr(quantity) == "Quantity('128Mi')"


def test_constructor_rounds_and_checks_format():
    assert str(Quantity(Fraction(1, 10**12))) == "1n"
    with pytest.raises(QuantityError, match="unknown quantity format 'Octal'"):
        Quantity(1, "Octal")
    for wrong in (0.1, "1Gi", True):
        with pytest.raises(QuantityError, match="use parse_quantity"):
            Quantity(wrong)


# (input, a substring of the error that names the problem)
REFUSED = [
    ("", "quantity is empty"),
    (" 1", "remove the whitespace"),
    ("1 ", "remove the whitespace"),
    ("1\n", "remove the whitespace"),
    ("1 Gi", "must match the regular expression"),
    ("1.2.3", "must match the regular expression"),
    ("--1", "must match the regular expression"),
    ("1-", "must match the regular expression"),
    ("1MB", "must match the regular expression"),
    ("ten", "must match the regular expression"),
    ("١٢", "must match the regular expression"),  # Arabic-Indic digits
    ("１", "must match the regular expression"),  # full-width digit
    ("1_000", "must match the regular expression"),
    ("Mi", "has no digits"),
    (".", "has no digits"),
    ("-", "has no digits"),
    ("1e", "unknown suffix 'e'"),
    ("1e-", "unknown suffix 'e-'"),
    ("1k3", "unknown suffix 'k3'"),
    ("1mi", "unknown suffix 'mi'"),
    ("1i", "unknown suffix 'i'"),
    ("1Kii", "unknown suffix 'Kii'"),
    ("1e999999999", "exponent 999999999 is out of range"),
    ("1e-999999999", "exponent -999999999 is out of range"),
    ("1E+" + "9" * 40, "is out of range"),
    ("1e101", "exponent 101 is out of range"),
    ("9" * 65, "too long (65 characters, at most 64)"),
    ("1" * 10_000, "too long"),
    pytest.param(10**64, "more than 64 digits", id="int-65-digits"),
    # str() of this int alone would raise; the check must come first.
    pytest.param(-(10**5000), "more than 64 digits", id="int-5001-digits"),
    (float("nan"), "finite number, got nan"),
    (float("inf"), "finite number, got inf"),
    (float("-inf"), "finite number, got -inf"),
    (None, "string or a number, got NoneType"),
    (True, "string or a number, got bool"),
    (False, "string or a number, got bool"),
    (["1"], "string or a number, got list"),
    ({"cpu": "1"}, "string or a number, got dict"),
    (b"1", "string or a number, got bytes"),
    (Fraction(1, 2), "string or a number, got Fraction"),
]


@pytest.mark.parametrize("value, reason", REFUSED, ids=lambda value: repr(value)[:24])
def test_refused_with_reason(value, reason):
    with pytest.raises(QuantityError) as caught:
        parse_quantity(value)
    assert reason in str(caught.value)


def test_error_is_a_value_error():
    # Callers that catch ValueError (e.g. generic validation) still see it.
    with pytest.raises(ValueError):
        parse_quantity("1MB")
