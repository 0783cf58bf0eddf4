"""What the real kubectl needs beyond the core's JSON, plugged into the core's hooks.

The core (one folder up) never imports this package: apiserver.py calls
`init_app(app)` at start-up, unless started with --no-kubectl-compat, as
a Flask extension is set up on an app. Everything kubectl asks for beyond
plain JSON is registered here, in one place (README.md: why each module).
"""
from __future__ import annotations

from flask import request

import api_errors
from . import discovery, field_validation, negotiation, openapi, openapi_v2
from . import patches, printers, protobuf, type_check
from common.model.field_errors import invalid, too_long


# [START kubectl-compat-init]
def init_app(app) -> None:
    hooks = app.extensions["apiserver"].hooks
    hooks.decoders[negotiation.PROTOBUF] = protobuf.object_from_request    # kubectl 1.32+'s create generators
    hooks.object_checks.append(type_check.check_types)         # a field of the wrong type: Go's 400
    hooks.unknown_fields.append(unknown_fields)                # ?fieldValidation against published schemas
    hooks.duplicate_fields = field_validation.find_duplicate_fields
    # All four PATCH formats: update(), not assignment, keeps what others registered;
    # the core's merge patch is replaced on purpose, by one that also checks types.
    hooks.patchers.update(dict.fromkeys(patches.PATCH_TYPES, patches.apply_patch))
    hooks.patch_checks.append(check_apply)                     # server-side apply: whole objects only,
    hooks.creating_patches.add(patches.APPLY_PATCH)            # and it creates what is missing
    hooks.table = table_printer                                # the columns of `kubectl get`
    hooks.options_checks.append(check_field_manager)           # ?fieldManager= of every write
    hooks.negotiate = negotiation.refuse_unacceptable          # JSON, YAML, or 406
    hooks.encode_answer = negotiation.answer_as_yaml
    for part in (discovery, openapi, openapi_v2):              # what kubectl reads before anything else
        app.register_blueprint(part.bp)
# [END kubectl-compat-init]


def unknown_fields(resource, obj) -> list[str]:
    return field_validation.unknown_fields(resource.group, resource.version, resource.kind, obj)


def table_printer():
    """The Table printer for this request: ?includeObject says how much of
    each object a row carries (kubectl asks for Metadata)."""
    include = request.args.get("includeObject", "Metadata")
    if include not in printers.INCLUDE_OBJECT:
        raise api_errors.bad_request(f"includeObject must be None, Metadata or Object, not {include!r}")
    return lambda resource, objects, list_metadata: printers.to_table(resource, objects, list_metadata, include)


# Kubernetes' limit (FieldManagerMaxLength): a manager's name is stored in
# every managedFields entry it owns.
FIELD_MANAGER_MAX_BYTES = 128


def check_field_manager(options_kind: str) -> None:
    """The query of a write is a CreateOptions, UpdateOptions or PatchOptions
    object to Kubernetes, validated before the body is read: 422 with
    `CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: ...`.
    Its one field we check names an owner in managedFields, which only
    server-side apply keeps."""
    manager = request.args.get("fieldManager", "")
    errors = []
    if len(manager.encode()) > FIELD_MANAGER_MAX_BYTES:
        errors.append(too_long("fieldManager", manager, FIELD_MANAGER_MAX_BYTES))
    for index, char in enumerate(manager):
        if not char.isprintable():    # Go counts the position in bytes, as we do
            position = len(manager[:index].encode())
            errors.append(invalid("fieldManager", manager,
                                  f"invalid character U+{ord(char):04X} (at position {position})"))
    if errors:
        error = api_errors.invalid("", f"{options_kind}.meta.k8s.io", "", errors)
        error.details.update(group="meta.k8s.io", kind=options_kind)
        raise error


def check_apply(resource, subresource: str, media_type: str) -> None:
    """Before the object is read: our apply tracks spec and metadata only.
    (A missing ?fieldManager is patches.apply_patch's to refuse, after the
    body parses, as Kubernetes words it.)"""
    if media_type == patches.APPLY_PATCH and subresource:
        # Say so rather than do nothing.
        raise api_errors.bad_request(f"server-side apply to {resource}/{subresource} is not supported "
                                     "by this server: send a merge or strategic merge patch instead")
