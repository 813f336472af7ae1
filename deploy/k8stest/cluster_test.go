//go:build k8s

package k8stest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Environment the Makefile sets (k8s-test): where the tools and the image are.
const (
	envKubeDir       = "FLOE_K8S_BIN_DIR"        // kube-apiserver, kube-controller-manager, kube-scheduler, kubelet
	envEtcd          = "FLOE_ETCD_BIN"           // etcd
	envMetricsServer = "FLOE_METRICS_SERVER_BIN" // metrics-server
	envImage         = "FLOE_K8S_IMAGE_TAR"      // `docker save floe:dev`
	envHelm          = "FLOE_HELM_BIN"           // helm
	envKubectl       = "FLOE_KUBECTL_BIN"        // kubectl (default: the one on PATH)
)

func mustEnv(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Skipf("%s not set: run `make k8s-test`", name)
	}
	if _, err := os.Stat(v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// cluster is a control plane and its nodes, all processes of this test.
type cluster struct {
	t          *testing.T
	dir        string
	pki        *pki
	kubeconfig string
	apiPort    int
	nodes      []*node
	kubectlBin string
	helmBin    string
	kubeDir    string
	token      string
	images     []string // image tars every node imports
}

// node is one kubelet with a containerd of its own and a bridge (index i).
type node struct {
	name    string
	i       int
	dir     string
	socket  string
	port    int
	kubelet *proc
	ctrd    *proc
}

// startControlPlane starts etcd, kube-apiserver, kube-controller-manager and kube-scheduler.
func startControlPlane(t *testing.T, dir string) *cluster {
	t.Helper()
	c := &cluster{t: t, dir: dir, kubeDir: mustEnv(t, envKubeDir), helmBin: mustEnv(t, envHelm)}
	c.kubectlBin = os.Getenv(envKubectl)
	if c.kubectlBin == "" {
		p, err := exec.LookPath("kubectl")
		if err != nil {
			t.Skip("kubectl not found (set FLOE_KUBECTL_BIN)")
		}
		c.kubectlBin = p
	}
	etcdBin := mustEnv(t, envEtcd)
	c.pki = newPKI(t, filepath.Join(dir, "pki"), []net.IP{net.IPv4(127, 0, 0, 1), bridgeGateway(0), net.IPv4(10, 96, 0, 1)})
	tok := make([]byte, 16)
	_, _ = rand.Read(tok)
	c.token = hex.EncodeToString(tok)
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(c.token+",admin,admin,system:masters\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	clientPort, peerPort := freePort(t), freePort(t)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	etcd := start(t, dir, "etcd", etcdBin, []string{
		"--name=default", "--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL, "--unsafe-no-fsync", "--log-level=warn",
	})
	waitFor(t, "etcd healthy", time.Minute, 200*time.Millisecond, func() error {
		if !etcd.running() {
			t.Fatalf("etcd exited:\n%s", etcd.tail(30))
		}
		resp, err := http.Get(etcdURL + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})

	c.apiPort = freePort(t)
	p := c.pki.path
	api := start(t, dir, "kube-apiserver", filepath.Join(c.kubeDir, "kube-apiserver"), []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", c.apiPort),
		// It refuses a loopback advertise address; the first bridge's gateway is local.
		"--advertise-address=" + bridgeGateway(0).String(), "--endpoint-reconciler-type=none",
		"--tls-cert-file=" + p("apiserver.crt"), "--tls-private-key-file=" + p("apiserver.key"),
		"--client-ca-file=" + p("ca.crt"), "--token-auth-file=" + tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + p("sa.pub"), "--service-account-signing-key-file=" + p("sa.key"),
		"--service-cluster-ip-range=" + serviceNet,
		// The aggregator (metrics.k8s.io) calls metrics-server at its endpoint, not through a
		// ClusterIP (there is no kube-proxy), with the front-proxy client certificate.
		"--enable-aggregator-routing=true",
		"--requestheader-client-ca-file=" + p("ca.crt"), "--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + p("front-proxy-client.crt"), "--proxy-client-key-file=" + p("front-proxy-client.key"),
		"--cert-dir=" + filepath.Join(dir, "apiserver"),
		"--allow-privileged=true",
		"--v=1",
	})
	c.kubeconfig = c.writeKubeconfig("admin.kubeconfig")
	waitFor(t, "kube-apiserver ready", 2*time.Minute, 500*time.Millisecond, func() error {
		if !api.running() {
			t.Fatalf("kube-apiserver exited:\n%s", api.tail(40))
		}
		_, err := c.kubectlErr("get", "--raw", "/readyz")
		return err
	})

	start(t, dir, "kube-controller-manager", filepath.Join(c.kubeDir, "kube-controller-manager"), []string{
		"--kubeconfig=" + c.kubeconfig,
		"--authentication-kubeconfig=" + c.kubeconfig, "--authorization-kubeconfig=" + c.kubeconfig,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", freePort(t)),
		"--service-account-private-key-file=" + p("sa.key"), "--root-ca-file=" + p("ca.crt"),
		"--use-service-account-credentials=false", "--leader-elect=false",
		"--cert-dir=" + filepath.Join(dir, "controller-manager"),
		// HPA decisions every 5 s (15 s by default), so the test's scale steps are quick.
		"--horizontal-pod-autoscaler-sync-period=5s",
		"--v=1",
	})
	start(t, dir, "kube-scheduler", filepath.Join(c.kubeDir, "kube-scheduler"), []string{
		"--kubeconfig=" + c.kubeconfig,
		"--authentication-kubeconfig=" + c.kubeconfig, "--authorization-kubeconfig=" + c.kubeconfig,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", freePort(t)),
		"--leader-elect=false", "--v=1",
	})
	// The controller-manager makes each namespace's default ServiceAccount, which pods need.
	waitFor(t, "default service account", 2*time.Minute, time.Second, func() error {
		_, err := c.kubectlErr("-n", "default", "get", "serviceaccount", "default")
		return err
	})
	return c
}

// writeKubeconfig writes a kubeconfig of the admin token to name in the cluster's dir.
func (c *cluster) writeKubeconfig(name string) string {
	path := filepath.Join(c.dir, name)
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: floe
  cluster:
    server: https://127.0.0.1:%d
    certificate-authority: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: floe
  context: {cluster: floe, user: admin}
current-context: floe
`, c.apiPort, c.pki.path("ca.crt"), c.token)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		c.t.Fatal(err)
	}
	return path
}

func (c *cluster) kubectlErr(args ...string) (string, error) {
	cmd := exec.Command(c.kubectlBin, append([]string{"--kubeconfig=" + c.kubeconfig}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()+out.String()))
	}
	return out.String(), nil
}

// kubectlCombined is kubectl with stderr and stdout together (drain reports refused
// evictions on stderr).
func (c *cluster) kubectlCombined(args ...string) string {
	c.t.Helper()
	out, err := exec.Command(c.kubectlBin, append([]string{"--kubeconfig=" + c.kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (c *cluster) kubectl(args ...string) string {
	c.t.Helper()
	out, err := c.kubectlErr(args...)
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

// apply applies a manifest given as text.
func (c *cluster) apply(manifest string) {
	c.t.Helper()
	cmd := exec.Command(c.kubectlBin, "--kubeconfig="+c.kubeconfig, "apply", "--server-side", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	if out, err := cmd.CombinedOutput(); err != nil {
		c.t.Fatalf("kubectl apply: %v\n%s\n%s", err, out, manifest)
	}
}

func (c *cluster) helm(args ...string) string {
	c.t.Helper()
	cmd := exec.Command(c.helmBin, append([]string{"--kubeconfig=" + c.kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// getJSON decodes `kubectl get ... -o json` into v.
func (c *cluster) getJSON(v any, args ...string) error {
	out, err := c.kubectlErr(append(append([]string{"get"}, args...), "-o", "json")...)
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(out), v)
}

// addNode starts node i: a containerd of its own on bridge i, the images imported into
// it, and a kubelet registering as floe-node-i. The bridge exists (hostNet).
func (c *cluster) addNode(i int) *node {
	t := c.t
	t.Helper()
	n := &node{name: fmt.Sprintf("floe-node-%d", i), i: i, dir: filepath.Join(c.dir, fmt.Sprintf("node%d", i))}
	for _, d := range []string{"cni", "containerd", "kubelet", "pod-logs", "ipam"} {
		if err := os.MkdirAll(filepath.Join(n.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	n.socket = filepath.Join(n.dir, "containerd", "containerd.sock")
	cni := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "floe-%d",
  "plugins": [{
    "type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "dataDir": %q,
             "ranges": [[{"subnet": %q, "gateway": %q}]],
             "routes": [{"dst": "0.0.0.0/0"}]}
  }]
}`, i, bridgeName(i), filepath.Join(n.dir, "ipam"), bridgeSubnet(i), bridgeGateway(i))
	if err := os.WriteFile(filepath.Join(n.dir, "cni", "10-floe.conflist"), []byte(cni), 0o644); err != nil {
		t.Fatal(err)
	}
	// restrict_oom_score_adj: without it every sandbox fails here ("can't get final child's
	// PID from pipe: EOF"): the test's container may not lower oom_score_adj.
	ctrdCfg := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = %q
[ttrpc]
  address = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "docker.io/library/floe-pause:dev"
  restrict_oom_score_adj = true
  enable_selinux = false
  # Pods' network namespaces under the state dir (not /var/run/netns): the test removes all.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %q
`, filepath.Join(n.dir, "containerd", "root"), filepath.Join(n.dir, "containerd", "state"),
		n.socket, n.socket+".ttrpc", filepath.Join(n.dir, "cni"), filepath.Join(n.dir, "containerd", "runc"))
	ctrdPath := filepath.Join(n.dir, "containerd", "config.toml")
	if err := os.WriteFile(ctrdPath, []byte(ctrdCfg), 0o644); err != nil {
		t.Fatal(err)
	}
	n.ctrd = start(t, c.dir, n.name+"-containerd", "containerd", []string{"--config", ctrdPath})
	// Runs after the kubelet stops, before containerd does: a shim alive then runs a container
	// the kubelet did not stop (shims outlive containerd by design).
	t.Cleanup(func() { killShims(t, n.socket) })
	waitFor(t, n.name+" containerd", time.Minute, 200*time.Millisecond, func() error {
		if !n.ctrd.running() {
			t.Fatalf("containerd exited:\n%s", n.ctrd.tail(30))
		}
		return exec.Command("ctr", "--address", n.socket, "version").Run()
	})
	for _, img := range c.images {
		if out, err := exec.Command("ctr", "--address", n.socket, "-n", "k8s.io", "images", "import", img).CombinedOutput(); err != nil {
			t.Fatalf("ctr images import %s: %v\n%s", img, err, out)
		}
	}

	resolv := filepath.Join(n.dir, "resolv.conf")
	// Pods resolve nothing: no DNS server is reachable, and none may be asked off the machine.
	if err := os.WriteFile(resolv, []byte("nameserver 127.0.0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n.port = freePort(t)
	kcfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
cgroupDriver: cgroupfs
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization:
  mode: AlwaysAllow
containerRuntimeEndpoint: unix://%s
podLogsDir: %s
resolvConf: %s
failSwapOn: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%%
  imagefs.available: 1%%
  nodefs.inodesFree: 1%%
`, bridgeGateway(i), n.port, freePort(t), n.socket, filepath.Join(n.dir, "pod-logs"), resolv)
	kcfgPath := filepath.Join(n.dir, "kubelet", "config.yaml")
	if err := os.WriteFile(kcfgPath, []byte(kcfg), 0o644); err != nil {
		t.Fatal(err)
	}
	n.kubelet = start(t, c.dir, n.name+"-kubelet", filepath.Join(c.kubeDir, "kubelet"), []string{
		"--config=" + kcfgPath, "--kubeconfig=" + c.kubeconfig,
		"--root-dir=" + filepath.Join(n.dir, "kubelet"), "--cert-dir=" + filepath.Join(n.dir, "kubelet", "pki"),
		"--hostname-override=" + n.name, "--node-ip=" + bridgeGateway(i).String(),
		"--v=1",
	})
	waitFor(t, n.name+" Ready", 2*time.Minute, time.Second, func() error {
		if !n.kubelet.running() {
			t.Fatalf("kubelet exited:\n%s", n.kubelet.tail(40))
		}
		out, err := c.kubectlErr("get", "node", n.name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if err != nil {
			return err
		}
		if out != "True" {
			return fmt.Errorf("Ready=%q", out)
		}
		return nil
	})
	c.nodes = append(c.nodes, n)
	return n
}

// buildPause builds the pause command into a FROM-scratch image tar (docker save format).
func buildPause(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "pause")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./pause")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build pause: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	tarPath := filepath.Join(dir, "pause.tar")
	if err := writeImageTar(tarPath, "floe-pause:dev", "/pause", data); err != nil {
		t.Fatal(err)
	}
	return tarPath
}
