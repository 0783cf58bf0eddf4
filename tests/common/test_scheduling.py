"""The placement rules the scheduler and the controllers share
(common/model/scheduling.py), table by table. The plugins built on them are
tested in tests/scheduler, the controllers in tests/controllers."""
from __future__ import annotations

from typing import NamedTuple

import pytest

from common.model.scheduling import expression_matches, term_matches, tolerated, tolerates

GPU = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


@pytest.mark.parametrize("toleration, expected", [
    ({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}, True),
    ({"key": "dedicated", "operator": "Equal", "value": "gpu"}, True),                  # any effect
    ({"key": "dedicated", "value": "cpu", "effect": "NoSchedule"}, False),               # other value
    ({"key": "dedicated", "value": "gpu", "effect": "NoExecute"}, False),                # other effect
    ({"key": "dedicated", "operator": "Exists"}, True),                                  # any value
    ({"operator": "Exists"}, True),                                                      # every taint
    ({"key": "other", "operator": "Exists"}, False),
    ({"key": "dedicated", "operator": "Gt", "value": "gpu"}, False),                     # not an operator here
])
def test_tolerates(toleration, expected):
    assert tolerates(toleration, GPU) is expected


def test_tolerated_by_any_one_of_several():
    assert tolerated([{"key": "other", "operator": "Exists"}, {"key": "dedicated", "operator": "Exists"}], GPU)
    assert not tolerated([], GPU)


LABELS = {"zone": "a", "cores": "8"}


@pytest.mark.parametrize("expression, expected", [
    ({"key": "zone", "operator": "In", "values": ["a", "b"]}, True),
    ({"key": "zone", "operator": "In", "values": ["b"]}, False),
    ({"key": "zone", "operator": "NotIn", "values": ["b"]}, True),
    ({"key": "disk", "operator": "NotIn", "values": ["ssd"]}, True),                     # absent: not in
    ({"key": "zone", "operator": "Exists"}, True),
    ({"key": "disk", "operator": "DoesNotExist"}, True),
    ({"key": "cores", "operator": "Gt", "values": ["4"]}, True),
    ({"key": "cores", "operator": "Lt", "values": ["4"]}, False),
    ({"key": "zone", "operator": "Gt", "values": ["4"]}, False),                         # not a number
    ({"key": "zone", "operator": "Unknown", "values": ["a"]}, False),
])
def test_expression_matches(expression, expected):
    assert expression_matches(expression, LABELS) is expected


class Node(NamedTuple):
    name: str
    labels: dict


@pytest.mark.parametrize("term, expected", [
    ({}, False),                                                                         # empty: no node
    ({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}, True),
    ({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node1"]}]}, True),
    ({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node2"]}]}, False),
    ({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}],
      "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node2"]}]}, False),   # all must hold
])
def test_term_matches(term, expected):
    assert term_matches(term, Node("node1", LABELS)) is expected
