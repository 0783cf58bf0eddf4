"""hooks.py, unit by unit: what the core does with what is registered."""
from __future__ import annotations

import pytest

import api_errors
from hooks import Hooks


class Allocator:
    """A fake allocator that records what it holds, and may refuse."""

    def __init__(self, name: str, held: list, refuse: bool = False):
        self.name, self.held, self.refuse = name, held, refuse

    def __call__(self, resource, subresource, obj, old, dry_run):
        if self.refuse:
            raise api_errors.invalid(resource, "Service", "s", [])
        return self

    # A class, not a @contextmanager generator: what it holds is released only
    # by __exit__, never by the garbage collector closing a forgotten generator.
    def __enter__(self):
        self.held.append(self.name)

    def __exit__(self, *exc_info):
        self.held.remove(self.name)


def test_what_allocators_hold_is_kept_until_the_write_ends():
    held: list[str] = []
    hooks = Hooks(allocators=[Allocator("ip", held), Allocator("port", held)])
    with hooks.allocating("services", "", {}, None, False):
        assert held == ["ip", "port"]
    assert held == []


def test_a_refusing_allocator_releases_what_those_before_it_hold():
    held: list[str] = []
    hooks = Hooks(allocators=[Allocator("ip", held), Allocator("port", held, refuse=True)])
    with pytest.raises(api_errors.APIError):
        with hooks.allocating("services", "", {}, None, False):
            pytest.fail("the write went on after an allocator refused")
    assert held == []


def test_a_failed_write_releases_everything_held():
    held: list[str] = []
    hooks = Hooks(allocators=[Allocator("ip", held), lambda *args: None, Allocator("port", held)])
    with pytest.raises(RuntimeError):
        with hooks.allocating("services", "", {}, None, False):
            raise RuntimeError("the store refused")
    assert held == []


def test_patchers_registered_by_others_survive_kubectl_compat():
    """kubectl_compat adds its four PATCH types to what is there (update(),
    not assignment): another extension's type stays."""
    import kubectl_compat

    class App:
        extensions = {"apiserver": type("Server", (), {"hooks": Hooks()})()}

        def register_blueprint(self, bp):
            pass

    app = App()
    mine = object()
    app.extensions["apiserver"].hooks.patchers["application/x-mine"] = mine
    kubectl_compat.init_app(app)
    patchers = app.extensions["apiserver"].hooks.patchers
    assert patchers["application/x-mine"] is mine
    assert set(patchers) >= {"application/merge-patch+json", "application/strategic-merge-patch+json"}
