// Package deploy holds floe's image, Helm chart and compose file; its test
// renders the chart with the real helm CLI and decodes every manifest
// strictly into Kubernetes' own API types.
package deploy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// kubeVersion is the Kubernetes the chart is rendered for (the one the
// API types in go.mod describe); helm built from source assumes 1.20.
const kubeVersion = "1.37.2"

// helm returns the helm binary `make helm` builds (FLOE_HELM_BIN), or
// skips (fails under FLOE_REQUIRE_SERVERS=1).
func helm(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("FLOE_HELM_BIN")
	if bin == "" {
		if p, err := exec.LookPath("helm"); err == nil {
			return p
		}
		if os.Getenv("FLOE_REQUIRE_SERVERS") == "1" {
			t.Fatal("helm: FLOE_HELM_BIN not set (make helm builds it)")
		}
		t.Skip("helm: FLOE_HELM_BIN not set (make helm builds it)")
	}
	return bin
}

// rendered is the chart's output, by kind and name.
type rendered struct {
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	secrets     map[string]*corev1.Secret
	hpas        []*autoscalingv2.HorizontalPodAutoscaler
	pdbs        []*policyv1.PodDisruptionBudget
	others      []*unstructured.Unstructured
}

// render runs `helm template` with the given --set values and decodes
// each document strictly: unknown fields, duplicate keys and wrong types
// fail the test.
func render(t *testing.T, sets ...string) rendered {
	t.Helper()
	args := []string{"template", "floe", "helm/floe", "--namespace", "kafka", "--kube-version", kubeVersion,
		"--set", "metadata.url=postgres://floe:pw@pg:5432/floe", "--set", "bucket.url=s3://floe?endpoint=http://minio:9000"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	out, err := exec.Command(helm(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{appsv1.AddToScheme, corev1.AddToScheme, autoscalingv2.AddToScheme, policyv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	dec := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	r := rendered{deployments: map[string]*appsv1.Deployment{}, services: map[string]*corev1.Service{}, secrets: map[string]*corev1.Secret{}}
	for _, doc := range bytes.Split(out, []byte("\n---")) {
		var probe struct{ Kind string }
		if err := yaml.Unmarshal(doc, &probe); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, doc)
		}
		if probe.Kind == "" {
			continue
		}
		if probe.Kind == "ServiceMonitor" {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &u.Object); err != nil {
				t.Fatal(err)
			}
			r.others = append(r.others, u)
			continue
		}
		obj, _, err := dec.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("strict decode of a %s: %v\n%s", probe.Kind, err, doc)
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			r.deployments[o.Name] = o
		case *corev1.Service:
			r.services[o.Name] = o
		case *corev1.Secret:
			r.secrets[o.Name] = o
		case *autoscalingv2.HorizontalPodAutoscaler:
			r.hpas = append(r.hpas, o)
		case *policyv1.PodDisruptionBudget:
			r.pdbs = append(r.pdbs, o)
		default:
			t.Fatalf("unexpected %T", obj)
		}
	}
	return r
}

func selects(sel map[string]string, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

// port returns a container's port number by name or number.
func port(t *testing.T, c corev1.Container, p intstr.IntOrString) int32 {
	t.Helper()
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	t.Fatalf("container %s has no port %q", c.Name, p.StrVal)
	return 0
}

// flagValue returns the value of --name=V in args.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func TestChartDefaults(t *testing.T) {
	r := render(t)
	agent, comp := r.deployments["floe-agent"], r.deployments["floe-compactor"]
	if agent == nil || comp == nil {
		t.Fatalf("deployments: %v", r.deployments)
	}
	c := agent.Spec.Template.Spec.Containers[0]
	// Probes on the endpoints floe serves, on the ports it listens on.
	httpAddr, _ := flagValue(c.Args, "http-addr")
	kafkaAddr, _ := flagValue(c.Args, "kafka-addr")
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" ||
		fmt.Sprintf("0.0.0.0:%d", port(t, c, c.ReadinessProbe.HTTPGet.Port)) != httpAddr {
		t.Fatalf("readiness probe %+v, --http-addr %s", c.ReadinessProbe, httpAddr)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" ||
		fmt.Sprintf("0.0.0.0:%d", port(t, c, c.LivenessProbe.HTTPGet.Port)) != httpAddr {
		t.Fatalf("liveness probe %+v", c.LivenessProbe)
	}
	if kafkaAddr != "0.0.0.0:9092" {
		t.Fatalf("--kafka-addr %s", kafkaAddr)
	}
	// Each agent advertises its pod IP, from the downward API.
	if adv, _ := flagValue(c.Args, "advertise-addr"); adv != "$(POD_IP):9092" {
		t.Fatalf("--advertise-addr %q", adv)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if e := env["POD_IP"]; e.ValueFrom == nil || e.ValueFrom.FieldRef.FieldPath != "status.podIP" {
		t.Fatalf("POD_IP %+v", e)
	}
	if e := env["FLOE_NODE_ZONE"]; e.ValueFrom == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.labels['topology.kubernetes.io/zone']" {
		t.Fatalf("zone %+v", e)
	}
	if e := env["GOMEMLIMIT"]; e.ValueFrom == nil || e.ValueFrom.ResourceFieldRef.Resource != "limits.memory" {
		t.Fatalf("GOMEMLIMIT %+v", e)
	}
	if e := env["FLOE_METADATA"]; e.ValueFrom == nil || e.ValueFrom.SecretKeyRef.Name != "floe-metadata" || r.secrets["floe-metadata"] == nil {
		t.Fatalf("metadata from a secret: %+v, secrets %v", e, r.secrets)
	}
	if c.Resources.Limits.Memory().IsZero() || c.SecurityContext == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Fatalf("resources %+v, security %+v", c.Resources, c.SecurityContext)
	}
	if g := agent.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g != 45 {
		t.Fatalf("termination grace %v, want --shutdown-grace 30s + 15", g)
	}
	if !slices.ContainsFunc(agent.Spec.Template.Spec.TopologySpreadConstraints, func(c corev1.TopologySpreadConstraint) bool {
		return c.TopologyKey == "topology.kubernetes.io/zone" && selects(c.LabelSelector.MatchLabels, agent.Spec.Template.Labels)
	}) {
		t.Fatal("no zone spread of the agents")
	}
	// Services select the agent pods and reach their named ports.
	for _, name := range []string{"floe", "floe-agents"} {
		s := r.services[name]
		if s == nil || !selects(s.Spec.Selector, agent.Spec.Template.Labels) || selects(s.Spec.Selector, comp.Spec.Template.Labels) {
			t.Fatalf("service %s: %+v", name, s)
		}
		for _, p := range s.Spec.Ports {
			port(t, c, p.TargetPort)
		}
	}
	if r.services["floe-agents"].Spec.ClusterIP != "None" {
		t.Fatal("floe-agents is not headless")
	}
	// Autoscaling of the agent Deployment, scaling in slowly; the
	// Deployment leaves replicas to the HPA.
	if len(r.hpas) != 1 {
		t.Fatalf("%d HPAs", len(r.hpas))
	}
	h := r.hpas[0]
	if h.Spec.ScaleTargetRef.Kind != "Deployment" || h.Spec.ScaleTargetRef.Name != agent.Name || h.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU ||
		h.Spec.Behavior.ScaleDown.StabilizationWindowSeconds == nil || *h.Spec.Behavior.ScaleDown.StabilizationWindowSeconds < 300 || agent.Spec.Replicas != nil {
		t.Fatalf("HPA %+v, deployment replicas %v", h.Spec, agent.Spec.Replicas)
	}
	if len(r.pdbs) != 1 || !selects(r.pdbs[0].Spec.Selector.MatchLabels, agent.Spec.Template.Labels) || r.pdbs[0].Spec.MaxUnavailable.IntValue() != 1 {
		t.Fatalf("PDB %+v", r.pdbs)
	}
	cc := comp.Spec.Template.Spec.Containers[0]
	if cc.Args[0] != "compactor" || cc.ReadinessProbe.HTTPGet.Path != "/readyz" || port(t, cc, cc.ReadinessProbe.HTTPGet.Port) != 8081 {
		t.Fatalf("compactor %+v", cc)
	}
	if len(r.others) != 0 {
		t.Fatalf("a ServiceMonitor without serviceMonitor.enabled")
	}
}

func TestChartValues(t *testing.T) {
	r := render(t, "autoscaling.enabled=false", "agent.replicas=5", "podDisruptionBudget.enabled=false",
		"serviceMonitor.enabled=true", "agent.zoneFromNode=false", "bucket.accessKeyId=ak", "bucket.secretAccessKey=sk",
		"agent.kafkaPort=19092", "agent.shutdownGraceSeconds=60", "agent.extraArgs={--flush-interval=100ms}")
	agent := r.deployments["floe-agent"]
	if agent.Spec.Replicas == nil || *agent.Spec.Replicas != 5 || len(r.hpas) != 0 || len(r.pdbs) != 0 {
		t.Fatalf("replicas %v, %d HPAs, %d PDBs", agent.Spec.Replicas, len(r.hpas), len(r.pdbs))
	}
	c := agent.Spec.Template.Spec.Containers[0]
	if _, zone := flagValue(c.Args, "zone"); zone {
		t.Fatal("--zone without zoneFromNode")
	}
	if v, _ := flagValue(c.Args, "kafka-addr"); v != "0.0.0.0:19092" || port(t, c, r.services["floe"].Spec.Ports[0].TargetPort) != 19092 {
		t.Fatalf("kafka port: %s", v)
	}
	if v, _ := flagValue(c.Args, "shutdown-grace"); v != "60s" || *agent.Spec.Template.Spec.TerminationGracePeriodSeconds != 75 {
		t.Fatalf("shutdown grace %s", v)
	}
	if v, _ := flagValue(c.Args, "flush-interval"); v != "100ms" {
		t.Fatalf("extra args %v", c.Args)
	}
	if s := r.secrets["floe-bucket"]; s == nil || s.StringData["AWS_ACCESS_KEY_ID"] != "ak" {
		t.Fatalf("bucket secret %+v", s)
	}
	if len(r.others) != 1 || r.others[0].GetKind() != "ServiceMonitor" {
		t.Fatalf("ServiceMonitor: %v", r.others)
	}
}

// TestChartSchemaRegistry: every agent serves the schema registry on its
// own port (Confluent's 8081 by default), named schema-registry in the pod
// and in both Services; the compactor's 8081 is in pods of its own; port 0
// leaves only the /schema-registry/ mount on the HTTP port.
func TestChartSchemaRegistry(t *testing.T) {
	for _, tc := range []struct {
		set  string
		want int32 // 0: no listener of its own
	}{
		{"", 8081},
		{"agent.schemaRegistryPort=18081", 18081},
		{"agent.schemaRegistryPort=0", 0},
	} {
		var sets []string
		if tc.set != "" {
			sets = append(sets, tc.set)
		}
		r := render(t, sets...)
		agent, comp := r.deployments["floe-agent"], r.deployments["floe-compactor"]
		c := agent.Spec.Template.Spec.Containers[0]
		addr, ok := flagValue(c.Args, "schema-registry-addr")
		var container int32
		for _, p := range c.Ports {
			if p.Name == "schema-registry" {
				container = p.ContainerPort
			}
		}
		switch {
		case tc.want == 0 && (ok || container != 0):
			t.Fatalf("%s: --schema-registry-addr %q, container port %d", tc.set, addr, container)
		case tc.want != 0 && (addr != fmt.Sprintf("0.0.0.0:%d", tc.want) || container != tc.want):
			t.Fatalf("%s: --schema-registry-addr %q, container port %d, want %d", tc.set, addr, container, tc.want)
		}
		for _, name := range []string{"floe", "floe-agents"} {
			var svc *corev1.ServicePort
			for i, p := range r.services[name].Spec.Ports {
				if p.Name == "schema-registry" {
					svc = &r.services[name].Spec.Ports[i]
				}
			}
			switch {
			case tc.want == 0 && svc != nil:
				t.Fatalf("%s: service %s has a schema-registry port: %+v", tc.set, name, svc)
			case tc.want != 0 && (svc == nil || svc.Port != tc.want || port(t, c, svc.TargetPort) != tc.want):
				t.Fatalf("%s: service %s schema-registry port %+v, want %d", tc.set, name, svc, tc.want)
			}
		}
		// The compactor keeps 8081: a pod of its own, which no agent
		// Service selects.
		cc := comp.Spec.Template.Spec.Containers[0]
		if v, _ := flagValue(cc.Args, "http-addr"); v != "0.0.0.0:8081" {
			t.Fatalf("%s: compactor --http-addr %s", tc.set, v)
		}
		if _, ok := flagValue(cc.Args, "schema-registry-addr"); ok {
			t.Fatalf("%s: the compactor given a schema registry", tc.set)
		}
	}
}

// TestChartLint: helm lint finds nothing, and missing required values
// fail the render with their message.
func TestChartLint(t *testing.T) {
	out, err := exec.Command(helm(t), "lint", "--strict", "helm/floe", "--kube-version", kubeVersion,
		"--set", "metadata.url=postgres://x", "--set", "bucket.url=s3://b").CombinedOutput()
	if err != nil {
		t.Fatalf("helm lint: %v\n%s", err, out)
	}
	out, err = exec.Command(helm(t), "template", "floe", "helm/floe", "--kube-version", kubeVersion).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "is required") {
		t.Fatalf("render without stores: %v\n%s", err, out)
	}
}
