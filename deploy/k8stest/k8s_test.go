//go:build k8s

package k8stest

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"floe/metadata/pgtest"
	"floe/storage/miniotest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	namespace = "floe"
	release   = "floe"
	agentDep  = "floe-agent"
	topic     = "k8s-test"
)

// TestKubernetes installs the chart on a two-node cluster and runs a producer and a consumer
// group against the agents through a rolling restart, scale 1 → 3 → 1, a drain of a node
// under the PodDisruptionBudget and HPA scaling driven by metrics-server; every acknowledged
// record must be consumed.
func TestKubernetes(t *testing.T) {
	began := time.Now()
	// Removed last (cleanups run in reverse): after every process is gone and unmounted.
	dir, err := os.MkdirTemp("", "floe-k8s-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unmountUnder(t, dir)
		if os.Getenv("FLOE_K8S_KEEP") != "" {
			t.Logf("kept %s", dir)
			return
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Logf("remove %s: %v", dir, err)
		}
	})
	saveSysctls(t)
	hostNet(t, 2)
	cgroupsLeft(t)

	// PostgreSQL and MinIO listen on 127.0.0.1; pods reach them through forwarders on the
	// first bridge's gateway.
	pg := pgtest.Start(t)
	pgURL := pg.CreateDatabase(t, "floe")
	minio := miniotest.Start(t)
	// MinIO answers its liveness check before it serves S3 ("Server not initialized yet"),
	// for seconds on a loaded machine.
	bucket := "floe"
	waitFor(t, "create bucket", time.Minute, time.Second, func() error { return minio.CreateBucket(ctxT(t), bucket) })
	gw := bridgeGateway(0).String()
	pgAddr := forward(t, net.JoinHostPort(gw, "0"), fixed(fmt.Sprintf("127.0.0.1:%d", pg.Port())))
	minioAddr := forward(t, net.JoinHostPort(gw, "0"), fixed(strings.TrimPrefix(minio.Endpoint, "http://")))
	podPGURL := strings.Replace(pgURL, fmt.Sprintf("127.0.0.1:%d", pg.Port()), pgAddr, 1)

	c := startControlPlane(t, dir)
	t.Logf("control plane up after %v", time.Since(began).Round(time.Second))
	c.images = []string{buildPause(t, dir), mustEnv(t, envImage)}
	for i := range 2 {
		c.addNode(i)
	}
	t.Logf("2 nodes Ready after %v", time.Since(began).Round(time.Second))
	// Uninstalled before the kubelets stop (cleanups run in reverse), so every sandbox is
	// torn down (network namespace, veth, mounts) by the kubelet itself.
	t.Cleanup(func() { c.teardownPods() })
	// Runs first: what the cluster looked like when the test failed.
	t.Cleanup(func() {
		if t.Failed() {
			c.diagnose()
		}
	})

	// Everything starts on node 0; node 1 takes the agents when node 0 is drained.
	c.kubectl("cordon", c.nodes[1].name)

	values := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(values, []byte(fmt.Sprintf(`image:
  repository: floe
  tag: dev
  pullPolicy: Never
metadata:
  url: %q
bucket:
  url: %q
  accessKeyId: %q
  secretAccessKey: %q
agent:
  replicas: 1
  shutdownGraceSeconds: 20
  resources:
    requests: {cpu: 100m, memory: 128Mi}
    limits: {memory: 512Mi}
compactor:
  resources:
    requests: {cpu: 50m, memory: 128Mi}
    limits: {memory: 512Mi}
autoscaling:
  enabled: false
`, podPGURL, fmt.Sprintf("s3://%s?endpoint=http://%s&region=us-east-1", bucket, minioAddr),
		minio.AccessKey, minio.SecretKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	step := time.Now()
	c.helm("install", release, "../helm/floe", "--namespace", namespace, "--create-namespace",
		"-f", values, "--wait", "--timeout", "5m")
	t.Logf("helm install --wait: %v", time.Since(step).Round(time.Second))

	// Clients bootstrap through the chart's Service, as they would in a cluster: with no
	// kube-proxy here, the test forwards 127.0.0.1:PORT to one of its ready endpoints (from
	// its EndpointSlices). Metadata then names each agent by pod IP, which the test reaches.
	bootstrap := forward(t, "127.0.0.1:0", c.serviceEndpoint(t, release, "kafka"))
	seeds := func() []string { return []string{bootstrap} }
	adm, err := kgo.NewClient(kgo.SeedBrokers(seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctxT(t), time.Minute)
	resp, err := kadm.NewClient(adm).CreateTopic(ctx, 6, 1, nil, topic)
	cancel()
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	l := startLoad(t, topic, seeds, 2)
	l.progress(500, 2*time.Minute)
	s, _ := l.stats()
	t.Logf("load running: %v", s)

	// Rolling restart: a new agent is ready before the old one gets SIGTERM (maxSurge 1,
	// maxUnavailable 0).
	step = time.Now()
	c.kubectl("-n", namespace, "rollout", "restart", "deploy/"+agentDep)
	c.kubectl("-n", namespace, "rollout", "status", "deploy/"+agentDep, "--timeout=5m")
	c.waitAgents(t, 1)
	t.Logf("rollout restart: %v", time.Since(step).Round(time.Second))
	l.progress(300, 2*time.Minute)

	for _, n := range []int{3, 1} {
		step = time.Now()
		c.kubectl("-n", namespace, "scale", "deploy/"+agentDep, "--replicas="+strconv.Itoa(n))
		c.kubectl("-n", namespace, "rollout", "status", "deploy/"+agentDep, "--timeout=5m")
		c.waitAgents(t, n)
		t.Logf("scale to %d: %v", n, time.Since(step).Round(time.Second))
		l.progress(300, 2*time.Minute)
	}

	// Drain node 0 with three agents on it: the PDB (maxUnavailable 1) lets the eviction of
	// one through at a time, each next one once a replacement is ready on node 1.
	c.kubectl("-n", namespace, "scale", "deploy/"+agentDep, "--replicas=3")
	c.kubectl("-n", namespace, "rollout", "status", "deploy/"+agentDep, "--timeout=5m")
	c.waitAgents(t, 3)
	c.kubectl("uncordon", c.nodes[1].name)
	step = time.Now()
	out := c.kubectlCombined("drain", c.nodes[0].name, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=10m")
	t.Logf("drain %s: %v", c.nodes[0].name, time.Since(step).Round(time.Second))
	// kubectl drain asks to evict all three at once; the PDB must refuse some of them.
	if n := strings.Count(out, "disruption budget"); n > 0 {
		t.Logf("drain: the PDB refused %d evictions while replacements started", n)
	} else {
		t.Errorf("drain: the PDB refused no eviction of three agents (maxUnavailable 1):\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "evicted") {
			t.Logf("drain: %s", line)
		}
	}
	c.kubectl("-n", namespace, "rollout", "status", "deploy/"+agentDep, "--timeout=5m")
	c.waitAgents(t, 3)
	if on := c.agentNodes(t); len(on) != 1 || on[c.nodes[1].name] != 3 {
		t.Fatalf("after the drain, agents run on %v, want all 3 on %s", on, c.nodes[1].name)
	}
	c.kubectl("uncordon", c.nodes[0].name)
	l.progress(300, 2*time.Minute)

	c.hpa(t, l, dir, seeds)

	step = time.Now()
	s = l.finish(3 * time.Minute)
	t.Logf("consumers finished %v after the producer stopped: %v", time.Since(step).Round(time.Second), s)
	read := l.verifyFromStart(3 * time.Minute)
	t.Logf("a fresh reader found every acknowledged record (%d records read); whole test %v",
		read, time.Since(began).Round(time.Second))
}

// hpa turns the chart's HorizontalPodAutoscaler on, fed by metrics-server with the real CPU
// the kubelets measure for the agents' containers. An agent's CPU here hardly depends on
// produced bytes (measured: 10-18m idle with the consumers polling, about 30m at 300 records/s
// of 100 bytes and at 1000/s of 32 KiB), so the load that scales out is requests: workers
// sending ApiVersions back to back. The CPU request is lowered to 20m and the target set to
// 200% (40m): one agent under that load is past it, two idle ones together below it, so the
// HPA scales the Deployment out under it and back in once it and the producer stop.
func (c *cluster) hpa(t *testing.T, l *load, dir string, seeds func() []string) {
	t.Helper()
	c.startMetricsServer(t, dir)
	c.kubectl("-n", namespace, "scale", "deploy/"+agentDep, "--replicas=1")
	c.waitAgents(t, 1)
	step := time.Now()
	c.helm("upgrade", release, "../helm/floe", "--namespace", namespace, "--reuse-values",
		"--set", "agent.resources.requests.cpu=20m",
		"--set", "autoscaling.enabled=true", "--set", "autoscaling.minReplicas=1", "--set", "autoscaling.maxReplicas=3",
		"--set", "autoscaling.targetCPUUtilizationPercentage=200",
		"--set", "autoscaling.scaleDownStabilizationSeconds=20", "--set", "autoscaling.scaleDownPeriodSeconds=15",
		"--wait", "--timeout", "5m")
	t.Logf("helm upgrade (HPA on, CPU request 20m) --wait: %v", time.Since(step).Round(time.Second))
	burnCtx, stopBurn := context.WithCancel(ctxT(t))
	burned := make(chan int64, 1)
	go func() {
		n, err := burn(burnCtx, seeds(), 4)
		if err != nil {
			t.Errorf("cpu load: %v", err)
		}
		burned <- n
	}()

	step = time.Now()
	waitFor(t, "HPA scales out", 5*time.Minute, 5*time.Second, func() error {
		n := c.hpaReplicas(t)
		c.logHPA(t, l)
		if n < 2 {
			return fmt.Errorf("%d replicas", n)
		}
		return nil
	})
	c.kubectl("-n", namespace, "rollout", "status", "deploy/"+agentDep, "--timeout=5m")
	t.Logf("HPA scaled out after %v", time.Since(step).Round(time.Second))
	c.logHPA(t, l)
	l.progress(300, 2*time.Minute)

	step = time.Now()
	stopBurn()
	t.Logf("cpu load: %d ApiVersions answered", <-burned)
	l.rate.Store(0)
	waitFor(t, "HPA scales in", 6*time.Minute, 5*time.Second, func() error {
		n := c.hpaReplicas(t)
		c.logHPA(t, l)
		if n != 1 {
			return fmt.Errorf("%d replicas", n)
		}
		return nil
	})
	c.kubectl("-n", namespace, "rollout", "status", "deploy/"+agentDep, "--timeout=5m")
	c.waitAgents(t, 1)
	t.Logf("HPA scaled in after %v", time.Since(step).Round(time.Second))
	c.logHPA(t, l)
	l.rate.Store(100)
	l.progress(100, 2*time.Minute)
}

func (c *cluster) hpaReplicas(t *testing.T) int {
	out, err := c.kubectlErr("-n", namespace, "get", "deploy", agentDep, "-o", "jsonpath={.spec.replicas}")
	if err != nil {
		t.Logf("%v", err)
		return 0
	}
	n, _ := strconv.Atoi(out)
	return n
}

// logHPA logs the HPA's view, the agents' CPU as metrics.k8s.io has it, and the load.
func (c *cluster) logHPA(t *testing.T, l *load) {
	out, err := c.kubectlErr("-n", namespace, "get", "hpa", agentDep, "--no-headers")
	if err != nil {
		out = err.Error()
	}
	top, _ := c.kubectlErr("-n", namespace, "top", "pods", "-l", "app.kubernetes.io/component=agent", "--no-headers")
	s, _ := l.stats()
	t.Logf("  hpa: %s | top: %s | acked %d", strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(top), " "), s.acked)
}

// startMetricsServer runs metrics-server as a process on the first bridge's gateway and
// registers it as the metrics.k8s.io APIService (a selector-less Service whose Endpoints
// name that address; the aggregator routes to endpoints, there is no kube-proxy).
func (c *cluster) startMetricsServer(t *testing.T, dir string) {
	t.Helper()
	bin := mustEnv(t, envMetricsServer)
	port := freePort(t)
	p := c.pki.path
	ms := start(t, dir, "metrics-server", bin, []string{
		"--bind-address=" + bridgeGateway(0).String(), fmt.Sprintf("--secure-port=%d", port),
		"--tls-cert-file=" + p("metrics-server.crt"), "--tls-private-key-file=" + p("metrics-server.key"),
		"--kubeconfig=" + c.kubeconfig, "--authentication-kubeconfig=" + c.kubeconfig, "--authorization-kubeconfig=" + c.kubeconfig,
		"--kubelet-insecure-tls", "--kubelet-preferred-address-types=InternalIP", "--kubelet-use-node-status-port",
		// It must exceed its 10 s kubelet request timeout.
		"--metric-resolution=15s",
	})
	ca, err := os.ReadFile(p("ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	c.apply(fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: metrics-server, namespace: kube-system}
spec:
  ports: [{name: https, port: 443, targetPort: %[1]d}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: metrics-server, namespace: kube-system}
subsets:
- addresses: [{ip: %[2]s}]
  ports: [{name: https, port: %[1]d}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  group: metrics.k8s.io
  version: v1beta1
  service: {name: metrics-server, namespace: kube-system, port: 443}
  caBundle: %[3]s
  groupPriorityMinimum: 100
  versionPriority: 100
`, port, bridgeGateway(0), base64.StdEncoding.EncodeToString(ca)))
	step := time.Now()
	waitFor(t, "metrics.k8s.io serves pod metrics", 3*time.Minute, 2*time.Second, func() error {
		if !ms.running() {
			t.Fatalf("metrics-server exited:\n%s", ms.tail(30))
		}
		out, err := c.kubectlErr("-n", namespace, "top", "pods", "--no-headers")
		if err != nil {
			return err
		}
		if !strings.Contains(out, "agent") {
			return fmt.Errorf("no agent in %q", out)
		}
		return nil
	})
	t.Logf("metrics-server serving after %v", time.Since(step).Round(time.Second))
}

// podList is what the test reads of `kubectl get pods -o json`.
type podList struct {
	Items []struct {
		Metadata struct {
			Name              string
			DeletionTimestamp *string
		}
		Spec struct {
			NodeName string
		}
		Status struct {
			Phase      string
			PodIP      string
			Conditions []struct{ Type, Status string }
		}
	}
}

func (c *cluster) agentPods(t *testing.T) podList {
	var pl podList
	if err := c.getJSON(&pl, "-n", namespace, "pods", "-l", "app.kubernetes.io/component=agent"); err != nil {
		t.Logf("%v", err)
	}
	return pl
}

// agentAddrs are the Kafka addresses of the ready agents (pod IP, port 9092).
func (c *cluster) agentAddrs(t *testing.T) []string {
	var addrs []string
	for _, p := range c.agentPods(t).Items {
		ready := false
		for _, cond := range p.Status.Conditions {
			if cond.Type == "Ready" && cond.Status == "True" {
				ready = true
			}
		}
		if ready && p.Metadata.DeletionTimestamp == nil && p.Status.PodIP != "" {
			addrs = append(addrs, net.JoinHostPort(p.Status.PodIP, "9092"))
		}
	}
	sort.Strings(addrs)
	return addrs
}

// waitAgents waits until exactly n agent pods exist and all are ready (terminating ones gone).
func (c *cluster) waitAgents(t *testing.T, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d agents", n), 3*time.Minute, time.Second, func() error {
		pods := len(c.agentPods(t).Items)
		ready := len(c.agentAddrs(t))
		if pods != n || ready != n {
			return fmt.Errorf("%d pods, %d ready", pods, ready)
		}
		return nil
	})
}

// agentNodes counts agent pods by node.
func (c *cluster) agentNodes(t *testing.T) map[string]int {
	on := map[string]int{}
	for _, p := range c.agentPods(t).Items {
		on[p.Spec.NodeName]++
	}
	return on
}

// teardownPods uninstalls the release and waits for its pods to be gone, so the kubelets
// stop every container and tear its sandbox down before they are stopped themselves.
func (c *cluster) teardownPods() {
	t := c.t
	// Not the namespace: with metrics.k8s.io registered, its deletion waits on discovery of
	// every API group. Deployments first, so no ReplicaSet makes new pods.
	for _, args := range [][]string{
		{"delete", "apiservice", "v1beta1.metrics.k8s.io", "--ignore-not-found", "--wait=false"},
		{"-n", namespace, "delete", "deployments,hpa", "--all", "--wait=true", "--timeout=1m"},
		{"-n", namespace, "delete", "pods", "--all", "--wait=true", "--timeout=1m"},
	} {
		if _, err := c.kubectlErr(args...); err != nil {
			t.Logf("teardown: %v", err)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		var pl podList
		if err := c.getJSON(&pl, "pods", "-A"); err != nil || len(pl.Items) == 0 {
			break
		}
		time.Sleep(time.Second)
	}
	// The kubelet stops a sandbox shortly after its pod is gone from the API.
	time.Sleep(5 * time.Second)
}

// diagnose logs the cluster's state and the ends of the agents' and components' logs.
func (c *cluster) diagnose() {
	t := c.t
	for _, args := range [][]string{
		{"get", "nodes,pods,hpa,pdb", "-A", "-o", "wide"},
		{"get", "events", "-A", "--sort-by=.lastTimestamp"},
	} {
		out, err := c.kubectlErr(args...)
		t.Logf("kubectl %s:\n%s%v", strings.Join(args, " "), out, err)
	}
	for _, n := range c.nodes {
		logs, _ := filepath.Glob(filepath.Join(n.dir, "pod-logs", "*", "*", "*.log"))
		for _, f := range logs {
			b, _ := os.ReadFile(f)
			// The AWS SDK's debug lines ("Response has no supported checksum") drown the rest.
			var lines []string
			sdk := 0
			for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
				if strings.Contains(line, " SDK ") {
					sdk++
					continue
				}
				lines = append(lines, line)
			}
			t.Logf("%s: %d AWS SDK debug lines left out", strings.TrimPrefix(f, c.dir), sdk)
			if len(lines) > 30 {
				lines = lines[len(lines)-30:]
			}
			t.Logf("%s:\n%s", strings.TrimPrefix(f, c.dir), strings.Join(lines, "\n"))
		}
		t.Logf("%s kubelet:\n%s", n.name, n.kubelet.tail(30))
		t.Logf("%s containerd:\n%s", n.name, n.ctrd.tail(15))
	}
	t.Logf("logs of every process in %s (FLOE_K8S_KEEP=1 keeps it)", c.dir)
}

func fixed(addr string) func() (string, error) { return func() (string, error) { return addr, nil } }

// serviceEndpoint returns a function giving a ready endpoint (IP:port of the named port) of
// the Service svc, refreshed from its EndpointSlices every second, rotating among them.
func (c *cluster) serviceEndpoint(t *testing.T, svc, portName string) func() (string, error) {
	var mu sync.Mutex
	var eps []string
	next := 0
	refresh := func() {
		var list struct {
			Items []struct {
				Endpoints []struct {
					Addresses  []string
					Conditions struct{ Ready *bool }
				}
				Ports []struct {
					Name string
					Port int
				}
			}
		}
		if err := c.getJSON(&list, "-n", namespace, "endpointslices", "-l", "kubernetes.io/service-name="+svc); err != nil {
			return
		}
		var got []string
		for _, sl := range list.Items {
			port := 0
			for _, p := range sl.Ports {
				if p.Name == portName {
					port = p.Port
				}
			}
			for _, ep := range sl.Endpoints {
				if port == 0 || len(ep.Addresses) == 0 || (ep.Conditions.Ready != nil && !*ep.Conditions.Ready) {
					continue
				}
				got = append(got, net.JoinHostPort(ep.Addresses[0], strconv.Itoa(port)))
			}
		}
		mu.Lock()
		eps = got
		mu.Unlock()
	}
	refresh()
	ctx := ctxT(t)
	go func() {
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
				refresh()
			}
		}
	}()
	return func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(eps) == 0 {
			return "", fmt.Errorf("service %s has no ready endpoint", svc)
		}
		next++
		return eps[next%len(eps)], nil
	}
}
