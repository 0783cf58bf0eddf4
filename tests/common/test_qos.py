"""common/model/qos.py: the QoS class the API server writes and the kubelet reports, by Kubernetes' rule."""
import pytest

from common.model.qos import qos_class


def pod(*resources, init=()):
    return {"initContainers": [{"name": f"i{n}", "resources": r} for n, r in enumerate(init)],
            "containers": [{"name": f"c{n}", "resources": r} for n, r in enumerate(resources)]}


BOTH = {"cpu": "500m", "memory": "64Mi"}


@pytest.mark.parametrize("spec, expected", [
    (pod({}), "BestEffort"),
    (pod({"requests": {"ephemeral-storage": "1Gi"}}), "BestEffort"),       # only cpu and memory count
    (pod({"requests": {"cpu": "0"}, "limits": {"memory": "0"}}), "BestEffort"),   # only amounts above zero
    (pod({"limits": BOTH}), "Guaranteed"),                                 # requests default to limits
    (pod({"requests": BOTH, "limits": BOTH}), "Guaranteed"),
    (pod({"requests": {"cpu": "0.5", "memory": "64Mi"}, "limits": BOTH}), "Guaranteed"),   # equal amounts
    (pod({"requests": {"cpu": "250m"}, "limits": BOTH}), "Burstable"),
    (pod({"limits": {"cpu": "1"}}), "Burstable"),                          # memory not limited
    (pod({"requests": {"memory": "1Gi"}}), "Burstable"),
    (pod({"limits": BOTH}, {}), "Burstable"),                              # one container without limits
    (pod({"limits": BOTH}, init=[{}]), "Burstable"),                       # init containers count
    (pod({"limits": BOTH}, init=[{"limits": BOTH}]), "Guaranteed"),
])
def test_the_class_follows_kubernetes_rule(spec, expected):
    assert qos_class(spec) == expected


@pytest.mark.parametrize("spec", [
    {}, {"containers": "nope"}, {"containers": [None, 3]}, pod({"requests": "lots"}),
    pod({"requests": {"cpu": "a lot"}, "limits": {"memory": ["1Gi"]}}),
])
def test_any_shape_is_survived_and_what_cannot_be_read_counts_as_absent(spec):
    assert qos_class(spec) == "BestEffort"
