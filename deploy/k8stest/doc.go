// Package k8stest holds `make k8s-test`: floe's Helm chart installed on a real Kubernetes
// control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) with real
// kubelets on containerd of their own, all started by the test on this machine, against the
// PostgreSQL and MinIO the other tests use (floe/metadata/pgtest, floe/storage/miniotest).
// A franz-go producer and consumer group run from the test process against the agents' pod
// IPs while the agents are restarted, scaled, drained off a node and autoscaled, and every
// acknowledged record must be consumed.
//
// The test is behind the build tag k8s: it needs root (bridges, iptables, containerd), the
// tools `make k8s-tools` builds into ~/.cache/floe-tools and floe's image, and runs for
// minutes. `make test` never builds or runs it.
//
// Nothing it starts is reachable from, or sends to, anything off the machine: the pod network
// is a bridge of its own (10.89.0.0/16) with forwarding out of it dropped, and every server
// listens on 127.0.0.1 or on that bridge.
package k8stest
