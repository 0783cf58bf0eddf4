"""The scheduling queue (order, back-off, cluster events) and the cache
(assume, confirm, forget, expire), on a clock the test moves by hand."""
from __future__ import annotations

import threading

import pytest

from scheduler_cache import SchedulerCache
from scheduler_harness import make_pod, node_object
from scheduling_queue import SchedulingQueue


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def queue(clock):
    return SchedulingQueue(initial_backoff=1, max_backoff=10, max_unschedulable_wait=60, clock=clock)


def drain(queue):
    """Keys poppable right now, in order."""
    keys = []
    while (queued := queue.pop(timeout=0)) is not None:
        keys.append(queued.key)
    return keys


# ---------------------------------------------------------------- order

def test_higher_priority_first_then_first_come(queue, clock):
    for key, priority in [("a", 0), ("b", 10), ("c", 0), ("d", 10), ("e", -5)]:
        queue.add(key, priority)
        clock.now += 1
    assert drain(queue) == ["b", "d", "a", "c", "e"]


def test_a_pod_is_queued_once(queue):
    queue.add("a")
    queue.add("a")
    assert drain(queue) == ["a"]


def test_deleted_pods_are_skipped(queue):
    queue.add("a")
    queue.add("b")
    queue.delete("a")
    assert drain(queue) == ["b"]


# ---------------------------------------------------------------- back-off

def test_backoff_doubles_up_to_its_ceiling(queue, clock):
    queue.add("a")
    queued = queue.pop(timeout=0)
    waits = []
    for _ in range(6):
        queue.backoff(queued)
        start = clock.now
        while (queued := queue.pop(timeout=0)) is None:
            clock.now += 0.5
        waits.append(clock.now - start)
    assert waits == [1, 2, 4, 8, 10, 10]


def test_an_unschedulable_pod_waits_for_a_cluster_event(queue, clock):
    queue.add("a")
    queue.unschedulable(queue.pop(timeout=0))
    clock.now += 5                                       # long past its 1 s back-off
    assert drain(queue) == []                            # still waiting: nothing changed
    assert queue.cluster_event("node added") == 1
    assert drain(queue) == ["a"]


def test_an_event_during_the_back_off_moves_the_pod_to_backoff_not_active(queue, clock):
    queue.add("a")
    queue.unschedulable(queue.pop(timeout=0))
    queue.cluster_event("node updated")                  # 0 s after failing: back-off not over
    assert drain(queue) == []
    assert queue.counts() == {"backoff": 1}
    clock.now += 1
    assert drain(queue) == ["a"]


def test_without_events_an_unschedulable_pod_still_comes_back(queue, clock):
    queue.add("a")
    queue.unschedulable(queue.pop(timeout=0))
    clock.now += 59.9
    assert drain(queue) == []
    clock.now += 0.1
    assert drain(queue) == ["a"]                         # after max_unschedulable_wait


def test_an_event_while_the_pod_was_being_tried_is_not_lost(queue, clock):
    queue.add("a")
    queued = queue.pop(timeout=0)
    queue.cluster_event("node added")                    # a node arrives mid-cycle
    queue.unschedulable(queued)                          # the cycle ran on the old picture
    assert queue.counts() == {"backoff": 1}              # so it is retried, not parked
    clock.now += 1
    assert drain(queue) == ["a"]


def test_a_spec_change_while_the_pod_was_being_tried_is_not_lost(queue, clock):
    queue.add("a")
    queued = queue.pop(timeout=0)
    queue.update("a")                                    # say, its nodeSelector removed mid-cycle
    queue.unschedulable(queued)
    assert queue.counts() == {"backoff": 1}


def test_done_removes_only_the_entry_it_was_given(queue):
    queue.add("a")
    old = queue.pop(timeout=0)
    queue.delete("a")                                    # the pod was deleted ...
    queue.add("a")                                       # ... and created again under the same name
    queue.done(old)                                      # the old one's binding was refused
    assert drain(queue) == ["a"]


def test_a_spec_change_gives_an_unschedulable_pod_another_try(queue, clock):
    queue.add("a")
    queue.unschedulable(queue.pop(timeout=0))
    clock.now += 2
    queue.update("a")
    assert drain(queue) == ["a"]


def test_pop_sleeps_until_the_back_off_ends():
    queue = SchedulingQueue(initial_backoff=0.2)
    queue.add("a")
    queue.backoff(queue.pop(timeout=0))
    popped = queue.pop(timeout=5)                        # wakes by itself, no polling loop in the test
    assert popped is not None and popped.key == "a"


def test_close_wakes_a_waiting_pop():
    queue = SchedulingQueue()
    result = []
    waiter = threading.Thread(target=lambda: result.append(queue.pop()))
    waiter.start()
    queue.close()
    waiter.join(5)
    assert result == [None]


# ---------------------------------------------------------------- the cache

def test_an_assumed_pod_counts_at_once_and_is_confirmed_by_the_watch(clock):
    cache = SchedulerCache(clock=clock)
    cache.set_node(node_object("n1", cpu="1"))
    pod = make_pod("web", cpu="600m")
    cache.assume(pod, "n1")
    assert cache.node("n1").requested["cpu"] == 600 and cache.is_assumed("default/web")
    bound = make_pod("web", cpu="600m", nodeName="n1")
    cache.add_pod(bound)                                  # the watch shows it bound
    assert cache.node("n1").requested["cpu"] == 600       # counted once, not twice
    assert not cache.is_assumed("default/web")


def test_the_watch_knows_better_where_a_pod_went(clock):
    cache = SchedulerCache(clock=clock)
    cache.set_node(node_object("n1"))
    cache.set_node(node_object("n2"))
    cache.assume(make_pod("web", cpu="1"), "n1")
    cache.add_pod(make_pod("web", cpu="1", nodeName="n2"))   # someone else bound it first
    assert cache.counts() == {"n1": 0, "n2": 1}
    cache.forget("default/web")                               # our binding's 409 arrives later
    assert cache.counts() == {"n1": 0, "n2": 1}               # a confirmed pod is not forgotten


def test_a_failed_binding_frees_the_room(clock):
    cache = SchedulerCache(clock=clock)
    cache.set_node(node_object("n1"))
    cache.assume(make_pod("web", cpu="1"), "n1")
    cache.forget("default/web")
    assert cache.node("n1").requested["cpu"] == 0 and not cache.is_placed("default/web")


def test_an_assumption_the_watch_never_confirms_expires(clock):
    cache = SchedulerCache(assumed_ttl=30, clock=clock)
    cache.set_node(node_object("n1"))
    cache.assume(make_pod("web", cpu="1"), "n1")
    clock.now += 3600
    assert cache.expire_assumed() == []                       # never expires while the binding is in flight
    cache.finish_binding("default/web")
    clock.now += 29
    assert cache.expire_assumed() == []
    clock.now += 1
    assert cache.expire_assumed() == ["default/web"]
    assert cache.node("n1").requested["cpu"] == 0


def test_pods_of_a_node_not_seen_yet_are_kept_for_it(clock):
    cache = SchedulerCache(clock=clock)
    cache.add_pod(make_pod("web", cpu="1", nodeName="n1"))
    assert cache.nodes() == []                                 # nothing to schedule onto yet
    cache.set_node(node_object("n1"))
    assert [n.name for n in cache.nodes()] == ["n1"] and cache.node("n1").requested["cpu"] == 1000
    cache.remove_node("n1")
    assert cache.nodes() == [] and cache.counts() == {"n1": 1}
    cache.remove_pod("default/web")
    assert cache.counts() == {}


def test_assuming_a_pod_twice_is_a_bug():
    cache = SchedulerCache()
    cache.set_node(node_object("n1"))
    cache.assume(make_pod("web"), "n1")
    with pytest.raises(ValueError, match="already counted on n1"):
        cache.assume(make_pod("web"), "n1")
