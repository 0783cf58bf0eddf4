"""Registration points: where what extends the core plugs in at start-up.

kubectl_compat/ (what the real kubectl needs beyond JSON) and extensions/
(what later chapters add) register here from their `init_app(app)`, as a
Flask extension sets itself up on an app; the core asks and never imports
them, as Kubernetes' handlers ask a codec factory, a kind's strategy or a
TableConvertor. With nothing registered the core does the plain-JSON thing:
JSON or YAML bodies (decode.py); JSON answers, or 406 (rest.accept_json_only);
merge patches (app.py registers that patcher; 415 for other types); no Tables,
field selectors (400) or schema checks. A single callable, and a media type's
decoder or patcher, has one owner: the last to register.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Callable

import api_errors


@dataclass
class Hooks:
    options_checks: list[Callable] = field(default_factory=list)  # ("CreateOptions", ...): a write's query
    decoders: dict[str, Callable] = field(default_factory=dict)  # media type -> (body, resource) -> object
    object_checks: list[Callable] = field(default_factory=list)  # (decoded obj, resource); raise to refuse
    unknown_fields: list[Callable] = field(default_factory=list)  # (resource, obj) -> paths no schema names
    duplicate_fields: Callable | None = None                     # (JSON body) -> paths of repeated keys
    patchers: dict[str, Callable] = field(default_factory=dict)  # media type -> see patch()
    patch_checks: list[Callable] = field(default_factory=list)   # (resource, subresource, media type)
    creating_patches: set[str] = field(default_factory=set)      # a PATCH of a missing object creates it
    # A kind's strategy, for kinds the core does not know (custom ones):
    validators: list[Callable] = field(default_factory=list)     # (resource, obj, old, subresource) -> errors
    defaulters: list[Callable] = field(default_factory=list)     # (resource, obj) -> obj
    update_checks: list[Callable] = field(default_factory=list)  # (resource, name, resourceVersion sent)
    allocators: list[Callable] = field(default_factory=list)     # see allocating()
    schema_sources: list[Callable] = field(default_factory=list)  # () -> {OpenAPI definition name: schema}
    definition_names: list[Callable] = field(default_factory=list)  # (resource, kind) -> that name, or None
    table: Callable | None = None    # per request, for its ?includeObject: () -> (resource, objects, list meta) -> Table
    field_selector: Callable | None = None      # (?fieldSelector, resource) -> has matches(obj)
    negotiate: Callable | None = None           # before a request: 406 for an Accept we cannot answer
    encode_answer: Callable | None = None       # after it: (response) -> the JSON answer as YAML, if chosen

    def check_options(self, options_kind: str) -> None:
        for check in self.options_checks:
            check(options_kind)

    def validate(self, resource, obj: dict, old: dict | None, subresource: str):
        """The first registered strategy's field errors; None when none claims the kind."""
        answers = (validate(resource, obj, old, subresource) for validate in self.validators)
        return next((errors for errors in answers if errors is not None), None)

    def apply_defaults(self, resource, obj: dict) -> dict:
        for apply_defaults in self.defaulters:
            obj = apply_defaults(resource, obj)
        return obj

    @contextlib.contextmanager
    def allocating(self, resource, subresource: str, obj: dict, old: dict | None, dry_run: bool):
        """What a write hands out with an object (a Service's cluster IP), held until stored:
        each allocator gives a context manager, or None; if one refuses, the ones before it release."""
        with contextlib.ExitStack() as held:
            for allocate in self.allocators:
                holding = allocate(resource, subresource, obj, old, dry_run)
                if holding is not None:
                    held.enter_context(holding)
            yield

    def patch(self, media_type: str, live: dict | None, body: bytes, group: str, version: str, kind: str,
              manager: str = "", force: bool = False) -> dict:
        """The object `live` becomes after the patch; 415 for a type nobody registered."""
        patcher = self.patchers.get(media_type.split(";")[0].strip().lower())
        if patcher is None:
            raise api_errors.unsupported_media_type(media_type, tuple(self.patchers))
        return patcher(media_type, live, body, group, version, kind, manager, force)

    def parse_field_selector(self, text: str | None, resource):
        if self.field_selector is not None:
            return self.field_selector(text, resource)
        if text:
            raise api_errors.bad_request(f"field selectors are not served by this server: {text!r}")
        return EVERY_OBJECT


class _EveryObject:
    def matches(self, obj: dict) -> bool:
        return True


EVERY_OBJECT = _EveryObject()        # the empty field selector
