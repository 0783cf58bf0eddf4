"""The dashboard in a real browser: Debian's headless chromium shows the page
a real dashboard process serves, against a real API server on a free
loopback port. What a learner does (kubectl run, kubectl delete) is done
with the real kubectl; what a kubelet would do (register a node, post its
status) is written straight to the API, as a kubelet writes it.

Every test's page records console errors and uncaught exceptions, and fails
at the end if there was one (the open_page fixture).
"""
from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import requests

from apiserver_harness import make_certs
from common.tooling.apiserver_process import APIServer
from common.tooling.ports import free_port
from dashboard_harness import Kubectl, create_pod, register_node, set_ready

APPEARS_WITHIN = 2          # seconds: the issue's promise for a pod created with kubectl


def test_the_page_lists_nodes_and_their_pods(apiserver, dashboard, open_page, request):
    register_node(apiserver.url, "node1")
    register_node(apiserver.url, "node2", unschedulable=True,
                  taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
    for name, node in (("web-1", "node1"), ("web-2", "node1"), ("web-3", "node2"), ("big", "")):
        create_pod(apiserver.url, name, node=node, cpu="500m")
    page = open_page(dashboard.url)
    page.wait_for_pod("default/big")
    for name, node in (("web-1", "node1"), ("web-2", "node1"), ("web-3", "node2")):
        assert page.wait_for_pod(f"default/{name}").evaluate("card => card.closest('.column').dataset.node") == node
    assert page.pod("default/big").evaluate("card => card.closest('.column').dataset.column") == "pending"

    node1, node2 = page.node("node1"), page.node("node2")
    assert node1.get_attribute("data-ready") == "True"
    assert node1.locator(".node-status").inner_text() == "Ready"
    assert node2.locator(".node-status").inner_text() == "Ready, SchedulingDisabled"
    assert node2.locator(".node-flags").inner_text() == "taints: dedicated=gpu:NoSchedule"
    # Requested against allocatable: two pods of 500m on a node of 2 CPUs.
    page.wait_until("() => document.querySelector('[data-node=node1] .usage-text')")
    assert node1.locator(".usage-text").first.inner_text() == "1 / 2"
    card = page.pod("default/web-1")
    assert card.get_attribute("data-tone") == "pending"          # no kubelet: never started
    assert card.locator(".pod-status").inner_text() == "Pending · 0/1 ready"
    assert page.tab.locator("#connection").inner_text() == "live"
    assert page.tab.locator("#counts").inner_text() == "2 nodes · 4 pods · 1 pending"
    # The kubernetes Service, which the API server makes itself.
    assert page.tab.locator('[data-service="default/kubernetes"] td').nth(2).inner_text() == "10.96.0.1"
    page.screenshot(request, "nodes-and-pods")


def test_a_pod_created_with_kubectl_appears_without_a_reload(apiserver, dashboard, open_page, kubectl, tmp_path):
    register_node(apiserver.url, "node1")
    page = open_page(dashboard.url)
    page.wait_until("() => document.querySelector('#connection').dataset.state === 'live'")
    k = Kubectl(kubectl, apiserver.url, tmp_path)
    k("run", "hello", "--image", "busybox:1.35", "--overrides", '{"spec": {"nodeName": "node1"}}')
    page.wait_for_pod("default/hello", timeout=APPEARS_WITHIN)
    assert page.pod("default/hello").evaluate("card => card.closest('.column').dataset.node") == "node1"
    assert page.not_reloaded()


def test_a_deleted_pod_disappears(apiserver, dashboard, open_page, kubectl, tmp_path):
    register_node(apiserver.url, "node1")
    create_pod(apiserver.url, "doomed", node="node1")
    create_pod(apiserver.url, "stays", node="node1")
    page = open_page(dashboard.url)
    page.wait_for_pod("default/doomed")
    k = Kubectl(kubectl, apiserver.url, tmp_path)
    # A pod on a node waits for its kubelet to stop the containers: Terminating first.
    k("delete", "pod", "doomed", "--wait=false")
    page.wait_until("() => document.querySelector('[data-pod=\"default/doomed\"]').dataset.status === 'Terminating'",
                    timeout=APPEARS_WITHIN)
    # There is no kubelet here to finish it: forced, the API server removes it at once.
    k("delete", "pod", "doomed", "--grace-period=0", "--force")
    page.pod("default/doomed").wait_for(state="detached", timeout=APPEARS_WITHIN * 1000)
    page.wait_until("() => !document.querySelector('[data-leaving]')")          # faded out, then gone
    assert page.pod("default/stays").count() == 1
    assert page.not_reloaded()


def test_a_node_whose_kubelet_stops_turns_not_ready(apiserver, dashboard, open_page, request):
    register_node(apiserver.url, "node1")
    register_node(apiserver.url, "node2")
    create_pod(apiserver.url, "web-1", node="node1")
    create_pod(apiserver.url, "web-2", node="node2")
    page = open_page(dashboard.url)
    page.wait_for_pod("default/web-2")
    # What the node lifecycle controller writes when a kubelet stops posting its status.
    set_ready(apiserver.url, "node2", "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.")
    page.wait_until("() => document.querySelector('[data-node=node2]').dataset.ready === 'Unknown'",
                    timeout=APPEARS_WITHIN)
    assert page.node("node2").locator(".node-status").inner_text() == "NotReady"
    assert page.node("node2").locator(".node-status").get_attribute("title") == \
        "NodeStatusUnknown Kubelet stopped posting node status."
    assert page.node("node1").locator(".node-status").inner_text() == "Ready"
    # And False, as a kubelet that is up but unwell reports it.
    set_ready(apiserver.url, "node1", "False", "KubeletNotReady", "container runtime is down")
    page.wait_until("() => document.querySelector('[data-node=node1]').dataset.ready === 'False'")
    assert page.node("node1").locator(".node-status").inner_text() == "NotReady"
    page.screenshot(request, "node-not-ready")


def test_the_page_recovers_after_an_api_server_restart(apiserver, dashboard, open_page):
    register_node(apiserver.url, "node1")
    create_pod(apiserver.url, "before", node="node1")
    page = open_page(dashboard.url)
    page.wait_for_pod("default/before")
    apiserver.stop()
    page.wait_until("() => document.querySelector('#connection').dataset.state === 'reconnecting'", timeout=20)
    assert page.tab.locator("#connection").inner_text() == "reconnecting to the API server…"
    assert page.pod("default/before").count() == 1               # what it knew stays on the page meanwhile

    apiserver.start()                                            # the same port, the same data directory
    create_pod(apiserver.url, "after", node="node1")
    # The informers back off up to 10 s between attempts while the server is away.
    page.wait_for_pod("default/after", timeout=30)
    page.wait_until("() => document.querySelector('#connection').dataset.state === 'live'")
    assert page.pod("default/before").count() == 1
    assert page.not_reloaded()


def test_names_and_messages_are_shown_as_text(apiserver, dashboard, open_page):
    """An Event's message is free text any client may write: markup in it is
    shown, never run. (A label value cannot hold '<': the API server refuses
    it, as Kubernetes does, so the free-text fields are where this matters.)"""
    hostile = '<script>window.owned = 1</script><img src=x onerror="window.owned = 2">'
    create_pod(apiserver.url, "web", node="")
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "web.1", "namespace": "default"},
             "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default"},
             "reason": "<b>Bold</b>", "message": hostile, "type": "Warning", "count": 1,
             "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
             "source": {"component": "test"}}
    created = requests.post(f"{apiserver.url}/api/v1/namespaces/default/events", json=event, timeout=10)
    assert created.status_code == 201, created.text
    page = open_page(dashboard.url)
    page.wait_until("() => document.querySelector('[data-event=\"default/web.1\"]')")
    item = page.tab.locator('[data-event="default/web.1"]')
    assert item.locator(".event-message").inner_text() == hostile
    assert item.locator(".event-reason").inner_text() == "<b>Bold</b>"
    assert item.locator("script, img, b").count() == 0
    assert page.tab.evaluate("window.owned === undefined")


def test_the_namespace_filter_hides_other_namespaces(apiserver, dashboard, open_page):
    requests.post(f"{apiserver.url}/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace",
                                                               "metadata": {"name": "shop"}}, timeout=10)
    create_pod(apiserver.url, "cart", namespace="shop")
    create_pod(apiserver.url, "web")
    page = open_page(dashboard.url)
    page.wait_for_pod("shop/cart")
    page.wait_until("() => [...document.querySelectorAll('#namespace option')].some(o => o.value === 'shop')")
    page.tab.select_option("#namespace", "shop")
    page.pod("default/web").wait_for(state="detached", timeout=5000)
    assert page.pod("shop/cart").locator(".pod-name").inner_text() == "cart"
    assert page.tab.evaluate("location.hash") == "#ns=shop"
    page.tab.select_option("#namespace", "")
    page.wait_for_pod("default/web")


# Notes the classes each pod card had when it was added to the page.
NOTE_CARDS = """window.added = [];
new MutationObserver((records) => {
  for (const record of records)
    for (const node of record.addedNodes) if (node.dataset && node.dataset.pod) window.added.push(node.className);
}).observe(document, {subtree: true, childList: true});"""


def test_a_big_snapshot_draws_without_transitions_and_a_lone_pod_glides_in(apiserver, dashboard, open_page):
    """Thirty cards at once are a flood: no transition (each would keep the
    page redrawing every frame); once it is over, a single new pod fades in."""
    register_node(apiserver.url, "node1")
    for i in range(30):
        create_pod(apiserver.url, f"many-{i}", node="node1")
    page = open_page(dashboard.url)
    page.tab.add_init_script(NOTE_CARDS)
    page.tab.reload()                                     # the note-taker runs before the page's own script
    page.wait_until("() => window.added.length === 30")
    assert set(page.tab.evaluate("window.added")) == {"pod"}
    page.wait_until("() => !flooded()")                  # a second without a flood of pod changes
    create_pod(apiserver.url, "lone", node="node1")
    page.wait_until("() => window.added.length === 31")
    assert page.tab.evaluate("window.added[30]") == "pod entering"


def test_a_flood_of_pods_keeps_every_column_in_name_order(apiserver, dashboard, open_page):
    """Pods written at once, in no order, from several writers (a scale-up):
    each card lands in its place among the others, and places are kept
    right as pods go and come back (the page finds a card's place by a
    binary search over the keys it keeps per column)."""
    register_node(apiserver.url, "node1")
    page = open_page(dashboard.url)
    page.wait_until("() => document.querySelector('#connection').dataset.state === 'live'")
    names = [f"flood-{i:02d}" for i in range(40)]
    random.Random(40).shuffle(names)

    def write(create: list[str], delete: list[str] = ()) -> None:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda name: create_pod(apiserver.url, name, node="node1"), create))
            list(pool.map(lambda name: requests.delete(f"{apiserver.url}/api/v1/namespaces/default/pods/{name}",
                                                       json={"gracePeriodSeconds": 0}, timeout=10), delete))

    def column_shows(expected: list[str]):
        keys = [f"default/{name}" for name in sorted(expected)]
        page.wait_until("keys => JSON.stringify([...document.querySelectorAll('[data-node=node1] [data-pod]')]"
                        ".map(card => card.dataset.pod)) === JSON.stringify(keys)", arg=keys, timeout=20)

    write(names)
    column_shows(names)
    gone, back = names[::2], names[::4]
    write([], delete=gone)
    column_shows([name for name in names if name not in gone])
    write(back)
    column_shows([name for name in names if name not in gone or name in back])


# ---------------------------------------------------------------- what its credentials allow

READ_ALL_BUT_EVENTS = {
    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "dashboard-no-events"},
    "rules": [{"apiGroups": [""], "resources": ["nodes", "pods", "services", "namespaces"],
               "verbs": ["get", "list", "watch"]},
              {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "list", "watch"]}],
}


def test_a_forbidden_kind_shows_a_banner_not_a_blank(tmp_path, start_dashboard, open_page, request):
    """Served with a kubeconfig whose user RBAC lets list everything but
    Events: the page shows the pods, and a banner in the server's words."""
    certs = make_certs(tmp_path / "certs")
    (certs / "tokens.csv").write_text("dashboard-token-0123456789,dashboard-user,dashboard-user\n")
    secure_port = free_port()
    server = APIServer(tmp_path / "data", "--secure-port", str(secure_port),
                       "--tls-cert-file", str(certs / "apiserver.crt"),
                       "--tls-private-key-file", str(certs / "apiserver.key"),
                       "--token-auth-file", str(certs / "tokens.csv"), "--authorization-mode", "RBAC").start()
    try:
        admin = server.url + "/apis/rbac.authorization.k8s.io/v1"   # the insecure port: no authorization
        assert requests.post(f"{admin}/clusterroles", json=READ_ALL_BUT_EVENTS, timeout=10).status_code == 201
        binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": "dashboard-no-events"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                               "name": "dashboard-no-events"},
                   "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "dashboard-user"}]}
        assert requests.post(f"{admin}/clusterrolebindings", json=binding, timeout=10).status_code == 201
        register_node(server.url, "node1")
        create_pod(server.url, "web", node="node1")
        kubeconfig = tmp_path / "dashboard.kubeconfig"
        kubeconfig.write_text(KUBECONFIG.format(server=f"https://127.0.0.1:{secure_port}", ca=certs / "ca.crt",
                                                token="dashboard-token-0123456789"))
        dashboard = start_dashboard("--kubeconfig", str(kubeconfig))
        page = open_page(dashboard.url)
        page.wait_for_pod("default/web")
        banner = page.tab.locator('.banner[data-kind="events"]')
        banner.wait_for(timeout=10_000)
        assert banner.get_attribute("data-code") == "403"
        assert banner.inner_text() == (
            'Cannot show events: Forbidden (403). events is forbidden: User "dashboard-user" cannot list '
            'resource "events" in API group "" at the cluster scope')
        assert page.tab.locator(".banner").count() == 1               # the other kinds are allowed
        assert page.tab.locator("#connection").inner_text() == "live"
        page.screenshot(request, "forbidden-banner")
    finally:
        server.stop()


KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: groundup
  cluster: {{server: "{server}", certificate-authority: "{ca}"}}
users:
- name: dashboard
  user: {{token: "{token}"}}
contexts:
- name: groundup
  context: {{cluster: groundup, user: dashboard}}
current-context: groundup
"""

