# Kubernetes from the ground up, in Python.
# `make help` lists the targets. Everything Python runs from ./.venv.
# .ci/setup-machine does the set-up (packages, Docker, .venv, images): as
# root it installs and starts what is missing, as anyone else it says what to
# run. It prints nothing when there is nothing to do.

SETUP  := sh .ci/setup-machine
VENV   := .venv
PY     := $(VENV)/bin/python
PYTEST := $(PY) -m pytest
NODES  ?= node1,node2
# A chapter's checkpoint (make test-NN): its tests spread one by one over
# WORKERS workers, Docker's too (nothing else shares this computer then);
# four on two cores, because the tests mostly wait (on a kubelet's sync, a
# back-off, a container's stop): chapter 01 took 2:48 on two workers, 2:01
# on four with the machine busier (issue 42). The tests marked exhaustive
# (every row of a table, every kubectl version) are left to make test. The
# run ends with a line per capability of the chapter: its tests passed and
# failed, and the lesson section to read for a failure
# (tests/capabilities.py). V=1 names every test as it runs.
WORKERS ?= 4
CHECKPOINT = $(PYTEST) -n $(WORKERS) --checkpoint -m "not exhaustive" $(if $(V),-v,-q) --capabilities

.DEFAULT_GOAL := help
.PHONY: help setup venv images doctor demo demo-04 demo-01 demo-02 demo-03 test test-common test-01 lesson-01 stage-01 bench-01 test-02 lesson-02 stage-02 bench-02 bench-02-nodes bench-02-exec apiserver ha bench-02-etcd bench-02-ha certs clean-node test-03 lesson-03 bench-03 stage-03 test-04 lesson-04 stage-04 bench-04 test-05 lesson-05 stage-05 bench-05 bench-05-dns bench-05-ingress machines machines-down on kubectl-versions snippet clean dashboard bench-dashboard test-dashboard bench-02-writes stage-05-ingress stage-04-statefulset

help: ## list the targets
	@echo "Quickstart:"
	@echo "  make demo    set up, build the offline images, run the main demo"
	@echo "  make test    set up, build the offline images, run every test"
	@echo
	@echo "All targets:"
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | \
	  awk 'BEGIN {FS = ":.*## "}; {printf "  %-16s %s\n", $$1, $$2}'

setup: ## install what is missing (as root), start Docker, create .venv, build the images
	@$(SETUP) machine venv images

venv: ## create or reuse ./.venv with the pinned dependencies
	@$(SETUP) venv

images: ## build the offline images (busybox:1.35, registry.k8s.io/pause:3.9) from Debian's busybox-static
	@$(SETUP) images

doctor: ## is this machine ready for the lessons? one line per item, and the fix (one computer; or ROLE=master [NODES=node1,node2], ROLE=node NODE=node1 [MASTER=address])
	@python3 .ci/doctor.py $(if $(ROLE),--role $(ROLE)) $(if $(NODE),--node $(NODE)) $(if $(MASTER),--master $(MASTER)) --nodes $(NODES)

demo: setup ## the cluster so far: a two-tier application answers through a pod deletion, a stopped kubelet and a roll, on three machines (as root; DNS=path/to/yours.py)
	$(PY) 05-proxy-dns/demo.py $(if $(DNS),--dns $(DNS))

demo-04: venv images ## chapter 04's cluster: a Deployment rolls out and survives a node's death, on this machine (CONTROLLER=path/to/yours.py)
	$(PY) 04-controllers/demo.py $(if $(CONTROLLER),--controller $(CONTROLLER))

demo-03: venv images ## chapter 03's cluster: the scheduler spreads six pods over two kubelets; a too-big pod stays Pending (SCHEDULER=path/to/yours.py)
	$(PY) 03-scheduler/demo.py $(if $(SCHEDULER),--scheduler $(SCHEDULER))

demo-02: venv images ## chapter 02's cluster: an API server and two kubelets run pods bound by hand; one stays Pending (APISERVER=path/to/yours.py: yours and kubectl, no kubelets)
	$(PY) 02-apiserver/demo.py $(if $(APISERVER),--apiserver $(APISERVER))

demo-01: venv images ## chapter 01 alone: a kubelet runs the example pods, shows them, stops and cleans up (KUBELET=path/to/yours.py)
	$(PY) 01-kubelet/demo.py $(if $(KUBELET),--kubelet $(KUBELET))

test: ## set up, then run every test (kubectl tests skip without kubectl unless GROUNDUP_REQUIRE_KUBECTL=1)
	@$(SETUP) machine venv images kubectl
	@# pytest exits 5 when it collected no test: a failure, never a pass.
	@# Three workers: the lessons and the machines on one, one test at a time,
	@# Docker's tests on another; the rest beside and between them
	@# (tests/conftest.py says which is which, and why three).
	$(PYTEST) -n 3 --durations=25 --capabilities all tests; code=$$?; [ $$code -ne 5 ] || echo "error: pytest collected no tests"; exit $$code

test-common: venv ## the shared object model: manifests, validation, quantities, selectors
	$(PYTEST) tests/common

test-01: venv images ## chapter 01: the kubelet, against real Docker
	$(CHECKPOINT) 01 tests/kubelet

lesson-01: venv images ## run chapter 01's README as a lesson, command by command
	$(PYTEST) tests/lessons/test_lessons.py -k 01-kubelet

bench-01: venv images ## chapter 01 benchmark: 30 two-container pods vs bare Docker
	$(PY) 01-kubelet/bench.py

stage-01: venv images ## chapter 01, build it yourself: grade your kubelet stage by stage, on Docker (STAGE=N: one stage; MINE=path/to/yours.py)
	@$(PY) tests/stages/run.py 01 $(if $(STAGE),--stage $(STAGE)) $(if $(MINE),--mine $(MINE))

test-02: venv ## chapter 02: the API server over real HTTP, with the real kubectl and the Python client
	$(CHECKPOINT) 02 tests/apiserver

lesson-02: venv images ## run chapter 02's README as a lesson, command by command (part 5 on machines it makes: as root)
	$(PYTEST) tests/lessons/test_lessons.py -k 02-apiserver

stage-02: venv ## chapter 02, build it yourself: grade your API server stage by stage (STAGE=N: one stage; MINE=path/to/yours.py)
	@$(PY) tests/stages/run.py 02 $(if $(STAGE),--stage $(STAGE)) $(if $(MINE),--mine $(MINE))

bench-02: venv ## chapter 02 benchmark: creates, GETs, lists, watch fan-out and memory vs this machine's floors
	$(PY) 02-apiserver/benchmarks/bench.py

bench-02-writes: venv ## chapter 02 benchmark: CPU per create, binding and status patch vs a bare POST (ARGS="--profile DIR": py-spy's top ten costs)
	$(PY) 02-apiserver/benchmarks/bench_writes.py $(ARGS)

bench-02-etcd: venv ## chapter 02 benchmark: creates, GETs and a 10,000-pod list on the JSON files and on etcd vs etcd's own put rate; failover time through HAProxy (ARGS=--quick)
	$(PY) 02-apiserver/benchmarks/bench_etcd.py $(ARGS)

bench-02-ha: venv ## chapter 02 benchmark: the scheduler's leader handover time (make ha's timings), watch delivery to 100 watchers on each store (ARGS=--quick)
	$(PY) 02-apiserver/benchmarks/bench_ha.py $(ARGS)

bench-02-nodes: venv images ## chapter 02 benchmark: 30 pods through the API vs from manifests, API writes per pod, idle kubelet's requests
	$(PY) 02-apiserver/benchmarks/bench_nodes.py

bench-02-exec: venv images ## chapter 02 benchmark: a keystroke through kubectl exec's path vs docker exec; port-forward vs the pod IP
	$(PY) 02-apiserver/benchmarks/bench_exec.py

test-03: venv images ## chapter 03: the scheduler's plugins, queue and cache, and end to end with a real API server and kubelets
	$(CHECKPOINT) 03 tests/scheduler

lesson-03: venv images ## run chapter 03's README as a lesson, command by command, on machines it makes (as root)
	$(PYTEST) tests/lessons/test_lessons.py -k 03-scheduler

stage-03: venv ## chapter 03, build it yourself: grade your scheduler stage by stage (STAGE=N: one stage; MINE=path/to/yours.py)
	@$(PY) tests/stages/run.py 03 $(if $(STAGE),--stage $(STAGE)) $(if $(MINE),--mine $(MINE))

bench-03: venv ## chapter 03 benchmark: 3,000 pods onto 1,000 nodes, pods/s and cycle times vs the API server's own rates (ARGS="--nodes 100 --pods 300": quick)
	$(PY) 03-scheduler/bench.py $(ARGS)

test-04: venv ## chapter 04: every controller's decisions as tables, and end to end with a real API server and controller manager
	$(CHECKPOINT) 04 tests/controllers

lesson-04: venv images ## run chapter 04's README as a lesson, command by command
	$(PYTEST) tests/lessons/test_lessons.py -k 04-controllers

stage-04: venv ## chapter 04, build it yourself: grade your ReplicaSet controller stage by stage (STAGE=N: one stage; MINE=path/to/yours.py)
	@$(PY) tests/stages/run.py 04 $(if $(STAGE),--stage $(STAGE)) $(if $(MINE),--mine $(MINE))

stage-04-statefulset: venv ## chapter 04, part 4, build it yourself: grade your StatefulSet plan stage by stage (STAGE=N: one stage; MINE=path/to/yours.py)
	@$(PY) tests/stages/run.py 04-statefulset $(if $(STAGE),--stage $(STAGE)) $(if $(MINE),--mine $(MINE))

bench-04: venv ## chapter 04 benchmark: a 100-replica Deployment created and rolled, writes per replica, idle requests (ARGS="--replicas 30": quick)
	$(PY) 04-controllers/bench.py $(ARGS)

test-05: venv images ## chapter 05: the pod network, services, DNS and the finale, on three machines made of namespaces (as root)
	$(CHECKPOINT) 05 tests/network

lesson-05: venv images ## run chapter 05's parts as a lesson, on machines it makes (as root)
	$(PYTEST) tests/lessons/test_lessons.py -k 05-proxy-dns

stage-05: venv ## chapter 05, build it yourself: grade your cluster DNS stage by stage (STAGE=N: one stage; MINE=path/to/yours.py)
	@$(PY) tests/stages/run.py 05 $(if $(STAGE),--stage $(STAGE)) $(if $(MINE),--mine $(MINE))

stage-05-ingress: venv ## chapter 05, build it yourself: grade your ingress routing rules stage by stage (STAGE=N: one stage; MINE=path/to/yours.py)
	@$(PY) tests/stages/run.py 05-ingress $(if $(STAGE),--stage $(STAGE)) $(if $(MINE),--mine $(MINE))

bench-05: venv images ## (root) chapter 05 benchmark: pod-to-pod throughput and latency vs node-to-node, time for a joining node's routes
	$(PY) 05-proxy-dns/benchmarks/bench_network.py $(ARGS)

bench-05-dns: venv ## chapter 05 benchmark: cluster DNS queries/s vs a bare UDP echo in the same run (loopback, no root)
	$(PY) 05-proxy-dns/benchmarks/bench_dns.py $(ARGS)

bench-05-ingress: venv ## chapter 05 benchmark: requests/s and p99 through the ingress controller vs straight to the pod, same run (no root)
	$(PY) 05-proxy-dns/benchmarks/bench_ingress.py $(ARGS)

machines: venv images ## (root) make master, node1, node2 from namespaces, a Docker engine on each node
	@python3 05-proxy-dns/machines.py up

machines-down: ## (root) remove the machines, their engines, data and rules; safe to run twice
	@python3 05-proxy-dns/machines.py down

on: ## a shell on a machine: make on M=node1 (or run one command: make on M=node1 CMD="docker ps")
	@python3 05-proxy-dns/machines.py on $(or $(M),master) -- $(or $(CMD),bash --norc -i)

kubectl-versions: venv images ## every kubectl 1.27-1.33 on this machine against one cluster: the lessons' commands, as a table
	$(PY) 02-apiserver/kubectl_compat/kubectl_versions.py

apiserver: venv ## run the API server on 127.0.0.1:8080 with its data in /tmp/groundup-data (DATA=dir to change)
	$(PY) 02-apiserver/apiserver.py --data-dir $(or $(DATA),/tmp/groundup-data)

ha: venv ## three etcd members, two API servers and HAProxy in front on 127.0.0.1:8080, two schedulers and two controller managers electing leaders (etcd, haproxy: make setup; ARGS="--kubelets 2" adds nodes); Ctrl-C stops them
	$(PY) 02-apiserver/ha_control_plane.py $(ARGS)

certs: venv ## CA, API server certificate, tokens and a kubeconfig per user in .certs/ (MASTER_IP=, MASTER_NAME=, NODES=node1,node2)
	$(PY) 02-apiserver/certs.py --out .certs $(foreach ip,$(MASTER_IP),--master-ip $(ip)) \
	  $(foreach name,$(MASTER_NAME),--master-name $(name)) --nodes $(NODES)

clean-node: venv ## remove every container and volume a kubelet made (NODE=name for one node only)
	$(PY) 01-kubelet/kubelet.py --cleanup $(if $(NODE),--node-name $(NODE),--all-nodes)

dashboard: venv ## a live page of the cluster on http://127.0.0.1:9090, for a browser or the projector (FLAGS="--address A --port N", "--kubeconfig F" or "--apiserver URL"; the API server defaults to http://127.0.0.1:8080)
	$(PY) dashboard/dashboard.py $(if $(filter --kubeconfig% --apiserver%,$(FLAGS)),,--apiserver http://127.0.0.1:8080) $(FLAGS)

bench-dashboard: venv ## the dashboard's cost: API requests with 20 tabs open vs none, update delay at 100 pod changes/s, 1,000 pods drawn (chromium; ARGS="--tabs 5 --changes 100": quick)
	$(PY) dashboard/bench.py $(ARGS)

test-dashboard: venv ## the dashboard's tests, in headless chromium (the page, its stream, its screenshots; UPDATE=1 rewrites the screenshots)
	$(PYTEST) -n 2 tests/dashboard tests/test_chromium_requirement.py $(if $(UPDATE),--update-screenshots)

snippet: venv ## print a snippet region for a blog post: make snippet NAME=sync-loop
	@$(PY) -m common.tooling.snippets $(NAME)

clean: ## remove the virtualenv and caches
	rm -rf $(VENV) .pytest_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
