"""The userspace proxy's session affinity table, in process: a client keeps
its endpoint while its affinity lasts, and clients whose affinity ran out
are dropped, so a Service asked by many clients over days does not keep
one entry per client for ever. Time is the proxy's clock, moved by the test."""
from __future__ import annotations

import logging

import pytest

import proxy


@pytest.fixture
def port(monkeypatch):
    clock = {"now": 1000.0}
    monkeypatch.setattr(proxy.time, "monotonic", lambda: clock["now"])
    made = proxy.ServicePort("default/web:80", "10.96.0.20", 80, None, 60, logging.getLogger("test"))
    made.endpoints = [("10.244.0.2", 80), ("10.244.1.2", 80)]
    made.clock = clock
    yield made
    made.listener.close()


def test_a_client_keeps_its_endpoint_while_its_affinity_lasts(port):
    first = port.next_endpoint("10.244.0.9")
    port.clock["now"] += 59
    assert port.next_endpoint("10.244.0.9") == first          # and the 60 s start again
    port.clock["now"] += 59
    assert port.next_endpoint("10.244.0.9") == first


def test_clients_whose_affinity_ran_out_are_forgotten(port):
    for i in range(1000):
        port.next_endpoint(f"10.244.{i // 250}.{i % 250 + 1}")
    assert len(port._affinity) == 1000
    port.clock["now"] += 61
    port.next_endpoint("10.244.9.9")                            # a new client's choice sweeps the table
    assert set(port._affinity) == {"10.244.9.9"}
