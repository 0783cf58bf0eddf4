"""Label selectors: the string form, the structured form, and matching."""

import pytest

from common.model.selectors import (DOES_NOT_EXIST, EQUALS, EXISTS, GREATER_THAN, IN, NOT_IN,
                              Requirement, Selector, SelectorError, parse_selector,
                              requirement, selector_from_label_selector, validate_key,
                              validate_value)

# (written, canonical form): sorted by key, values sorted, "==" written "=".
PARSED = [
    ("", ""),
    ("   ", ""),
    ("a=b", "a=b"),
    ("a==b", "a=b"),
    ("a!=b", "a!=b"),
    ("a in (x,y)", "a in (x,y)"),
    ("a notin (y, x)", "a notin (x,y)"),
    ("a in (x,x)", "a in (x)"),
    ("a", "a"),
    ("!a", "!a"),
    ("a>3", "a>3"),
    ("a<-2", "a<-2"),
    ("a=", "a="),  # the empty value
    ("a in (x,)", "a in (,x)"),  # an empty item is the empty value
    ("b=c,a in (y,x)", "a in (x,y),b=c"),
    ("a=in", "a=in"),  # "in" is a value here, not an operator
    ("  a  =  b ,\tc\n!= d ", "a=b,c!=d"),
    ("a in(x)", "a in (x)"),
    ("example.com/app=web", "example.com/app=web"),
    ("app.kubernetes.io/name=My_App.v1", "app.kubernetes.io/name=My_App.v1"),
    ("tier=db,!canary,env notin (dev),rank>1", "!canary,env notin (dev),rank>1,tier=db"),
]


@pytest.mark.parametrize("text, canonical", PARSED, ids=[row[0] or "empty" for row in PARSED])
def test_parse_and_canonical_form(text, canonical):
    selector = parse_selector(text)
    assert str(selector) == canonical
    assert parse_selector(canonical) == selector  # the canonical form reads back


def test_parsed_requirements():
    selector = parse_selector("b notin (z,y),a,!c,d>5")
    assert selector.requirements == (
        Requirement("a", EXISTS, ()),
        Requirement("b", NOT_IN, ("y", "z")),
        Requirement("c", DOES_NOT_EXIST, ()),
        Requirement("d", GREATER_THAN, ("5",)),
    )


WEB = {"app": "web", "tier": "frontend", "rank": "3"}

# (selector, labels, matches?)
MATCHES = [
    ("", WEB, True),
    ("", {}, True),
    ("", None, True),
    ("app=web", WEB, True),
    ("app==web", WEB, True),
    ("app=db", WEB, False),
    ("app=web", {}, False),
    ("app!=db", WEB, True),
    ("app!=web", WEB, False),
    ("app!=web", {}, True),  # absent label: != matches
    ("app in (db,web)", WEB, True),
    ("app in (db)", WEB, False),
    ("app in (web)", {}, False),
    ("app notin (db)", WEB, True),
    ("app notin (web,db)", WEB, False),
    ("app notin (web)", {}, True),  # absent label: notin matches
    ("app", WEB, True),
    ("app", {}, False),
    ("app", {"app": ""}, True),
    ("!app", WEB, False),
    ("!app", {}, True),
    ("app=", {"app": ""}, True),
    ("app=", {}, False),
    ("rank>2", WEB, True),
    ("rank>3", WEB, False),
    ("rank<4", WEB, True),
    ("rank<3", WEB, False),
    ("rank>-1", {"rank": "0"}, True),
    ("rank>2", {}, False),  # absent label: gt does not match
    ("rank>2", {"rank": "three"}, False),  # not an integer: never matches
    ("rank<9", {"rank": "1.5"}, False),
    ("app=web,tier=frontend", WEB, True),
    ("app=web,tier=backend", WEB, False),  # every requirement must hold
    ("app=web,app!=db", WEB, True),
]


@pytest.mark.parametrize("text, labels, expected", MATCHES,
                         ids=[f"{row[0] or 'empty'}~{'web' if row[1] == WEB else row[1]}"
                              for row in MATCHES])
def test_matches(text, labels, expected):
    assert parse_selector(text).matches(labels) is expected


# (text, substrings the error must contain: the problem, and where)
MALFORMED = [
    ("a in x", ['"a in x"', 'expected "("', 'found "x" at position 5']),
    ("a in (", ['expected "," or ")"', "found end of input at position 6"]),
    ("a in (x", ['"a in (x"', 'expected "," or ")"', "found end of input at position 7"]),
    ("a in (x y)", ['expected "," or ")"', 'found "y"']),
    ("a in (x))", ['expected "," between requirements', 'found ")" at position 8']),
    ("a in ()", ["needs at least one value", "list of values is empty"]),
    ("a notin ()", ["'notin'", "needs at least one value"]),
    ("in (x)", ["expected a label key", 'found "in" at position 0']),
    ("=b", ["expected a label key", 'found "=" at position 0']),
    ("a=b=c", ['expected "," between requirements', 'found "=" at position 3']),
    ("a=b,", ["expected a label key", "found end of input at position 4"]),
    (",", ["expected a label key", 'found "," at position 0']),
    ("a,,b", ["expected a label key", 'found "," at position 2']),
    ("(a)", ["expected a label key", 'found "("']),
    ("!", ["expected a label key", "found end of input"]),
    ("!a=b", ['expected "," between requirements', 'found "="']),
    ("a b", ['expected an operator', 'after key "a"', 'found "b" at position 2']),
    ("a!b", ['expected an operator', 'found "!"']),
    ("a===b", ["expected a value", 'found "="']),
    ("a=(b)", ["expected a value", 'found "("']),
    ("a>b", ["needs an integer value, got 'b'"]),
    ("a>", ["needs an integer value, got ''"]),
    ("a<1.5", ["needs an integer value, got '1.5'"]),
    ("a>" + "9" * 19, ["needs an integer value"]),
    ("a b=c", ['expected an operator', 'found "b"']),
    ("a=b c", ['expected "," between requirements', 'found "c"']),
    ("a$=b", ["invalid label key 'a$'", "start and end with a letter or digit"]),
    ("-a=b", ["invalid label key '-a'"]),
    ("é=1", ["invalid label key 'é'"]),
    ("Example.com/a=b", ["invalid label key 'Example.com/a'", "lowercase DNS subdomain"]),
    ("/a=b", ["invalid label key '/a'", "prefix before '/'"]),
    ("a/=b", ["invalid label key 'a/'", "the name must be"]),
    ("a/b/c=d", ["invalid label key 'a/b/c'", "prefix before '/'"]),
    ("k" * 64 + "=v", ["invalid label key", "63 characters or less"]),
    ("a=" + "v" * 64, ["invalid label value 'vvvv", "63 characters or less"]),
    ("a=-v", ["invalid label value '-v'"]),
    ("a in (x,-y)", ["invalid label value '-y'"]),
    ("a=" + "v" * 10_000, ["unable to parse requirement", "...", "63 characters or less"]),
]


@pytest.mark.parametrize("text, facts", MALFORMED, ids=[row[0][:20] for row in MALFORMED])
def test_malformed_selector(text, facts):
    with pytest.raises(SelectorError) as caught:
        parse_selector(text)
    message = str(caught.value)
    assert message.startswith("unable to parse requirement: ")
    for fact in facts:
        assert fact in message
    assert len(message) < 500  # long input is cut short in the message


@pytest.mark.parametrize("value", [None, 1, ["a=b"], b"a=b"], ids=["None", "int", "list", "bytes"])
def test_selector_text_must_be_a_string(value):
    with pytest.raises(SelectorError, match="a selector must be a string"):
        parse_selector(value)


@pytest.mark.parametrize("key", [
    "a", "A", "0", "a.b-c_d", "k" * 63, "example.com/a", "a.b.c/" + "n" * 63,
    "x" * 253 + "/a",
], ids=["one-char", "upper", "digit", "punctuation", "63-chars", "prefix", "long-name",
        "253-prefix"])
def test_valid_keys(key):
    validate_key(key)


@pytest.mark.parametrize("key, reason", [
    ("", "the name must be"),
    ("a_", "the name must be"),
    ("x" * 254 + "/a", "253 characters or less"),
    ("Ex/a", "lowercase DNS subdomain"),
    ("a..b/c", "lowercase DNS subdomain"),
    (7, "label key must be a string, got int"),
], ids=["empty", "ends-badly", "254-prefix", "upper-prefix", "empty-label-in-prefix", "int"])
def test_invalid_keys(key, reason):
    with pytest.raises(SelectorError, match=reason):
        validate_key(key)


@pytest.mark.parametrize("value, reason", [
    ("v" * 64, "63 characters or less"),
    ("a b", "invalid label value 'a b'"),
    (None, "label value must be a string, got NoneType"),
    (3, "label value must be a string, got int"),
], ids=["64-chars", "space", "None", "int"])
def test_invalid_values(value, reason):
    with pytest.raises(SelectorError, match=reason):
        validate_value(value)


def test_empty_value_is_valid():
    validate_value("")


# (structured selector, canonical string form)
STRUCTURED = [
    (None, ""),
    ({}, ""),
    ({"matchLabels": None, "matchExpressions": None}, ""),
    ({"matchLabels": {"app": "web"}}, "app=web"),
    ({"matchLabels": {"tier": "db", "app": "web"}}, "app=web,tier=db"),
    ({"matchExpressions": [{"key": "env", "operator": "In", "values": ["qa", "prod"]}]},
     "env in (prod,qa)"),
    ({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev"]}]},
     "env notin (dev)"),
    ({"matchExpressions": [{"key": "canary", "operator": "Exists"}]}, "canary"),
    ({"matchExpressions": [{"key": "canary", "operator": "DoesNotExist", "values": []}]},
     "!canary"),
    ({"matchLabels": {"app": "web"},
      "matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]},
     "app=web,app notin (db)"),
]


@pytest.mark.parametrize("obj, canonical", STRUCTURED, ids=[
    "None", "empty", "nulls", "matchLabels", "two-labels", "In", "NotIn", "Exists",
    "DoesNotExist", "both"])
def test_structured_selector(obj, canonical):
    selector = selector_from_label_selector(obj)
    assert str(selector) == canonical
    assert selector == parse_selector(canonical)


def test_structured_selector_matches_like_the_string_form():
    selector = selector_from_label_selector({
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev"]}],
    })
    assert selector.matches({"app": "web"})
    assert selector.matches({"app": "web", "env": "prod"})
    assert not selector.matches({"app": "web", "env": "dev"})
    assert not selector.matches({"env": "prod"})


def _expr(key="env", operator="In", values=("a",)):
    expression = {"key": key, "operator": operator}
    if values is not None:
        expression["values"] = list(values)
    return expression


# (structured selector, field path in the error, the reason)
STRUCTURED_ERRORS = [
    ("app=web", "selector: must be a map", "got str"),
    (["app"], "selector: must be a map", "got list"),
    ({"matchLabel": {"app": "web"}}, "selector.matchLabel: unknown field",
     "only matchLabels and matchExpressions"),
    ({"matchLabels": "app=web"}, "matchLabels: must be a map", "got str"),
    ({"matchLabels": ["app"]}, "matchLabels: must be a map", "got list"),
    ({"matchLabels": {"app": 1}}, "matchLabels[app]:", "label value must be a string, got int"),
    ({"matchLabels": {"app": "-web"}}, "matchLabels[app]:", "invalid label value '-web'"),
    ({"matchLabels": {"a b": "web"}}, "matchLabels[a b]:", "invalid label key 'a b'"),
    ({"matchExpressions": {"key": "a"}}, "matchExpressions: must be a list", "got dict"),
    ({"matchExpressions": "a in (b)"}, "matchExpressions: must be a list", "got str"),
    ({"matchExpressions": [_expr(), "env"]}, "matchExpressions[1]: must be a map", "got str"),
    ({"matchExpressions": [_expr(), _expr(values=[])]}, "matchExpressions[1].values",
     "must be non-empty when operator is In"),
    ({"matchExpressions": [_expr(operator="NotIn", values=None)]}, "matchExpressions[0].values",
     "must be non-empty when operator is NotIn"),
    ({"matchExpressions": [_expr(operator="Exists")]}, "matchExpressions[0].values",
     "must be empty when operator is Exists"),
    ({"matchExpressions": [_expr(operator="DoesNotExist", values=["x"])]},
     "matchExpressions[0].values", "must be empty when operator is DoesNotExist"),
    ({"matchExpressions": [_expr(operator="in")]}, "matchExpressions[0].operator",
     "unknown operator 'in'; use one of In, NotIn, Exists, DoesNotExist"),
    ({"matchExpressions": [_expr(operator="Gt", values=["1"])]}, "matchExpressions[0].operator",
     "unknown operator 'Gt'"),
    ({"matchExpressions": [_expr(operator=None)]}, "matchExpressions[0].operator",
     "unknown operator None"),
    ({"matchExpressions": [_expr(operator=["In"])]}, "matchExpressions[0].operator",
     "unknown operator ['In']"),
    ({"matchExpressions": [{"key": "env", "operator": "In", "values": "prod"}]},
     "matchExpressions[0].values", "must be a list, got str"),
    ({"matchExpressions": [_expr(values=["ok", 5])]}, "matchExpressions[0].values[1]",
     "label value must be a string, got int"),
    ({"matchExpressions": [_expr(values=["v" * 64])]}, "matchExpressions[0].values[0]",
     "63 characters or less"),
    ({"matchExpressions": [_expr(key=None)]}, "matchExpressions[0].key", "required"),
    ({"matchExpressions": [_expr(key="Bad/key")]}, "matchExpressions[0].key",
     "invalid label key 'Bad/key'"),
    ({"matchExpressions": [_expr(key=["env"])]}, "matchExpressions[0].key",
     "label key must be a string, got list"),
]


@pytest.mark.parametrize("obj, path, reason", STRUCTURED_ERRORS,
                         ids=[f"{row[1]}-{i}" for i, row in enumerate(STRUCTURED_ERRORS)])
def test_structured_selector_errors(obj, path, reason):
    with pytest.raises(SelectorError) as caught:
        selector_from_label_selector(obj)
    message = str(caught.value)
    assert message.startswith(path)
    assert reason in message


@pytest.mark.parametrize("labels, canonical, matching", [
    ({"app": "web"}, "app=web", {"app": "web", "x": "y"}),
    ({"tier": "db", "app": "web"}, "app=web,tier=db", {"app": "web", "tier": "db"}),
    ({}, "", {"anything": "at-all"}),
    (None, "", {}),
], ids=["one", "two", "empty", "None"])
def test_from_labels(labels, canonical, matching):
    selector = Selector.from_labels(labels)
    assert str(selector) == canonical
    assert selector.matches(matching)


@pytest.mark.parametrize("labels, reason", [
    ("app=web", "labels must be a map, got str"),
    ({"app": 1}, "label value must be a string, got int"),
    ({"-app": "web"}, "invalid label key '-app'"),
], ids=["string", "int-value", "bad-key"])
def test_from_labels_errors(labels, reason):
    with pytest.raises(SelectorError, match=reason):
        Selector.from_labels(labels)


def test_everything_and_nothing():
    everything, nothing = Selector.everything(), Selector.nothing()
    assert everything.is_empty() and everything.matches({}) and everything.matches({"a": "b"})
    assert not nothing.is_empty()
    assert not nothing.matches({}) and not nothing.matches({"a": "b"})
    assert everything != nothing
    assert not parse_selector("a").is_empty()


def test_selectors_are_hashable_values():
    assert parse_selector("b=c,a in (y,x)") == parse_selector("a in (x,y), b==c")
    assert len({parse_selector("a=b"), Selector.from_labels({"a": "b"})}) == 1
    assert repr(parse_selector("a=b")) == "parse_selector('a=b')"
    assert repr(Selector.nothing()) == "Selector.nothing()"


# requirement() builds checked requirements directly, e.g. for node affinity.
@pytest.mark.parametrize("key, operator, values, reason", [
    ("a", "like", ["b"], "unknown operator 'like'"),
    ("a", EQUALS, [], "needs exactly one value, got 0"),
    ("a", EQUALS, ["b", "c"], "needs exactly one value, got 2"),
    ("a", IN, [], "needs at least one value"),
    ("a", EXISTS, ["b"], "takes no values"),
    ("a", GREATER_THAN, ["x"], "needs an integer value, got 'x'"),
    ("a", IN, "xy", "must be a list of strings, not one string"),
    ("a", IN, [["x"]], "label value must be a string, got list"),
    ("-a", IN, ["x"], "invalid label key '-a'"),
], ids=["operator", "no-value", "two-values", "empty-in", "exists-with-value", "gt-not-int",
        "string-values", "nested-list", "bad-key"])
def test_requirement_errors(key, operator, values, reason):
    with pytest.raises(SelectorError, match=reason):
        requirement(key, operator, values)


def test_requirement_sorts_and_deduplicates():
    assert requirement("a", IN, ["z", "y", "z"]) == Requirement("a", IN, ("y", "z"))
    assert requirement("a", IN, (v for v in "zy")) == Requirement("a", IN, ("y", "z"))


def test_requirement_error_quotes_long_input_briefly():
    with pytest.raises(SelectorError, match="needs an integer value") as caught:
        requirement("a", GREATER_THAN, ["9" * 10_000])
    assert len(str(caught.value)) < 500


@pytest.mark.parametrize("obj", [
    {"matchLabels": {"k" * 10_000: "v"}},
    {"matchLabels": {"k": "v" * 10_000}},
    {"matchExpressions": [_expr(operator="O" * 10_000)]},
    {"matchExpressions": [_expr(values=["v" * 10_000])]},
], ids=["long-key", "long-value", "long-operator", "long-expression-value"])
def test_structured_errors_stay_short(obj):
    with pytest.raises(SelectorError) as caught:
        selector_from_label_selector(obj)
    assert len(str(caught.value)) < 500


@pytest.mark.parametrize("text", [
    "k" * 10_000 + " b",
    "a b" + "x" * 10_000,
    "a=" + "v" * 10_000,
    "a=b," * 10_000 + "(",
], ids=["long-key", "long-token", "long-value", "many-requirements"])
def test_parse_errors_stay_short(text):
    with pytest.raises(SelectorError) as caught:
        parse_selector(text)
    assert len(str(caught.value)) < 500
