"""The work queue's guarantees: one entry per key however often it is added,
never two workers on one key, a key changed while processing runs again,
delayed and backed-off adds arrive no sooner than asked, shutdown drains.

Delays here are 0.02-0.3 s. Timing is checked only against generous bounds:
never sooner than asked (the queue promises that), and not absurdly later.
"""
from __future__ import annotations

import random
import threading
import time

import pytest

from common.client.workqueue import RateLimitingQueue, WorkQueue

# How late a delayed key may be and still pass. The property is "never
# early, in due order"; how late a thread wakes on a loaded two-core CI
# machine is the machine's, and 0.5 s was seen to be too little there.
SLACK = 1.0


def drain(queue, wait: float = 0.0) -> list:
    """Every key get() hands out until it has none, calling done after each
    (at most 100, so a queue that re-queues forever fails instead of hanging)."""
    keys = []
    while len(keys) < 100 and (key := queue.get(timeout=wait)) is not None:
        keys.append(key)
        queue.done(key)
    return keys


def timed_get(queue, timeout: float = 2.0):
    start = time.monotonic()
    key = queue.get(timeout=timeout)
    return key, time.monotonic() - start


@pytest.fixture
def rate_limited():
    queues = []

    def make(**kwargs):
        queues.append(RateLimitingQueue(**kwargs))
        return queues[-1]

    yield make
    for queue in queues:
        queue.shutdown()


# --- WorkQueue -------------------------------------------------------------

@pytest.mark.parametrize("adds, expected", [
    (["a"], ["a"]),
    (["a", "a", "a"], ["a"]),
    (["a", "b", "a", "c", "b"], ["a", "b", "c"]),
    (["ns/web-1", "ns/web-2", "ns/web-1"], ["ns/web-1", "ns/web-2"]),
    ([("pods", "default", "x"), ("pods", "default", "x")], [("pods", "default", "x")]),
])
def test_duplicates_collapse_and_order_is_first_in_first_out(adds, expected):
    queue = WorkQueue()
    for key in adds:
        queue.add(key)
    assert queue.len() == len(queue) == len(expected)
    assert drain(queue) == expected


def test_a_key_added_while_processing_runs_again_exactly_once_after_done():
    queue = WorkQueue()
    queue.add("a")
    assert queue.get() == "a"
    for _ in range(3):
        queue.add("a")
    # Not handed to anyone while the first worker still has it.
    assert queue.len() == 0
    assert queue.get(timeout=0.05) is None
    queue.done("a")
    assert queue.len() == 1
    assert drain(queue) == ["a"]


def test_a_requeued_key_goes_behind_keys_added_before_done():
    queue = WorkQueue()
    queue.add("a")
    assert queue.get() == "a"
    queue.add("b")
    queue.add("a")
    queue.done("a")
    assert drain(queue) == ["b", "a"]


def test_done_without_a_new_add_does_not_requeue():
    queue = WorkQueue()
    queue.add("a")
    queue.done(queue.get())
    assert queue.get(timeout=0.05) is None


def test_get_times_out_with_none():
    key, elapsed = timed_get(WorkQueue(), timeout=0.05)
    assert key is None and 0.05 <= elapsed < 0.05 + SLACK


def test_none_is_not_a_key():
    with pytest.raises(ValueError, match="None"):
        WorkQueue().add(None)


def test_never_two_workers_on_one_key_and_the_last_change_is_always_seen():
    """Four producers change 50 objects 2,000 times in all and add each
    object's key after every change; eight workers reconcile. Each worker
    records how many workers hold its key right now, and which version of
    the object it saw, as a level-triggered controller would."""
    queue = WorkQueue()
    keys = [f"default/pod-{i}" for i in range(50)]
    version = dict.fromkeys(keys, 0)   # the "API server": bumped before each add
    seen = dict.fromkeys(keys, -1)     # what the last reconcile of a key read
    holders = dict.fromkeys(keys, 0)
    most_holders = dict.fromkeys(keys, 0)
    adds_to_a_held_key = 0
    lock = threading.Lock()

    def produce(seed):
        nonlocal adds_to_a_held_key
        rng = random.Random(seed)
        for n in range(500):
            key = rng.choice(keys)
            with lock:
                version[key] += 1
                adds_to_a_held_key += holders[key] > 0
            queue.add(key)
            if n % 10 == 0:
                time.sleep(0.0005)  # let workers take keys while changes still arrive

    def work():
        rng = random.Random()
        while (key := queue.get()) is not None:
            with lock:
                holders[key] += 1
                most_holders[key] = max(most_holders[key], holders[key])
                seen[key] = version[key]
            time.sleep(rng.random() * 0.0005)  # long enough for others to collide
            with lock:
                holders[key] -= 1
            queue.done(key)

    workers = [threading.Thread(target=work) for _ in range(8)]
    producers = [threading.Thread(target=produce, args=(seed,)) for seed in range(4)]
    for thread in workers + producers:
        thread.start()
    for thread in producers:
        thread.join()
    # Shutdown still hands out what is queued, and done() still re-queues a
    # key added during processing, so every add below is honoured.
    queue.shutdown()
    for thread in workers:
        thread.join(timeout=10)
        assert not thread.is_alive()

    assert sum(version.values()) == 2000
    assert adds_to_a_held_key > 0, "the test never exercised a change during processing"
    assert max(most_holders.values()) == 1
    assert seen == version


# --- shutdown --------------------------------------------------------------

def test_shutdown_wakes_every_blocked_getter():
    queue = WorkQueue()
    results = []
    getters = [threading.Thread(target=lambda: results.append(queue.get())) for _ in range(3)]
    for thread in getters:
        thread.start()
    queue.shutdown()
    for thread in getters:
        thread.join(timeout=2)
        assert not thread.is_alive()
    assert results == [None, None, None]


def test_shutdown_refuses_new_keys_but_drains_queued_and_dirty_ones():
    queue = WorkQueue()
    for key in ("a", "b", "c"):
        queue.add(key)
    assert queue.get() == "a"
    queue.add("a")  # changed while processing
    assert not queue.shutting_down
    queue.shutdown()
    assert queue.shutting_down
    queue.add("new")
    queue.done("a")
    assert drain(queue) == ["b", "c", "a"]
    assert queue.get() is None  # does not block once drained


# --- add_after -------------------------------------------------------------

def test_delayed_keys_arrive_in_due_order_and_never_early(rate_limited):
    queue = rate_limited()
    start = time.monotonic()
    for key, delay in [("c", 0.3), ("a", 0.05), ("b", 0.15)]:
        queue.add_after(key, delay)
    assert queue.len() == 0
    for key, delay in [("a", 0.05), ("b", 0.15), ("c", 0.3)]:
        assert queue.get(timeout=2) == key
        elapsed = time.monotonic() - start
        assert delay <= elapsed < delay + SLACK, (key, elapsed)
        queue.done(key)


@pytest.mark.parametrize("delay", [0, -1])
def test_no_delay_means_now(rate_limited, delay):
    queue = rate_limited()
    queue.add_after("a", delay)
    assert queue.len() == 1


@pytest.mark.parametrize("first, second, due, before", [
    (1.5, 0.05, 0.05, 1.5),     # an earlier time pulls the key forward
    (0.05, 1.5, 0.05, 1.5),     # a later one does not push it back
    (0.1, 0.1, 0.1, 0.1 + SLACK),
])
def test_a_key_waiting_twice_arrives_once_at_the_earlier_time(rate_limited, first, second, due, before):
    queue = rate_limited()
    start = time.monotonic()
    queue.add_after("a", first)
    queue.add_after("a", second)
    assert queue.get(timeout=2) == "a"
    elapsed = time.monotonic() - start
    assert due <= elapsed < before
    queue.done("a")
    # Waited past the later of the two: no second arrival.
    assert queue.get(timeout=max(first, second) - elapsed + 0.05) is None


def test_a_delayed_key_honours_the_one_worker_rule(rate_limited):
    queue = rate_limited()
    queue.add("a")
    assert queue.get() == "a"
    queue.add_after("a", 0.05)
    assert queue.get(timeout=0.2) is None  # due, but a worker still has it
    queue.done("a")
    assert drain(queue) == ["a"]


def test_shutdown_drops_delayed_keys_and_stops_the_timer(rate_limited):
    queue = rate_limited()
    queue.add_after("a", 0.05)
    queue.shutdown()
    assert not queue._thread.is_alive()
    assert queue.get(timeout=0.15) is None


# --- add_rate_limited ------------------------------------------------------

@pytest.mark.parametrize("base, maximum, delays", [
    (0.02, 1.0, [0.02, 0.04, 0.08, 0.16]),   # doubles
    (0.02, 0.05, [0.02, 0.04, 0.05, 0.05]),  # up to the cap
])
def test_back_off_grows_exponentially_up_to_the_maximum(rate_limited, base, maximum, delays):
    queue = rate_limited(base_delay=base, max_delay=maximum)
    for failures, delay in enumerate(delays, start=1):
        start = time.monotonic()
        queue.add_rate_limited("a")
        assert queue.num_requeues("a") == failures
        assert queue.get(timeout=2) == "a"
        elapsed = time.monotonic() - start
        assert delay <= elapsed < delay + SLACK, (failures, elapsed)
        queue.done("a")


def test_forget_starts_the_back_off_over(rate_limited):
    queue = rate_limited(base_delay=0.1, max_delay=5.0)
    for _ in range(4):  # 0.1, 0.2, 0.4, 0.8: the next would be 1.6
        queue.add_rate_limited("a")
        queue.done(queue.get(timeout=5))
    queue.forget("a")
    assert queue.num_requeues("a") == 0
    start = time.monotonic()
    queue.add_rate_limited("a")
    assert queue.get(timeout=5) == "a"
    # back at the base delay: well under the 1.6 s the fifth delay would be, with room for a busy machine
    assert 0.1 <= time.monotonic() - start < 1.2
    assert queue.num_requeues("a") == 1


def test_each_key_backs_off_on_its_own(rate_limited):
    queue = rate_limited(base_delay=0.05, max_delay=5.0)
    for _ in range(5):  # flaky's next delay would be 1.6
        queue.add_rate_limited("flaky")
    assert queue.num_requeues("flaky") == 5
    assert queue.num_requeues("fine") == 0
    start = time.monotonic()
    queue.add_rate_limited("fine")  # its first failure: the base delay, not 0.64
    assert queue.num_requeues("fine") == 1
    assert queue.get(timeout=5) == "flaky"  # its first add_after, at 0.05, stands
    queue.done("flaky")
    assert queue.get(timeout=5) == "fine"
    assert time.monotonic() - start < 1.2    # fine's own 0.05 s, not flaky's 1.6 s (room for a busy machine)
