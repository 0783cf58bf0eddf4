"""What plugs into chapter 02's server beside kubectl_compat/: mostly what later chapters add.

Most are taught in chapters 04 and 05 but run inside the API server, and
chapters import only common/, so they live here, beside the core rather
than in it: the core never imports them. apiserver.py sets each up with
its `init_app(app)`, as a Flask extension is set up on an app.

- custom_resources.py (and crd_schema.py): CustomResourceDefinitions, chapter 04
- service_ips.py (and kubernetes_service.py): Services' cluster IPs and node ports, chapter 05
- field_selectors.py: ?fieldSelector=, which every kubelet's watch needs (chapter 02, part 4)
"""
