"""The adapter core: Batsim's jobs and hosts become Kubernetes pods, pod groups and nodes, and a cluster
backend's bindings become Batsim's EXECUTE_JOB. Called by runs/ (a `batkube run`) and by the cluster
backends' callers; it calls protocol/, scheduler/ (snapshots) and cluster/base (the backend interface)."""
