"""The embedded kube-scheduler twin: queue, node table (snapshot), framework, plugins."""
