"""Validate the core/v1 kinds besides Pod: Namespace, Node, Service,
Endpoints, Event, ConfigMap and Secret.

Messages and paths follow k8s.io/kubernetes v1.32 pkg/apis/core/validation
(tests/common/test_validation_kinds.py names the function for each), except
type errors, which are ours (see validation.py), and the few places where a
function's docstring says we differ on purpose (taints' path). Each
validate_<kind>(obj) takes the whole object (type meta and metadata are
checked by validate.py) and returns every problem it finds; the
validate_<kind>_update(new, old) functions add the rules that compare an
update with the stored object.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json

from common.model.field_errors import (FieldError, _go_str, child, duplicate, forbidden, index, invalid, key,
                                 not_supported, required, too_long)
from common.model.names import (is_config_map_key, is_dns1123_label, is_dns1123_subdomain,
                          is_qualified_name, is_valid_label_value, is_valid_port_name)
from common.model.validation import (PROTOCOLS, TAINT_EFFECTS, _as_int, _check_enum, _check_quantity,
                               _get_bool, _get_dict, _get_int, _get_list, _get_str, is_ip, _items,
                               _type_error, validate_labels)
from common.model.validation_shared import (FIELD_IMMUTABLE, GoValue, check_immutable,
                                      go_string_slice)

PORT_RANGE = "must be between 1 and 65535, inclusive"
IP_MSG = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
CIDR_MSG = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
MAX_SECRET_SIZE = 1024 * 1024  # ConfigMaps and Secrets: etcd keeps values small


def _name_list_errors(errs, value: str, path: str, check) -> None:
    errs += [invalid(path, value, msg) for msg in check(value)]


# ------------------------------------------------------------- Namespace

STANDARD_FINALIZERS = ("kubernetes",)


def validate_namespace(obj: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = _get_dict(errs, obj.get("spec"), "spec") or {}
    for i, name in enumerate(_get_list(errs, spec.get("finalizers"), "spec.finalizers",
                                       "a list of strings") or ()):
        name = _get_str(errs, name, index("spec.finalizers", i))
        if name is None:
            continue
        # Kubernetes reports finalizers at the list's path, without the index.
        _name_list_errors(errs, name, "spec.finalizers", is_qualified_name)
        if "/" not in name and name not in STANDARD_FINALIZERS:
            errs.append(invalid("spec.finalizers", name, "name is neither a standard "
                                "finalizer name nor is it fully qualified"))
    return errs


def validate_namespace_status(obj: dict) -> list[FieldError]:
    """A namespace is Active until deleted, then Terminating while emptied."""
    errs: list[FieldError] = []
    status = _get_dict(errs, obj.get("status"), "status") or {}
    phase = _get_str(errs, status.get("phase"), "status.phase")
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    # "status.Phase" (capital P) is how Kubernetes spells the path here.
    if meta.get("deletionTimestamp") is None:
        if phase not in (None, "", "Active"):
            errs.append(invalid("status.Phase", phase,
                                "may only be 'Active' if `deletionTimestamp` is empty"))
    elif phase not in (None, "", "Terminating"):
        errs.append(invalid("status.Phase", phase,
                            "may only be 'Terminating' if `deletionTimestamp` is not empty"))
    return errs


# ------------------------------------------------------------------ Node

def validate_node(obj: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = _get_dict(errs, obj.get("spec"), "spec") or {}
    pod_cidr = _get_str(errs, spec.get("podCIDR"), "spec.podCIDR")
    if pod_cidr and not _is_cidr(pod_cidr):
        errs.append(invalid("spec.podCIDR", pod_cidr, CIDR_MSG))
    seen: set[str] = set()
    for i, cidr in enumerate(_get_list(errs, spec.get("podCIDRs"), "spec.podCIDRs",
                                       "a list of strings") or ()):
        path = index("spec.podCIDRs", i)
        cidr = _get_str(errs, cidr, path)
        if cidr is None:
            continue
        if not _is_cidr(cidr):
            errs.append(invalid(path, cidr, CIDR_MSG))
        elif cidr in seen:
            errs.append(duplicate(path, cidr))
        seen.add(cidr)
    for field in ("providerID",):
        _get_str(errs, spec.get(field), child("spec", field))
    _get_bool(errs, spec.get("unschedulable"), "spec.unschedulable")
    _validate_taints(errs, spec.get("taints"), "spec.taints")
    errs += validate_node_status(obj)
    return errs


def _is_cidr(text: str) -> bool:
    try:
        ipaddress.ip_network(text, strict=False)
        return "/" in text
    except ValueError:
        return False


def _validate_taints(errs, taints, path: str) -> None:
    """validateNodeTaints' rules and wording. One difference, ours: Kubernetes
    1.32 reports these at metadata.taints[i] (ValidateNode hands it the
    metadata path); we report them where they are, at spec.taints[i]."""
    unique: set[tuple] = set()
    for _, taint_path, taint in _items(errs, taints, path, "taints"):
        taint_key = _get_str(errs, taint.get("key"), child(taint_path, "key"))
        _name_list_errors(errs, taint_key or "", child(taint_path, "key"), is_qualified_name)
        value = _get_str(errs, taint.get("value"), child(taint_path, "value"))
        if value:
            msgs = is_valid_label_value(value)
            if msgs:
                errs.append(invalid(child(taint_path, "value"), value, ";".join(msgs)))
        effect = _get_str(errs, taint.get("effect"), child(taint_path, "effect"))
        if not effect and taint.get("effect") in (None, ""):
            errs.append(required(child(taint_path, "effect")))
        elif effect and effect not in TAINT_EFFECTS:
            errs.append(not_supported(child(taint_path, "effect"), effect, TAINT_EFFECTS))
        # A node has at most one taint per key and effect: a second would
        # leave it unclear which value a toleration is matched against.
        if isinstance(taint_key, str) and isinstance(effect, str):
            if (taint_key, effect) in unique:
                shown = GoValue(f'core.Taint{{Key:{_go_str(taint_key)}, Value:{_go_str(value or "")}, '
                                f'Effect:{_go_str(effect)}, TimeAdded:(*v1.Time)(nil)}}')
                errs.append(FieldError(taint_path, "Duplicate value", shown,
                                       "taints must be unique by key and effect pair"))
            unique.add((taint_key, effect))


def validate_node_status(obj: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    status = _get_dict(errs, obj.get("status"), "status") or {}
    for field in ("capacity", "allocatable"):
        path = child("status", field)
        for name, amount in (_get_dict(errs, status.get(field), path) or {}).items():
            if not isinstance(name, str):
                errs.append(_type_error(path, name, "a string"))
                continue
            # Kubernetes' path here is status.capacity.cpu (Child, not Key);
            # the name check is ours (Kubernetes checks only the amount).
            _name_list_errors(errs, name, child(path, name), is_qualified_name)
            _check_quantity(errs, amount, child(path, name))
    for _, addr_path, addr in _items(errs, status.get("addresses"), "status.addresses",
                                     "node addresses"):
        _get_str(errs, addr.get("type"), child(addr_path, "type"))
        _get_str(errs, addr.get("address"), child(addr_path, "address"))
    return errs


def validate_node_update(new: dict, old: dict) -> list[FieldError]:
    """A node's pod range and provider ID are assigned once, then fixed:
    the network plugin and the cloud have already acted on them."""
    errs: list[FieldError] = []
    new_spec = new.get("spec") if isinstance(new.get("spec"), dict) else {}
    old_spec = old.get("spec") if isinstance(old.get("spec"), dict) else {}
    for field in ("podCIDR", "podCIDRs"):
        if old_spec.get(field) and new_spec.get(field) != old_spec.get(field):
            errs.append(forbidden("spec.podCIDRs", 'node updates may not change podCIDR '
                                  'except from "" to valid'))
            break
    if old_spec.get("providerID") and new_spec.get("providerID") != old_spec["providerID"]:
        errs.append(forbidden("spec.providerID", 'node updates may not change providerID '
                              'except from "" to valid'))
    return errs


# --------------------------------------------------------------- Service

# Sorted, as Kubernetes prints them (sets.List).
SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
SESSION_AFFINITIES = ("ClientIP", "None")
TRAFFIC_POLICIES = ("Cluster", "Local")
IP_FAMILY_POLICIES = ("PreferDualStack", "RequireDualStack", "SingleStack")
IP_FAMILIES = ("IPv4", "IPv6")
MAX_CLIENT_IP_AFFINITY_SECONDS = 86400


# [START validate-service]
def validate_service(obj: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = _get_dict(errs, obj.get("spec"), "spec") or {}
    svc_type = _get_str(errs, spec.get("type"), "spec.type") or "ClusterIP"
    if svc_type not in SERVICE_TYPES:
        errs.append(not_supported("spec.type", svc_type, SERVICE_TYPES))
    cluster_ip = _get_str(errs, spec.get("clusterIP"), "spec.clusterIP")
    headless = cluster_ip == "None"
    if svc_type == "ExternalName":
        _validate_external_name(errs, spec)
    else:
        _validate_cluster_ips(errs, spec, cluster_ip)
        # Ignored for other types, but still a string (Go's decoder insists).
        _get_str(errs, spec.get("externalName"), "spec.externalName")
    _validate_external_ips(errs, spec.get("externalIPs"))
    ports = spec.get("ports")
    if not ports and isinstance(ports, (list, type(None))) and not headless \
            and svc_type != "ExternalName":
        errs.append(required("spec.ports"))
    _validate_service_ports(errs, ports, svc_type)
    if spec.get("selector") is not None:
        errs += validate_labels(spec["selector"], "spec.selector")
    _check_enum(errs, spec.get("sessionAffinity"), "spec.sessionAffinity", SESSION_AFFINITIES)
    if spec.get("sessionAffinity") == "ClientIP":
        _validate_client_ip_affinity(errs, spec.get("sessionAffinityConfig"))
    _check_enum(errs, spec.get("internalTrafficPolicy"), "spec.internalTrafficPolicy",
                TRAFFIC_POLICIES)
    _check_enum(errs, spec.get("externalTrafficPolicy"), "spec.externalTrafficPolicy",
                TRAFFIC_POLICIES)
    external_policy = spec.get("externalTrafficPolicy")
    if external_policy and svc_type in ("ClusterIP", "ExternalName") \
            and not spec.get("externalIPs"):
        errs.append(invalid("spec.externalTrafficPolicy", external_policy,
                            "may only be set for externally-accessible services"))
    _check_enum(errs, spec.get("ipFamilyPolicy"), "spec.ipFamilyPolicy", IP_FAMILY_POLICIES)
    for i, family in enumerate(_get_list(errs, spec.get("ipFamilies"), "spec.ipFamilies",
                                         "a list of strings") or ()):
        _check_enum(errs, family, index("spec.ipFamilies", i), IP_FAMILIES)
    return errs
# [END validate-service]


def _validate_external_name(errs: list, spec: dict) -> None:
    """An ExternalName service is a DNS CNAME: no virtual IP, just a name."""
    name = _get_str(errs, spec.get("externalName"), "spec.externalName")
    # A trailing dot marks a fully qualified name; it is allowed.
    cname = (name or "").removesuffix(".")
    if cname:
        _name_list_errors(errs, cname, "spec.externalName", is_dns1123_subdomain)
    elif spec.get("externalName") is None or name is not None:
        errs.append(required("spec.externalName"))
    for field in ("clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        if spec.get(field) not in (None, [], ""):
            errs.append(forbidden(child("spec", field), "may not be set for ExternalName services"))
    if spec.get("clusterIP") not in (None, "") and spec.get("clusterIPs") in (None, []):
        errs.append(forbidden("spec.clusterIPs", "may not be set for ExternalName services"))


def _validate_external_ips(errs: list, ips) -> None:
    """Addresses outside the cluster that the proxy routes to the service:
    real unicast addresses only, never this host's own (ValidateNonSpecialIP)."""
    for i, ip in enumerate(_get_list(errs, ips, "spec.externalIPs", "a list of strings") or ()):
        path = index("spec.externalIPs", i)
        ip = _get_str(errs, ip, path)
        if ip is None:
            continue
        try:
            # Go's parser knows no IPv6 zones (fe80::1%eth0); Python's does.
            addr = ipaddress.ip_address("%" if "%" in ip else ip)
        except ValueError:
            errs.append(invalid(path, ip, IP_MSG))
            continue
        # Go checks ::ffff:127.0.0.1 as the IPv4 address it carries.
        if addr.version == 6 and addr.ipv4_mapped is not None:
            addr = addr.ipv4_mapped
        if addr.is_unspecified:
            errs.append(invalid(path, ip, f"may not be unspecified ({ip})"))
        if addr.is_loopback:
            errs.append(invalid(path, ip, "may not be in the loopback range "
                                "(127.0.0.0/8, ::1/128)"))
        if addr.is_link_local:
            errs.append(invalid(path, ip, "may not be in the link-local range "
                                "(169.254.0.0/16, fe80::/10)"))
        if _is_link_local_multicast(addr):
            errs.append(invalid(path, ip, "may not be in the link-local multicast range "
                                "(224.0.0.0/24, ff02::/10)"))


def _is_link_local_multicast(addr) -> bool:
    """Go's net.IP.IsLinkLocalMulticast: 224.0.0.0/24, or ffX2::/16 in IPv6."""
    if addr.version == 4:
        return addr in ipaddress.ip_network("224.0.0.0/24")
    packed = addr.packed
    return packed[0] == 0xFF and packed[1] & 0x0F == 0x02


def _validate_cluster_ips(errs: list, spec: dict, cluster_ip: str | None) -> None:
    # Kubernetes copies clusterIP into clusterIPs[0] before validating, so
    # that is where it reports a bad one.
    ips = _get_list(errs, spec.get("clusterIPs"), "spec.clusterIPs", "a list of strings")
    if ips is None or not ips:
        ips = [cluster_ip] if cluster_ip else []
    elif cluster_ip and ips and ips[0] != cluster_ip:
        errs.append(invalid("spec.clusterIPs", go_string_slice(ips),
                            "first value must match `clusterIP`"))
    for i, ip in enumerate(ips):
        path = index("spec.clusterIPs", i)
        ip = _get_str(errs, ip, path)
        if ip is None or (i == 0 and ip == "None"):
            continue
        if ip == "None":
            errs.append(invalid(path, ip, "'None' must be the first and only value"))
        elif not is_ip(ip):
            errs.append(invalid(path, ip, IP_MSG))
    if len(ips) > 2:
        errs.append(invalid("spec.clusterIPs", go_string_slice(ips),
                            "may only hold up to 2 values"))


def _go_service_port(port: int, protocol: str) -> GoValue:
    return GoValue(f'core.ServicePort{{Name:"", Protocol:"{protocol}", '
                   f'AppProtocol:(*string)(nil), Port:{port}, TargetPort:intstr.IntOrString'
                   f'{{Type:0, IntVal:0, StrVal:""}}, NodePort:0}}')


def _validate_service_ports(errs: list, ports, svc_type: str) -> None:
    items = list(_items(errs, ports, "spec.ports", "ports"))
    # With two ports or more, each needs a name: endpoints and DNS SRV
    # records tell them apart by name.
    require_name = len(items) > 1
    names: set[str] = set()
    seen: set[tuple] = set()
    for _, port_path, port in items:
        name = _get_str(errs, port.get("name"), child(port_path, "name"))
        if require_name and not name and port.get("name") in (None, ""):
            errs.append(required(child(port_path, "name")))
        elif name:
            msgs = is_dns1123_label(name)
            _name_list_errors(errs, name, child(port_path, "name"), is_dns1123_label)
            if not msgs and name in names:
                errs.append(duplicate(child(port_path, "name"), name))
            names.add(name)
        number = _get_int(errs, port.get("port"), child(port_path, "port"), 1, 65535,
                          PORT_RANGE) if port.get("port") is not None else None
        if port.get("port") is None:
            errs.append(invalid(child(port_path, "port"), 0, PORT_RANGE))
        protocol = port.get("protocol")
        _check_enum(errs, protocol, child(port_path, "protocol"), PROTOCOLS)
        _validate_port_num_or_name(errs, port.get("targetPort"), child(port_path, "targetPort"))
        node_port = port.get("nodePort")
        if node_port not in (None, 0):
            if svc_type == "ClusterIP":
                errs.append(forbidden(child(port_path, "nodePort"),
                                      "may not be used when `type` is 'ClusterIP'"))
            else:
                _get_int(errs, node_port, child(port_path, "nodePort"), 1, 65535, PORT_RANGE)
        if number is not None:
            proto = protocol if isinstance(protocol, str) and protocol else "TCP"
            if (number, proto) in seen:
                errs.append(duplicate(port_path, _go_service_port(number, proto)))
            seen.add((number, proto))


def _validate_port_num_or_name(errs: list, port, path: str) -> None:
    if port is None or port == 0 or port == "":
        return  # defaulted to the service port
    if isinstance(port, str):
        _name_list_errors(errs, port, path, is_valid_port_name)
    elif _as_int(port) is None:
        errs.append(_type_error(path, port, "a port number or a port name"))
    else:
        _get_int(errs, port, path, 1, 65535, PORT_RANGE)


def _validate_client_ip_affinity(errs: list, config) -> None:
    path = "spec.sessionAffinityConfig"
    config = _get_dict(errs, config, path) or {}
    client_ip = _get_dict(errs, config.get("clientIP"), child(path, "clientIP")) or {}
    timeout = client_ip.get("timeoutSeconds")
    if timeout is not None:
        _get_int(errs, timeout, child(path, "clientIP.timeoutSeconds"), 1,
                 MAX_CLIENT_IP_AFFINITY_SECONDS,
                 f"must be greater than 0 and less than {MAX_CLIENT_IP_AFFINITY_SECONDS}")


def validate_service_update(new: dict, old: dict) -> list[FieldError]:
    """A service's cluster IP is in every client's iptables rules and
    environment; it may not move. (Changing to or from ExternalName,
    which has no IP, is the exception.)"""
    errs: list[FieldError] = []
    new_spec = new.get("spec") if isinstance(new.get("spec"), dict) else {}
    old_spec = old.get("spec") if isinstance(old.get("spec"), dict) else {}
    if "ExternalName" in (new_spec.get("type"), old_spec.get("type")):
        return errs
    old_ip, new_ip = old_spec.get("clusterIP"), new_spec.get("clusterIP")
    # An unset clusterIP on update means "keep it": the server copies it over.
    if old_ip and new_ip and new_ip != old_ip:
        errs.append(invalid("spec.clusterIPs[0]", go_string_slice([new_ip]),
                            "may not change once set"))
    return errs


# ------------------------------------------------------------- Endpoints

def validate_endpoints(obj: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    for _, subset_path, subset in _items(errs, obj.get("subsets"), "subsets",
                                         "endpoint subsets"):
        for field in ("addresses", "notReadyAddresses"):
            for _, addr_path, addr in _items(errs, subset.get(field),
                                             child(subset_path, field), "addresses"):
                _validate_endpoint_address(errs, addr, addr_path)
        items = list(_items(errs, subset.get("ports"), child(subset_path, "ports"), "ports"))
        for _, port_path, port in items:
            name = _get_str(errs, port.get("name"), child(port_path, "name"))
            if len(items) > 1 and not name and port.get("name") in (None, ""):
                errs.append(required(child(port_path, "name")))
            elif name:
                _name_list_errors(errs, name, child(port_path, "name"), is_dns1123_label)
            if port.get("port") is None:
                errs.append(invalid(child(port_path, "port"), 0, PORT_RANGE))
            else:
                _get_int(errs, port["port"], child(port_path, "port"), 1, 65535, PORT_RANGE)
            _check_enum(errs, port.get("protocol"), child(port_path, "protocol"), PROTOCOLS)
    return errs


def _validate_endpoint_address(errs: list, addr: dict, path: str) -> None:
    """validateEndpointAddress: the IP, hostname and nodeName, then the IP's
    range. An IP that does not parse fails both IP checks, so Kubernetes
    prints two messages for it, and so do we."""
    ip_path = child(path, "ip")
    ip = _get_str(errs, addr.get("ip"), ip_path)
    typed_ip = ip is not None or addr.get("ip") is None
    if typed_ip and not is_ip(ip or ""):
        errs.append(invalid(ip_path, ip or "", IP_MSG))
    hostname = _get_str(errs, addr.get("hostname"), child(path, "hostname"))
    if hostname:
        _name_list_errors(errs, hostname, child(path, "hostname"), is_dns1123_label)
    node_name = _get_str(errs, addr.get("nodeName"), child(path, "nodeName"))
    if node_name:
        _name_list_errors(errs, node_name, child(path, "nodeName"), is_dns1123_subdomain)
    _get_dict(errs, addr.get("targetRef"), child(path, "targetRef"))
    if typed_ip and not is_ip(ip or ""):
        errs.append(invalid(ip_path, ip or "", "must be a valid IP address"))
    elif typed_ip:
        # Traffic to these would never reach a pod on another machine.
        errs += [invalid(ip_path, ip, msg) for msg in _special_ip_errors(ip)]


_LINK_LOCAL_MULTICAST = {4: ipaddress.ip_network("224.0.0.0/24"),
                         6: ipaddress.ip_network("ff02::/16")}


def _special_ip_errors(text: str) -> list[str]:
    ip = ipaddress.ip_address(text)
    if ip.is_unspecified:
        return ["may not be unspecified (0.0.0.0)"]
    if ip.is_loopback:
        return ["may not be in the loopback range (127.0.0.0/8, ::1/128)"]
    if ip.is_link_local:
        return ["may not be in the link-local range (169.254.0.0/16, fe80::/10)"]
    if ip in _LINK_LOCAL_MULTICAST[ip.version]:
        return ["may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"]
    return []


# ----------------------------------------------------------------- Event

def validate_event(obj: dict) -> list[FieldError]:
    """core/v1 Events, checked as Kubernetes checks events from that API."""
    errs: list[FieldError] = []
    involved = _get_dict(errs, obj.get("involvedObject"), "involvedObject") or {}
    for field in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion",
                  "fieldPath"):
        _get_str(errs, involved.get(field), child("involvedObject", field))
    for field in ("reason", "message", "type", "action", "reportingComponent",
                  "reportingInstance"):
        _get_str(errs, obj.get(field), field)
    _get_dict(errs, obj.get("source"), "source")
    _get_int(errs, obj.get("count"), "count", 0)
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    namespace = meta.get("namespace")
    involved_ns = involved.get("namespace") or ""
    if not isinstance(namespace, str) or not isinstance(involved_ns, str):
        return errs
    # An event lives in its object's namespace, so that whoever may read
    # the object may read its events. Cluster-scoped objects' events go to
    # "default" (or nowhere).
    if obj.get("eventTime") in (None, ""):
        if involved_ns == "" and namespace not in ("", "default"):
            errs.append(invalid("involvedObject.namespace", involved_ns,
                                "does not match event.namespace"))
        elif involved_ns and namespace != involved_ns:
            errs.append(invalid("involvedObject.namespace", involved_ns,
                                "does not match event.namespace"))
    else:
        # "New" events (with eventTime) must say who reported them.
        if involved_ns == "" and namespace not in ("default", "kube-system"):
            errs.append(invalid("involvedObject.namespace", involved_ns,
                                "does not match event.namespace"))
        _validate_event_reporter(errs, obj)
    return errs


# legacyValidateEvent's limits (pkg/apis/core/validation/events.go).
EVENT_TEXT_LIMITS = {"reportingInstance": 128, "action": 128, "reason": 128, "message": 1024}


def _validate_event_reporter(errs: list, obj: dict) -> None:
    """Who reported a "new" event, as legacyValidateEvent checks it: the
    component must be a qualified name, so an empty one fails that too."""
    text = {f: obj.get(f) if isinstance(obj.get(f), str) else ""
            for f in ("reportingComponent", "reportingInstance", "action", "reason", "message")}
    if not text["reportingComponent"]:
        errs.append(required("reportingComponent"))
    errs += [invalid("reportingComponent", text["reportingComponent"], m)
             for m in is_qualified_name(text["reportingComponent"])]
    for field in ("reportingInstance", "action", "reason", "message"):
        if not text[field] and field != "message":
            errs.append(required(field))
        if len(text[field].encode("utf-8", "surrogatepass")) > EVENT_TEXT_LIMITS[field]:
            errs.append(invalid(field, "", f"can have at most {EVENT_TEXT_LIMITS[field]} characters"))


# ------------------------------------------------------ ConfigMap, Secret

def validate_config_map(obj: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    data = _get_dict(errs, obj.get("data"), "data") or {}
    binary = _get_dict(errs, obj.get("binaryData"), "binaryData") or {}
    total = 0
    for field, bag, other, other_name in (("data", data, binary, "binaryData"),
                                          ("binaryData", binary, data, "data")):
        for k, value in bag.items():
            if not isinstance(k, str):
                errs.append(_type_error(field, k, "a string"))
                continue
            _name_list_errors(errs, k, key(field, k), is_config_map_key)
            # Kubernetes reports a key in both bags once, on the data side.
            if field == "data" and k in other:
                errs.append(invalid(key(field, k), k, f"duplicate of key present in {other_name}"))
            if field == "data":
                value = _get_str(errs, value, key(field, k))
                total += len((value or "").encode("utf-8", "surrogatepass"))
            else:
                total += len(_decoded(errs, value, key(field, k)) or b"")
    _get_bool(errs, obj.get("immutable"), "immutable")
    if total > MAX_SECRET_SIZE:
        # An empty path: the error is about the whole object.
        errs.append(too_long("", "", MAX_SECRET_SIZE))
    return errs


def _decoded(errs: list, value, path: str) -> bytes | None:
    """A base64 value, as JSON carries bytes; decoding errors are ours
    (Kubernetes fails while decoding the request, before validation)."""
    text = _get_str(errs, value, path)
    if text is None:
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        errs.append(invalid(path, "<secret contents redacted>",
                            "must be base64-encoded (e.g. the output of `base64 -w0`)"))
        return None


SECRET_REQUIRED_KEYS = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
}


# [START validate-secret]
def validate_secret(obj: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    data = _get_dict(errs, obj.get("data"), "data") or {}
    decoded: dict[str, bytes] = {}
    for k, value in data.items():
        if not isinstance(k, str):
            errs.append(_type_error("data", k, "a string"))
            continue
        _name_list_errors(errs, k, key("data", k), is_config_map_key)
        raw = _decoded(errs, value, key("data", k))
        if raw is not None:
            decoded[k] = raw
    # stringData is write-only plain text that the server merges into data.
    for k, value in (_get_dict(errs, obj.get("stringData"), "stringData") or {}).items():
        if not isinstance(k, str):
            errs.append(_type_error("stringData", k, "a string"))
            continue
        _name_list_errors(errs, k, key("data", k), is_config_map_key)
        text = _get_str(errs, value, key("stringData", k))
        if text is not None:
            decoded[k] = text.encode("utf-8", "surrogatepass")
    if sum(len(v) for v in decoded.values()) > MAX_SECRET_SIZE:
        errs.append(too_long("data", "", MAX_SECRET_SIZE))
    secret_type = _get_str(errs, obj.get("type"), "type")
    _get_bool(errs, obj.get("immutable"), "immutable")
    _validate_secret_type(errs, obj, secret_type, decoded)
    return errs
# [END validate-secret]


def _validate_secret_type(errs: list, obj: dict, secret_type, decoded: dict) -> None:
    """Typed secrets promise their readers certain keys (a TLS secret has
    tls.crt and tls.key), so the server checks the promise."""
    if secret_type == "kubernetes.io/service-account-token":
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
        if not annotations.get("kubernetes.io/service-account.name"):
            errs.append(required("metadata.annotations[kubernetes.io/service-account.name]"))
    elif secret_type == "kubernetes.io/basic-auth":
        if "username" not in decoded and "password" not in decoded:
            errs.append(required("data[username]"))
            errs.append(required("data[password]"))
    elif secret_type == "kubernetes.io/ssh-auth":
        if not decoded.get("ssh-privatekey"):
            errs.append(required("data[ssh-privatekey]"))
    elif secret_type in SECRET_REQUIRED_KEYS:
        for needed in SECRET_REQUIRED_KEYS[secret_type]:
            if needed not in decoded:
                errs.append(required(key("data", needed)))
            elif needed.startswith(".docker"):
                try:
                    json.loads(decoded[needed])
                except (ValueError, UnicodeDecodeError) as err:
                    errs.append(invalid(key("data", needed), "<secret contents redacted>",
                                        str(err)))


def validate_immutable_data_update(new: dict, old: dict, fields) -> list[FieldError]:
    """ConfigMaps and Secrets marked immutable: kubelets stop watching
    them, so a change would never reach the pods."""
    errs: list[FieldError] = []
    if old.get("immutable") is not True:
        return errs
    if new.get("immutable") is not True:
        errs.append(forbidden("immutable", "field is immutable when `immutable` is set"))
    for field in fields:
        if (new.get(field) or {}) != (old.get(field) or {}):
            errs.append(forbidden(field, "field is immutable when `immutable` is set"))
    return errs


def validate_service_account(obj: dict) -> list[FieldError]:
    """A ServiceAccount holds little: whether its pods get a token by
    default, and references by name (Kubernetes' ValidateServiceAccount
    checks only its metadata; the shapes below are its field types)."""
    errs: list[FieldError] = []
    _get_bool(errs, obj.get("automountServiceAccountToken"), "automountServiceAccountToken")
    for field in ("secrets", "imagePullSecrets"):
        for i, ref in enumerate(_get_list(errs, obj.get(field), field) or []):
            if not isinstance(ref, dict):
                errs.append(_type_error(index(field, i), ref, "an object with a name"))
            else:
                _get_str(errs, ref.get("name"), child(index(field, i), "name"))
    return errs


def validate_config_map_update(new: dict, old: dict) -> list[FieldError]:
    return validate_immutable_data_update(new, old, ("data", "binaryData"))


def validate_secret_update(new: dict, old: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    # The type decides which keys readers may rely on; it stays.
    new_type, old_type = new.get("type") or "Opaque", old.get("type") or "Opaque"
    check_immutable(errs, new_type, old_type, "type")
    return errs + validate_immutable_data_update(new, old, ("data",))


__all__ = ["FIELD_IMMUTABLE", "validate_namespace",
           "validate_namespace_status", "validate_node", "validate_node_status",
           "validate_node_update", "validate_service", "validate_service_update",
           "validate_endpoints", "validate_event", "validate_config_map",
           "validate_config_map_update", "validate_secret", "validate_service_account", "validate_secret_update"]
