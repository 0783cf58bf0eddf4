"""Validate discovery.k8s.io/v1 EndpointSlice: addresses of one type, and ports.

An EndpointSlice is a piece of a Service's Endpoints: every address in it is
of the slice's addressType (IPv4, IPv6, or FQDN for a name a DNS server
resolves), and every endpoint in it shares the slice's ports. Messages and
paths follow k8s.io/kubernetes pkg/apis/discovery/validation; the type checks
stand in for the errors Kubernetes gives while decoding. Kubernetes defaults
a port's protocol to TCP; here a port without one is taken to mean TCP.
"""

from __future__ import annotations

import ipaddress

from common.model.field_errors import FieldError, child, duplicate, index, invalid, not_supported, required
from common.model.names import is_dns1123_label, is_dns1123_subdomain, is_qualified_name
from common.model.validation import (PROTOCOLS, _check_enum, _get_bool, _get_dict, _get_int, _get_list,
                               _get_str, _items, validate_labels)
from common.model.validation_core import _special_ip_errors
from common.model.validation_shared import check_immutable

ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")  # sorted, as Kubernetes prints them
# Kubernetes' limits: what one object may hold, not how the controller cuts
# (it puts at most 100 endpoints in a slice, --max-endpoints-per-slice).
MAX_ENDPOINTS = 1000
MAX_ADDRESSES = 100
MAX_PORTS = 20000
TOO_MANY = "Too many"


def too_many(path: str, count: int, maximum: int) -> FieldError:
    return FieldError(path, TOO_MANY, count, f"must have at most {maximum} items")


def validate_endpoint_slice(obj: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    address_type = _get_str(errs, obj.get("addressType"), "addressType")
    if not address_type:
        if obj.get("addressType") in (None, ""):
            errs.append(required("addressType"))
    elif address_type not in ADDRESS_TYPES:
        errs.append(not_supported("addressType", address_type, ADDRESS_TYPES))
    _validate_endpoints(errs, obj.get("endpoints"), address_type)
    _validate_ports(errs, obj.get("ports"))
    return errs


def validate_endpoint_slice_update(new: dict, old: dict) -> list[FieldError]:
    """A slice never changes type: readers keep slices apart by it."""
    errs: list[FieldError] = []
    check_immutable(errs, new.get("addressType"), old.get("addressType"), "addressType")
    return errs


def _validate_endpoints(errs: list, endpoints, address_type: str | None) -> None:
    if isinstance(endpoints, list) and len(endpoints) > MAX_ENDPOINTS:
        errs.append(too_many("endpoints", len(endpoints), MAX_ENDPOINTS))
        return
    for _, path, endpoint in _items(errs, endpoints, "endpoints", "endpoints"):
        addresses_path = child(path, "addresses")
        addresses = _get_list(errs, endpoint.get("addresses"), addresses_path, "a list of strings")
        if not addresses and endpoint.get("addresses") in (None, []):
            errs.append(required(addresses_path, "must contain at least 1 address"))
        elif addresses and len(addresses) > MAX_ADDRESSES:
            errs.append(too_many(addresses_path, len(addresses), MAX_ADDRESSES))
        for i, address in enumerate(addresses or ()):
            address = _get_str(errs, address, index(addresses_path, i))
            if address is not None:
                errs += address_errors(address_type, address, index(addresses_path, i))
        conditions = _get_dict(errs, endpoint.get("conditions"), child(path, "conditions")) or {}
        for condition in ("ready", "serving", "terminating"):
            _get_bool(errs, conditions.get(condition), child(child(path, "conditions"), condition))
        node_name = _get_str(errs, endpoint.get("nodeName"), child(path, "nodeName"))
        if node_name is not None:
            errs += [invalid(child(path, "nodeName"), node_name, msg) for msg in is_dns1123_subdomain(node_name)]
        hostname = _get_str(errs, endpoint.get("hostname"), child(path, "hostname"))
        if hostname is not None:
            errs += [invalid(child(path, "hostname"), hostname, msg) for msg in is_dns1123_label(hostname)]
        _get_dict(errs, endpoint.get("targetRef"), child(path, "targetRef"))
        errs += validate_labels(endpoint.get("deprecatedTopology"), child(path, "deprecatedTopology"))


# [START address-for-type]
def address_errors(address_type: str | None, address: str, path: str) -> list[FieldError]:
    """An address must be of its slice's type. Unknown types are reported
    once, at addressType, so their addresses go unchecked."""
    if address_type in ("IPv4", "IPv6"):
        version = 4 if address_type == "IPv4" else 6
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            ip = None
        if ip is None or ip.version != version:
            return [invalid(path, address, f"must be a valid {address_type} address")]
        # Traffic to these would never reach a pod on another machine.
        return [invalid(path, address, msg) for msg in _special_ip_errors(address)]
    if address_type == "FQDN":
        return _fqdn_errors(address, path)
    return []
# [END address-for-type]


def _fqdn_errors(name: str, path: str) -> list[FieldError]:
    """IsFullyQualifiedDomainName: a DNS subdomain of two labels or more,
    with or without the final dot."""
    if not name:
        return [required(path)]
    name = name.removesuffix(".")
    if messages := is_dns1123_subdomain(name):
        return [invalid(path, name, ",".join(messages))]
    if len(name.split(".")) < 2:
        return [invalid(path, name, "should be a domain with at least two segments separated by dots")]
    for label in name.split("."):
        if messages := is_dns1123_label(label):
            return [invalid(path, label, ",".join(messages))]
    return []


def _validate_ports(errs: list, ports) -> None:
    if isinstance(ports, list) and len(ports) > MAX_PORTS:
        errs.append(too_many("ports", len(ports), MAX_PORTS))
        return
    names: set[str] = set()
    for _, path, port in _items(errs, ports, "ports", "ports"):
        name = _get_str(errs, port.get("name"), child(path, "name")) or ""
        if name:
            errs += [invalid(child(path, "name"), name, msg) for msg in is_dns1123_label(name)]
        if name in names:
            errs.append(duplicate(child(path, "name"), name))
        names.add(name)
        _check_enum(errs, port.get("protocol"), child(path, "protocol"), PROTOCOLS)
        # A slice's port may be left out ("all ports"); when given, an int32.
        _get_int(errs, port.get("port"), child(path, "port"), -2**31)
        app_protocol = _get_str(errs, port.get("appProtocol"), child(path, "appProtocol"))
        if app_protocol is not None:
            errs += [invalid(child(path, "appProtocol"), app_protocol, msg)
                     for msg in is_qualified_name(app_protocol)]


__all__ = ["ADDRESS_TYPES", "address_errors", "validate_endpoint_slice", "validate_endpoint_slice_update"]
