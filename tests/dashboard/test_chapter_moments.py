"""The moments the chapters point at, on the page, with our real components
doing the work: chapter 03's scheduler spreading six pods three and three
(and one too big for any node, Pending with its reason), and chapter 05's
Services with the endpoints the controller manager found for them.

No kubelets (no Docker): the nodes and, for the endpoints, the pods'
status are written as a kubelet writes them. With --update-screenshots
these tests write the pictures the chapters show.
"""
from __future__ import annotations

import subprocess
import sys

import pytest
import requests

from common.tooling.processes import stop_within
from dashboard_harness import ROOT, create_pod, now, register_node


@pytest.fixture
def run_component(apiserver, tmp_path):
    """Start one of our components against the test's API server."""
    started = []

    def run(script: str, *flags: str) -> subprocess.Popen:
        log = open(tmp_path / f"{script.replace('/', '-')}.log", "ab")
        started.append(subprocess.Popen([sys.executable, str(ROOT / script), "--apiserver", apiserver.url, *flags],
                                        stdout=log, stderr=subprocess.STDOUT, cwd=ROOT))
        log.close()
        return started[-1]

    yield run
    for process in started:
        stop_within(process, 10)


def cards_in(page, column_selector: str) -> list[str]:
    return page.tab.eval_on_selector_all(f"{column_selector} [data-pod]", "cards => cards.map(c => c.dataset.pod)")


def test_the_scheduler_spreads_six_pods_three_and_three(apiserver, dashboard, open_page, run_component, request):
    for node in ("node1", "node2"):
        register_node(apiserver.url, node, cpu="2")
    page = open_page(dashboard.url)
    page.wait_until("() => document.querySelectorAll('[data-node]').length === 2")
    for index in range(1, 7):
        create_pod(apiserver.url, f"web-{index}", cpu="250m")
    create_pod(apiserver.url, "too-big", cpu="3")
    page.wait_until("() => document.querySelectorAll('[data-column=pending] [data-pod]').length === 7")
    run_component("03-scheduler/scheduler.py")
    page.wait_until("() => document.querySelectorAll('[data-node] [data-pod]').length === 6", timeout=30)
    assert sorted(len(cards_in(page, f'[data-node="{n}"]')) for n in ("node1", "node2")) == [3, 3]
    page.wait_until("() => document.querySelector('[data-pod=\"default/too-big\"] .pod-waiting').textContent")
    assert page.pod("default/too-big").locator(".pod-waiting").inner_text() == \
        "0/2 nodes are available: 2 Insufficient cpu."
    assert page.node("node1").locator(".usage-text").first.inner_text() == "750m / 2"
    page.screenshot(request, "chapter-03-spread")


def running(api: str, name: str, node: str, ip: str) -> None:
    """What a kubelet reports once the pod's container runs and is ready."""
    pod = requests.get(f"{api}/api/v1/namespaces/default/pods/{name}", timeout=10).json()
    pod["status"] = {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "hostIP": "10.0.0.1", "startTime": now(),
                     "conditions": [{"type": t, "status": "True", "lastTransitionTime": now()}
                                    for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")],
                     "containerStatuses": [{"name": "app", "ready": True, "restartCount": 0, "image": "busybox:1.35",
                                            "imageID": "", "started": True,
                                            "state": {"running": {"startedAt": now()}}}]}
    updated = requests.put(f"{api}/api/v1/namespaces/default/pods/{name}/status", json=pod, timeout=10)
    assert updated.status_code == 200, updated.text


def test_services_show_the_endpoints_the_controller_found(apiserver, dashboard, open_page, run_component, request):
    for node in ("node1", "node2"):
        register_node(apiserver.url, node)
    pods = {"front-1": ("node1", "10.244.1.2", "front"), "front-2": ("node2", "10.244.2.2", "front"),
            "back-1": ("node1", "10.244.1.3", "back"), "back-2": ("node2", "10.244.2.3", "back")}
    for name, (node, ip, tier) in pods.items():
        create_pod(apiserver.url, name, node=node, labels={"app": tier})
        running(apiserver.url, name, node, ip)
    for tier, port in (("front", 80), ("back", 8080)):
        service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": tier},
                   "spec": {"type": "NodePort" if tier == "front" else "ClusterIP", "selector": {"app": tier},
                            "ports": [{"port": port, "protocol": "TCP"}]}}
        created = requests.post(f"{apiserver.url}/api/v1/namespaces/default/services", json=service, timeout=10)
        assert created.status_code == 201, created.text
    run_component("04-controllers/controller_manager.py", "--controllers", "endpointslice")
    page = open_page(dashboard.url)
    for tier, first, second in (("front", "10.244.1.2", "10.244.2.2"), ("back", "10.244.1.3", "10.244.2.3")):
        page.wait_until(f"() => document.querySelector('[data-service=\"default/{tier}\"] [data-endpoints=\"2\"]')",
                        timeout=30)
        cells = page.tab.locator(f'[data-service="default/{tier}"] td').all_inner_texts()
        assert cells[4] == f"{first}, {second}"
    assert page.pod("default/front-1").get_attribute("data-tone") == "ok"
    assert page.pod("default/front-1").locator(".pod-status").inner_text() == "Running · 1/1 ready"
    assert page.pod("default/front-1").locator(".pod-meta").inner_text() == "10.244.1.2"
    page.screenshot(request, "chapter-05-services")
