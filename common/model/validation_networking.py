"""Validate networking.k8s.io/v1 Ingress and IngressClass.

An Ingress is a list of HTTP routing rules: for a host (exact, or one
wildcard label such as *.example.com) and a path (Exact, Prefix or
ImplementationSpecific), which Service and port gets the request. An
IngressClass names the controller that serves the Ingresses of its class.
Messages and paths follow k8s.io/kubernetes pkg/apis/networking/validation;
the type checks stand in for the errors Kubernetes gives while decoding.
"""

from __future__ import annotations

import re

from common.model.field_errors import FieldError, child, forbidden, index, invalid, not_supported, required
from common.model.names import (is_dns1035_label, is_dns1123_label, is_dns1123_subdomain, is_valid_port_name,
                                is_wildcard_dns1123_subdomain)
from common.model.validation import _as_int, _get_dict, _get_list, _get_str, _items, is_ip
from common.model.validation_shared import check_immutable

PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")      # sorted, as Kubernetes lists them
# An Exact or Prefix path is compared as text: these would let two spellings
# of one path route differently, so Kubernetes refuses them.
INVALID_PATH_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
INVALID_PATH_SUFFIXES = ("/..", "/.")
CLASS_ANNOTATION = "kubernetes.io/ingress.class"     # the old way to name a class, before ingressClassName
MAX_CONTROLLER_LENGTH = 250
_HTTP_PATH = re.compile(r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+")
SCOPES = ("Cluster", "Namespace")


# [START validate-ingress]
def validate_ingress(obj: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = _get_dict(errs, obj.get("spec"), "spec") or {}
    rules = _get_list(errs, spec.get("rules"), "spec.rules", "a list of rules") or []
    if not rules and spec.get("defaultBackend") is None:
        errs.append(invalid("spec", rules, "either `defaultBackend` or `rules` must be specified"))
    if isinstance(spec.get("defaultBackend"), dict):
        errs += _backend_errors(spec["defaultBackend"], "spec.defaultBackend")
    else:
        _get_dict(errs, spec.get("defaultBackend"), "spec.defaultBackend")
    for _, path, rule in _items(errs, rules, "spec.rules", "rules"):
        errs += _rule_errors(rule, path)
    for _, path, tls in _items(errs, spec.get("tls"), "spec.tls", "TLS entries"):
        errs += _tls_errors(tls, path)
    class_name = _get_str(errs, spec.get("ingressClassName"), "spec.ingressClassName")
    if class_name is not None:
        errs += [invalid("spec.ingressClassName", class_name, m) for m in is_dns1123_subdomain(class_name)]
    return errs
# [END validate-ingress]


def validate_ingress_create(obj: dict) -> list[FieldError]:
    """The old annotation and the field may not disagree. (Kubernetes checks
    this on create only; here on updates too, where it can only fail for an
    update that makes them disagree.)"""
    errs = validate_ingress(obj)
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    annotations = meta.get("annotations") or {}
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    if isinstance(annotations, dict) and CLASS_ANNOTATION in annotations and spec.get("ingressClassName") \
            and annotations[CLASS_ANNOTATION] != spec["ingressClassName"]:
        errs.append(invalid(child("annotations", CLASS_ANNOTATION), annotations[CLASS_ANNOTATION],
                            "must match `ingressClassName` when both are specified"))
    return errs


def _host_errors(host: str, path: str) -> list[FieldError]:
    errs = []
    if is_ip(host):
        errs.append(invalid(path, host, "must be a DNS name, not an IP address"))
    check = is_wildcard_dns1123_subdomain if "*" in host else is_dns1123_subdomain
    return errs + [invalid(path, host, msg) for msg in check(host)]


def _rule_errors(rule: dict, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    host = _get_str(errs, rule.get("host"), child(path, "host"))
    if host:
        errs += _host_errors(host, child(path, "host"))
    http = _get_dict(errs, rule.get("http"), child(path, "http"))
    if http is None:
        return errs
    paths_path = child(child(path, "http"), "paths")
    if not http.get("paths"):
        errs.append(required(paths_path))
    for _, item_path, http_path in _items(errs, http.get("paths"), paths_path, "paths"):
        errs += _http_path_errors(http_path, item_path)
    return errs


def _http_path_errors(http_path: dict, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    path_type = _get_str(errs, http_path.get("pathType"), child(path, "pathType"))
    if http_path.get("pathType") is None:
        # No default in v1: Exact and Prefix match differently, so the
        # writer must say which one is meant.
        return [required(child(path, "pathType"), "pathType must be specified")]
    text = _get_str(errs, http_path.get("path"), child(path, "path")) or ""
    if path_type in ("Exact", "Prefix"):
        if not text.startswith("/"):
            errs.append(invalid(child(path, "path"), text, "must be an absolute path"))
        for sequence in INVALID_PATH_SEQUENCES:
            if sequence in text:
                errs.append(invalid(child(path, "path"), text, f"must not contain '{sequence}'"))
        for suffix in INVALID_PATH_SUFFIXES:
            if text.endswith(suffix):
                errs.append(invalid(child(path, "path"), text, f"cannot end with '{suffix}'"))
    elif path_type == "ImplementationSpecific":
        if text and not text.startswith("/"):
            errs.append(invalid(child(path, "path"), text, "must be an absolute path"))
    elif path_type is not None:
        errs.append(not_supported(child(path, "pathType"), path_type, PATH_TYPES))
    backend = _get_dict(errs, http_path.get("backend"), child(path, "backend"))
    return errs + _backend_errors(backend or {}, child(path, "backend"))


# [START validate-backend]
def _backend_errors(backend: dict, path: str) -> list[FieldError]:
    """A backend is a Service and one of its ports (by name or number), or
    another kind of object (resource); exactly one of the two."""
    errs: list[FieldError] = []
    service = _get_dict(errs, backend.get("service"), child(path, "service"))
    resource = _get_dict(errs, backend.get("resource"), child(path, "resource"))
    if service is not None and resource is not None:
        return errs + [invalid(path, "", "cannot set both resource and service backends")]
    if resource is not None:
        return errs + _typed_reference_errors(resource, child(path, "resource"))
    if service is None:
        return errs + [invalid(path, "", "resource or service backend is required")]
    name = _get_str(errs, service.get("name"), child(path, "service.name"))
    if not name:
        errs.append(required(child(path, "service.name")))
    else:   # a Service's name rule: it becomes a DNS label and an environment variable
        errs += [invalid(child(path, "service.name"), name, m) for m in is_dns1035_label(name)]
    port = _get_dict(errs, service.get("port"), child(path, "service.port")) or {}
    port_name = _get_str(errs, port.get("name"), child(path, "service.port.name")) or ""
    number = port.get("number")
    if number is not None and _as_int(number) is None:
        return errs + [invalid(child(path, "service.port.number"), number, "must be an integer")]
    if port_name and number:
        errs.append(invalid(path, "", "cannot set both port name & port number"))
    elif port_name:
        errs += [invalid(child(path, "service.port.name"), port_name, m) for m in is_valid_port_name(port_name)]
    elif number:
        if not 1 <= number <= 65535:
            errs.append(invalid(child(path, "service.port.number"), number, "must be between 1 and 65535, inclusive"))
    else:
        errs.append(required(path, "port name or number is required"))
    return errs
# [END validate-backend]


def _typed_reference_errors(ref: dict, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    group = _get_str(errs, ref.get("apiGroup"), child(path, "apiGroup"))
    if group is not None:
        errs += [invalid(child(path, "apiGroup"), group, m) for m in is_dns1123_subdomain(group)]
    for field in ("kind", "name"):
        value = _get_str(errs, ref.get(field), child(path, field))
        if not value:
            errs.append(required(child(path, field)))
        else:
            errs += [invalid(child(path, field), value, m) for m in _path_segment_errors(value)]
    return errs


def _path_segment_errors(value: str) -> list[str]:
    """IsPathSegmentName: a name that can sit in a URL path on its own."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


def _tls_errors(tls: dict, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    hosts_path = child(path, "hosts")
    for i, host in enumerate(_get_list(errs, tls.get("hosts"), hosts_path, "a list of strings") or ()):
        host = _get_str(errs, host, index(hosts_path, i))
        if host is not None:
            check = is_wildcard_dns1123_subdomain if "*" in host else is_dns1123_subdomain
            errs += [invalid(index(hosts_path, i), host, msg) for msg in check(host)]
    secret = _get_str(errs, tls.get("secretName"), child(path, "secretName"))
    if secret:   # empty: the controller's own default certificate
        errs += [invalid(child(path, "secretName"), secret, m) for m in is_dns1123_subdomain(secret)]
    return errs


def validate_ingress_status(obj: dict) -> list[FieldError]:
    """status.loadBalancer.ingress: where the controller can be reached."""
    errs: list[FieldError] = []
    status = _get_dict(errs, obj.get("status"), "status") or {}
    balancer = _get_dict(errs, status.get("loadBalancer"), "status.loadBalancer") or {}
    for _, path, entry in _items(errs, balancer.get("ingress"), "status.loadBalancer.ingress", "addresses"):
        ip = _get_str(errs, entry.get("ip"), child(path, "ip"))
        if ip and not is_ip(ip):
            errs.append(invalid(child(path, "ip"), ip, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
        hostname = _get_str(errs, entry.get("hostname"), child(path, "hostname"))
        if hostname:
            errs += [invalid(child(path, "hostname"), hostname, m) for m in is_dns1123_subdomain(hostname)]
            if is_ip(hostname):
                errs.append(invalid(child(path, "hostname"), hostname, "must be a DNS name, not an IP address"))
    return errs


def validate_ingress_class(obj: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = _get_dict(errs, obj.get("spec"), "spec") or {}
    controller = _get_str(errs, spec.get("controller"), "spec.controller")
    if not controller:
        errs.append(required("spec.controller"))
    else:   # too long, and still checked for its form: Kubernetes reports both
        if len(controller.encode()) > MAX_CONTROLLER_LENGTH:
            errs.append(FieldError("spec.controller", "Too long", "",
                                   f"may not be more than {MAX_CONTROLLER_LENGTH} bytes"))
        errs += _domain_prefixed_path_errors(controller, "spec.controller")
    parameters = _get_dict(errs, spec.get("parameters"), "spec.parameters")
    if parameters is not None:
        errs += _parameters_errors(parameters, "spec.parameters")
    return errs


def validate_ingress_class_update(new: dict, old: dict) -> list[FieldError]:
    """The controller is who serves the class: changing it would hand its
    Ingresses to another program behind their owners' backs."""
    errs: list[FieldError] = []
    new_spec, old_spec = new.get("spec"), old.get("spec")
    if isinstance(new_spec, dict) and isinstance(old_spec, dict):   # other shapes: reported by the spec rules
        check_immutable(errs, new_spec.get("controller"), old_spec.get("controller"), "spec.controller")
    return errs


def _domain_prefixed_path_errors(value: str, path: str) -> list[FieldError]:
    """IsDomainPrefixedPath: "example.com/ingress-controller"."""
    host, slash, rest = value.partition("/")
    if not slash or not host or not rest:
        return [invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errs = [invalid(path, host, msg) for msg in is_dns1123_subdomain(host)]
    if not _HTTP_PATH.fullmatch(rest):
        errs.append(invalid(path, rest, f"Invalid path (regex used for validation is '{_HTTP_PATH.pattern}')"))
    return errs


def _parameters_errors(params: dict, path: str) -> list[FieldError]:
    errs = _typed_reference_errors(params, path)
    scope = _get_str(errs, params.get("scope"), child(path, "scope"))
    namespace = _get_str(errs, params.get("namespace"), child(path, "namespace"))
    if not scope:
        errs.append(required(child(path, "scope")))
    elif scope not in SCOPES:
        errs.append(not_supported(child(path, "scope"), scope, SCOPES))
    elif scope == "Namespace" and namespace is None:
        errs.append(required(child(path, "namespace"), "`parameters.scope` is set to 'Namespace'"))
    elif scope == "Namespace":                              # ValidateNamespaceName: a DNS-1123 label
        errs += [invalid(child(path, "namespace"), namespace, m) for m in is_dns1123_label(namespace)]
    elif scope == "Cluster" and namespace is not None:
        errs.append(forbidden(child(path, "namespace"), "`parameters.scope` is set to 'Cluster'"))
    return errs


__all__ = ["CLASS_ANNOTATION", "PATH_TYPES", "validate_ingress", "validate_ingress_class",
           "validate_ingress_class_update", "validate_ingress_create", "validate_ingress_status"]
