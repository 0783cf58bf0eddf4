"""CustomResourceDefinitions: kinds a user adds to the API while it runs.

A CustomResourceDefinition (CRD) is an object like any other, stored at
/apis/apiextensions.k8s.io/v1/customresourcedefinitions. What makes it
special is what the server does once one is stored: it starts serving a new
resource, `/apis/<group>/<version>/<plural>`, exactly as it serves pods:
CRUD, watch, patches, selectors, discovery, OpenAPI, printing. Nothing but
the definition (and its openAPIV3Schema, crd_schema.py) tells it how.

As in Kubernetes, that happens *after* the write, in a small controller
inside the server: it watches the definitions, checks that the names are
free (condition NamesAccepted), adds the kind to the registry and marks the
definition Established. So a client that creates a CRD waits for
Established before it creates objects of the new kind:

    kubectl wait --for condition=established crd/websites.example.groundup.dev

Deleting a definition deletes its objects first: the controller put a
finalizer on it, and removes it once the objects are gone.
"""
from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field

import admission
import api_errors
import deletion
import registry
from request_context import server
from . import crd_schema
from common.model.field_errors import FieldError, child, forbidden, index, invalid, not_supported, required
from common.log import get_logger
from common.model.validate import validate_metadata_update, validate_object, validate_status_update
from common.model.validation import validate_object_meta, validate_type_meta
from common.times import rfc3339
from watch_cache import Expired

log = get_logger("apiserver")

CRDS = registry.for_kind("apiextensions.k8s.io", "CustomResourceDefinition")
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_KIND = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")


# [START custom-resource]
@dataclass(frozen=True)
class CustomResource(registry.Resource):
    """A served resource made from one version of a definition: what the
    rest of the server looks up in the registry, plus what only custom kinds
    carry (their schema and `kubectl get` columns)."""
    singular_name: str = ""
    list_kind_name: str = ""
    schema: dict = field(default_factory=dict, hash=False)             # openAPIV3Schema
    printer_columns: tuple = field(default=(), hash=False)             # additionalPrinterColumns

    @property
    def singular(self) -> str:
        return self.singular_name

    @property
    def list_kind(self) -> str:
        return self.list_kind_name


def resources_of(crd: dict) -> list[CustomResource]:
    """One CustomResource per served version of a (valid) definition."""
    spec = crd["spec"]
    names = accepted_names(spec["names"])
    return [CustomResource(
        spec["group"], version["name"], names["kind"], names["plural"], spec["scope"] == "Namespaced",
        tuple(names.get("shortNames", ())), ("status",) if "status" in (version.get("subresources") or {}) else (),
        tuple(names.get("categories", ())), singular_name=names["singular"], list_kind_name=names["listKind"],
        schema=version["schema"]["openAPIV3Schema"],
        printer_columns=tuple(version.get("additionalPrinterColumns") or ()))
        for version in spec["versions"] if version.get("served")]
# [END custom-resource]


# --- OpenAPI: the definitions openapi.py publishes for custom kinds ---------

_META = "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1."


def definition_name(resource: CustomResource, kind: str) -> str:
    """Kubernetes' name for a custom kind's schema: the group reversed, then
    version and kind, e.g. "dev.groundup.example.v1.Website"."""
    return ".".join([*reversed(resource.group.split(".")), resource.version, kind])


def definitions() -> dict[str, dict]:
    """The kind and list schemas of every served custom resource, in the
    published schemas' form (apiVersion, kind and metadata added, as
    Kubernetes adds them), by definition name."""
    out = {}
    for r in registry.served():
        if not isinstance(r, CustomResource):
            continue
        type_meta = {"apiVersion": {"type": "string", "description": "APIVersion defines the versioned schema "
                                    "of this representation of an object."},
                     "kind": {"type": "string", "description": "Kind is a string value representing the REST "
                              "resource this object represents."}}
        gvk = {"group": r.group, "version": r.version}
        out[definition_name(r, r.kind)] = {
            **r.schema, "type": "object",
            "properties": {**type_meta, "metadata": {"$ref": _META + "ObjectMeta"},
                           **(r.schema.get("properties") or {})},
            "x-kubernetes-group-version-kind": [{**gvk, "kind": r.kind}]}
        out[definition_name(r, r.list_kind)] = {
            "type": "object", "required": ["items"],
            "description": f"{r.list_kind} is a list of {r.kind}",
            "properties": {**type_meta, "metadata": {"$ref": _META + "ListMeta"},
                           "items": {"type": "array", "items": {"$ref": "#/$defs/" + definition_name(r, r.kind)}}},
            "x-kubernetes-group-version-kind": [{**gvk, "kind": r.list_kind}]}
    return out


def accepted_names(names: dict) -> dict:
    """spec.names with Kubernetes' defaults: singular is the kind in lower
    case, listKind the kind + "List"."""
    return {**names, "singular": names.get("singular") or names["kind"].lower(),
            "listKind": names.get("listKind") or names["kind"] + "List"}


# --- validation: of definitions, and of custom objects ---------------------

def validate(resource, obj, old, subresource: str) -> list[FieldError] | None:
    """The validation writes.py asks for (hooks.validate): a definition or a custom object;
    None for every other kind (common.model.validate has their rules)."""
    if resource is CRDS:
        check = validate_status_update if subresource == "status" else validate_object
        errors = check(resource.group, resource.kind, obj, old, namespaced=False)
        return errors if subresource == "status" else errors + validate_definition(obj, old)
    if not isinstance(resource, CustomResource):
        return None
    errors = validate_type_meta(obj, resource.api_version, resource.kind)
    errors += validate_object_meta(obj.get("metadata"), namespaced=resource.namespaced)
    if isinstance(old, dict):
        errors += validate_metadata_update(obj, old)
    return errors + crd_schema.validate(resource.schema, obj)


def validate_definition(crd: dict, old: dict | None) -> list[FieldError]:
    spec = crd.get("spec") if isinstance(crd.get("spec"), dict) else {}
    errors: list[FieldError] = []
    group = spec.get("group")
    if not isinstance(group, str) or not group:
        errors.append(required("spec.group"))
    elif not _DNS_SUBDOMAIN.match(group) or "." not in group:
        errors.append(invalid("spec.group", group, "should be a domain with at least one dot"))
    elif any(r.group == group for r in registry.RESOURCES):
        errors.append(invalid("spec.group", group, "is a group this server serves itself"))
    errors += _validate_names(spec.get("names"))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        errors.append(not_supported("spec.scope", spec.get("scope"), ("Cluster", "Namespaced")))
    errors += _validate_versions(spec.get("versions"))
    plural = (spec.get("names") or {}).get("plural") if isinstance(spec.get("names"), dict) else None
    name = crd["metadata"].get("name")
    if plural and group and name != f"{plural}.{group}":
        errors.append(invalid("metadata.name", name, "must be spec.names.plural+\".\"+spec.group"))
    if old is not None and (old.get("spec") or {}).get("scope") != spec.get("scope"):
        errors.append(invalid("spec.scope", spec.get("scope"), "field is immutable"))
    return errors


def _validate_names(names) -> list[FieldError]:
    if not isinstance(names, dict):
        return [required("spec.names")]
    errors = []
    for key in ("plural", "singular"):
        value = names.get(key)
        if value is None and key == "singular":
            continue
        if not isinstance(value, str) or not _DNS_LABEL.match(value):
            errors.append(invalid(f"spec.names.{key}", value, "a lowercase RFC 1123 label, e.g. 'websites'")
                          if value else required(f"spec.names.{key}"))
    for key in ("kind", "listKind"):
        value = names.get(key)
        if value is None and key == "listKind":
            continue
        if not isinstance(value, str) or not _KIND.match(value):
            errors.append(invalid(f"spec.names.{key}", value, "a name like 'Website': letters and digits")
                          if value else required(f"spec.names.{key}"))
    for i, short in enumerate(names.get("shortNames") or ()):
        if not isinstance(short, str) or not _DNS_LABEL.match(short):
            errors.append(invalid(index("spec.names.shortNames", i), short, "a lowercase RFC 1123 label"))
    if names.get("kind") and names.get("listKind") == names.get("kind"):
        errors.append(invalid("spec.names.listKind", names["listKind"], "kind and listKind may not be the same"))
    return errors


def _validate_versions(versions) -> list[FieldError]:
    if not isinstance(versions, list) or not versions:
        return [required("spec.versions", "must have at least one version")]
    errors, seen = [], set()
    for i, version in enumerate(versions):
        path = index("spec.versions", i)
        if not isinstance(version, dict):
            errors.append(invalid(path, version, "must be an object"))
            continue
        name = version.get("name")
        if not isinstance(name, str) or not _DNS_LABEL.match(name):
            errors.append(invalid(child(path, "name"), name, "a version name such as v1 or v1beta1"))
        elif name in seen:
            errors.append(FieldError(child(path, "name"), "Duplicate value", name))
        seen.add(name)
        schema = (version.get("schema") or {}).get("openAPIV3Schema") if isinstance(version.get("schema"), dict) else None
        if schema is None:
            errors.append(required(f"{path}.schema.openAPIV3Schema", "schemas are required"))
        else:
            errors += crd_schema.structural_errors(schema, f"{path}.schema.openAPIV3Schema")
        for j, column in enumerate(version.get("additionalPrinterColumns") or ()):
            column_path = index(child(path, "additionalPrinterColumns"), j)
            for key in ("name", "type", "jsonPath"):
                if not isinstance(column, dict) or not column.get(key):
                    errors.append(required(child(column_path, key)))
        if set(version.get("subresources") or {}) - {"status"}:
            errors.append(forbidden(child(path, "subresources"), "only the status subresource is supported here"))
    storage = [v for v in versions if isinstance(v, dict) and v.get("storage")]
    if len(storage) != 1:
        errors.append(invalid("spec.versions", len(storage), "must have exactly one version marked as storage version"))
    if not any(isinstance(v, dict) and v.get("served") for v in versions):
        errors.append(invalid("spec.versions", len(versions), "must have at least one served version"))
    return errors


def apply_defaults(resource, obj: dict) -> dict:
    """A custom object with its schema's defaults filled in; others as they are."""
    if isinstance(resource, CustomResource):
        crd_schema.apply_defaults(resource.schema, obj)
    return obj


class _GoZero:
    """How Go prints the uint64 Kubernetes parsed from a missing
    resourceVersion in a field error (%#v of a uint64): 0x0."""

    def __str__(self) -> str:
        return "0x0"


def check_unconditional_update(resource, name: str, resource_version: str | None) -> None:
    """An update that names no resourceVersion overwrites whatever is
    stored. Built-in kinds allow it (their strategies' AllowUnconditionalUpdate);
    a custom kind does not, since nobody knows what a blind overwrite of a
    stranger's object could undo: 422, as Kubernetes' generic store says it
    (the kind as plural.group)."""
    if resource_version or not isinstance(resource, CustomResource):
        return
    error = api_errors.invalid(resource, f"{resource.plural}.{resource.group}", name,
                               [invalid("metadata.resourceVersion", _GoZero(), "must be specified for an update")])
    error.details["kind"] = resource.plural
    raise error


# Kubernetes' answer: a strategic merge patch needs to know how each list
# merges, which only Go types say; a custom kind takes every other type the
# server serves (the core's merge patch; JSON patch and apply with kubectl_compat).
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


def check_patch_type(resource, subresource: str, media_type: str) -> None:
    if not isinstance(resource, CustomResource):
        return
    served = tuple(t for t in server().hooks.patchers if t != STRATEGIC_MERGE_PATCH)
    if media_type not in served:
        raise api_errors.unsupported_media_type(media_type, served)


def unknown_fields(resource, obj: dict) -> list[str]:
    """The fields a custom object's schema does not name: the core's field
    validation drops them (pruning, as Kubernetes does) or, with Strict, refuses them."""
    return crd_schema.unknown_fields(resource.schema, obj) if isinstance(resource, CustomResource) else []


# --- the definitions controller ---------------------------------------------

class DefinitionController:
    """Serves what the stored definitions say: reconcile(name) brings the
    registry, the definition's status and (on deletion) its objects in line."""

    def __init__(self, server):
        self.server = server
        self.store = server.store
        self.pending: set[str] = set()
        self.served: dict[str, list[CustomResource]] = {}

    def start(self) -> None:
        rv = self.resync()
        threading.Thread(target=self._follow, args=(rv,), name="crd-controller", daemon=True).start()

    def resync(self) -> int:
        items, rv = self.store.list(CRDS)
        self.pending |= {crd["metadata"]["name"] for crd in items} | set(self.served)
        self._work()
        return rv

    def _follow(self, rv: int) -> None:
        while True:
            try:
                for event in self.store.watch_cache.events_after(rv, time.monotonic() + 60, wakeup=1.0, resource=CRDS):
                    if event is not None:
                        rv = event.resource_version
                        if event.resource is CRDS:
                            self.pending.add(event.obj["metadata"]["name"])
                    self._work()
            except Expired:
                rv = self.resync()
            except Exception as error:      # keep serving; try again on the next pass
                log.info("crd controller error", error=repr(error))
                time.sleep(1)

    def _work(self) -> None:
        for name in sorted(self.pending):
            try:
                self.reconcile(name)
                self.pending.discard(name)
            except api_errors.APIError as error:     # a conflict: the next pass reads again
                log.info("crd reconcile failed", crd=name, error=str(error))

    # [START reconcile-definition]
    def reconcile(self, name: str) -> None:
        crd = self.store.get(CRDS, "", name)
        if crd is None:
            self._serve(name, [])
            return
        if crd["metadata"].get("deletionTimestamp"):
            served = self.served.get(name, [])
            self._serve(name, [])                       # no new objects while we delete
            self._delete_objects(crd, served)
            self._release(crd)
            return
        conflict = self._name_conflict(crd)
        if conflict is None:
            self._serve(name, resources_of(crd))
        self._write_status(crd, conflict)
    # [END reconcile-definition]

    def _serve(self, name: str, resources: list[CustomResource]) -> None:
        """Keep the same resource objects when nothing changed: a watch holds
        on to the one it was opened with."""
        before = {(r.group, r.version, r.plural): r for r in self.served.get(name, [])}
        resources = [before.get((r.group, r.version, r.plural)) if before.get((r.group, r.version, r.plural)) == r
                     else r for r in resources]
        if resources == self.served.get(name, []) and (resources or name not in self.served):
            return
        if resources:
            self.served[name] = resources
        else:
            self.served.pop(name, None)
        registry.serve_custom([r for served in self.served.values() for r in served])
        log.info("custom resources", crd=name, serving=[f"{r.plural}.{r.group}/{r.version}" for r in resources])

    def _name_conflict(self, crd: dict) -> str | None:
        """Another served definition in the group already uses this kind or a name."""
        spec, names = crd["spec"], accepted_names(crd["spec"]["names"])
        mine = {names["plural"], names["singular"], *names.get("shortNames", ())}
        for other, resources in self.served.items():
            if other == crd["metadata"]["name"]:
                continue
            for r in resources:
                if r.group == spec["group"] and r.kind == names["kind"]:
                    return f'"{names["kind"]}" is already in use'
                if r.group == spec["group"] and mine & {r.plural, r.singular, *r.short_names}:
                    return f'a name in {sorted(mine)} is already in use by {other}'
        return None

    def _write_status(self, crd: dict, conflict: str | None) -> None:
        def conditions(current: dict) -> list[dict]:
            accepted = conflict is None
            wanted = [("NamesAccepted", accepted, "NoConflicts" if accepted else "NameConflict",
                       "no conflicts found" if accepted else conflict),
                      ("Established", accepted, "InitialNamesAccepted" if accepted else "NotAccepted",
                       "the initial names have been accepted" if accepted else "not all names are accepted")]
            old = {c.get("type"): c for c in current.get("conditions") or ()}
            out = []
            for kind, ok, reason, message in wanted:
                status = "True" if ok else "False"
                since = old.get(kind, {}).get("lastTransitionTime") if old.get(kind, {}).get("status") == status else None
                out.append({"type": kind, "status": status, "lastTransitionTime": since or rfc3339(),
                            "reason": reason, "message": message})
            return out

        def change(current: dict) -> dict:
            status = dict(current.get("status") or {})
            status["conditions"] = conditions(status)
            if conflict is None:
                status["acceptedNames"] = accepted_names(current["spec"]["names"])
            storage = [v["name"] for v in current["spec"]["versions"] if v.get("storage")]
            status["storedVersions"] = sorted(set(status.get("storedVersions") or []) | set(storage))
            finalizers = list(current["metadata"].get("finalizers") or [])
            if CLEANUP_FINALIZER not in finalizers:
                finalizers.append(CLEANUP_FINALIZER)
            return {**current, "status": status, "metadata": {**current["metadata"], "finalizers": finalizers}}

        if change(crd) != crd:
            self.store.update(CRDS, "", crd["metadata"]["name"], change)

    def _delete_objects(self, crd: dict, served: list[CustomResource]) -> None:
        """Every version's objects share one bucket in the store; delete them
        through a resource watchers know, so they see each DELETED event."""
        spec = crd["spec"]
        names = accepted_names(spec["names"])
        resource = served[0] if served else registry.Resource(
            spec["group"], spec["versions"][0]["name"], names["kind"], names["plural"], spec["scope"] == "Namespaced")
        items, _ = self.store.list(resource)
        if items:
            log.info("deleting custom objects", crd=crd["metadata"]["name"], count=len(items))
        for obj in items:
            try:
                self.store.delete(resource, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
            except api_errors.APIError as error:
                if error.code != 404:
                    raise

    def _release(self, crd: dict) -> None:
        """The objects are gone: take our finalizer off, and let the definition go."""
        def without_ours(current: dict) -> dict:
            finalizers = [f for f in current["metadata"].get("finalizers") or () if f != CLEANUP_FINALIZER]
            return {**current, "metadata": {**current["metadata"], "finalizers": finalizers}}
        name = crd["metadata"]["name"]
        if CLEANUP_FINALIZER in (crd["metadata"].get("finalizers") or ()):
            crd = self.store.update(CRDS, "", name, without_ours)
        if not admission.finalizers(CRDS, crd) and not crd["metadata"].get("deletionGracePeriodSeconds"):
            gone = self.store.delete(CRDS, "", name)
            deletion.deleted(self.server, CRDS, gone)


# [START init-custom-resources]
def init_app(app) -> DefinitionController:
    """A custom kind's strategy, registered in the core's hooks; then serve
    the stored definitions, and follow their changes."""
    server = app.extensions["apiserver"]
    server.hooks.validators.append(validate)
    server.hooks.defaulters.append(apply_defaults)
    server.hooks.unknown_fields.append(unknown_fields)
    server.hooks.update_checks.append(check_unconditional_update)
    server.hooks.patch_checks.append(check_patch_type)
    server.hooks.schema_sources.append(definitions)              # published in /openapi/v3 and v2
    server.hooks.definition_names.append(
        lambda resource, kind: definition_name(resource, kind) if isinstance(resource, CustomResource) else None)
    controller = DefinitionController(server)
    controller.start()
    return controller
# [END init-custom-resources]
