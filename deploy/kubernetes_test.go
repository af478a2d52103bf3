package deploy

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/artifact-registry/artifact-registry/internal/config"
	"github.com/artifact-registry/artifact-registry/internal/httpserver"
)

// The manifests are validated against the Kubernetes API's own Go types
// (k8s.io/api), decoded strictly: an unknown or misspelt field, a
// duplicate field or a value of the wrong type fails, as the API server
// would refuse it. The JSON schemas that schema validators such as
// kubeconform read are published outside the package registries this
// project's machines reach (no npm or Go package found there ships them
// for the core API), so the Go types, which the API server's own schema is generated
// from, are the schema here. Strict decoding does not check required
// fields or value ranges; the checks below cover the ones that matter
// for these manifests. On top of that the test checks what the API server cannot
// know: every setting names a real flag of serve, probes hit real
// endpoints, secrets come from Secrets, selectors select the instances.

const manifestDir = "kubernetes"

// secretEnv must come from a Secret (secretKeyRef), never a literal value
// or a ConfigMap.
var secretEnv = map[string]bool{
	"DATABASE_URL":                             true,
	"ARTIFACT_REGISTRY_ADMIN_TOKEN":            true,
	"ARTIFACT_REGISTRY_ROOT_KEY_URL":           true,
	"ARTIFACT_REGISTRY_PREVIOUS_ROOT_KEY_URLS": true,
	"ARTIFACT_REGISTRY_LEGACY_PASSWORD":        true,
	"AWS_ACCESS_KEY_ID":                        true,
	"AWS_SECRET_ACCESS_KEY":                    true,
}

// objectStoreEnv are read by the object-store drivers (gocloud.dev/blob's
// S3 driver through the AWS SDK), not by serve's flags.
var objectStoreEnv = map[string]bool{"AWS_ACCESS_KEY_ID": true, "AWS_SECRET_ACCESS_KEY": true}

func TestKubernetesManifests(t *testing.T) {
	files := readManifests(t)
	ms, errs := validate(files)
	for _, err := range errs {
		t.Error(err)
	}
	var kinds []string
	for _, m := range ms {
		kinds = append(kinds, m.kind)
	}
	sort.Strings(kinds)
	want := []string{"ConfigMap", "Deployment", "HorizontalPodAutoscaler", "Job", "PodDisruptionBudget", "Service"}
	if !slices.Equal(kinds, want) {
		t.Errorf("manifests hold %v, want %v", kinds, want)
	}
}

// TestKubernetesManifestsRejectInvalid breaks the manifests one way at a
// time and expects validate to say so: a validator that passes
// everything would otherwise go unnoticed.
func TestKubernetesManifestsRejectInvalid(t *testing.T) {
	files := readManifests(t)
	cases := []struct {
		name, file, old, new, want string
	}{
		{"misspelt field", "deployment.yaml", "  replicas: 3", "  replica: 3", `unknown field "replica"`},
		{"wrong type", "deployment.yaml", "periodSeconds: 5", "periodSeconds: five", "periodSeconds"},
		{"bad quantity", "deployment.yaml", "memory: 512Mi", "memory: lots", "quantities must match"},
		{"unknown kind version", "pdb.yaml", "policy/v1", "policy/v1beta9", "no Go type"},
		{"unknown setting", "configmap.yaml", "ARTIFACT_REGISTRY_LOG_LEVEL:", "ARTIFACT_REGISTRY_LOGLEVEL:", "not an environment variable of serve"},
		{"invalid setting", "configmap.yaml", `ARTIFACT_REGISTRY_LOG_FORMAT: "json"`, `ARTIFACT_REGISTRY_LOG_FORMAT: "xml"`, "--log-format"},
		{"secret in config map", "configmap.yaml", "\ndata:\n", "\ndata:\n  ARTIFACT_REGISTRY_ADMIN_TOKEN: x\n", "must come from a Secret"},
		{"literal secret", "migrate-job.yaml", "- name: DATABASE_URL\n              valueFrom:\n                secretKeyRef:\n                  name: artifact-registry\n                  key: database-url",
			"- name: DATABASE_URL\n              value: postgres://db/registry", "must come from a Secret"},
		{"probe on a missing endpoint", "deployment.yaml", "path: /-/ready", "path: /readyz", "/readyz"},
		{"probe on a missing port", "deployment.yaml", "port: http\n            periodSeconds: 10", "port: web\n            periodSeconds: 10", `port "web"`},
		{"writable root", "deployment.yaml", "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "readOnlyRootFilesystem"},
		{"root user", "migrate-job.yaml", "runAsNonRoot: true", "runAsNonRoot: false", "runAsNonRoot"},
		{"service selects nothing", "service.yaml", "app.kubernetes.io/component: server", "app.kubernetes.io/component: web", "selects no Deployment"},
		{"unknown command", "migrate-job.yaml", `args: ["migrate", "up"]`, `args: ["migrate", "down"]`, "not a command"},
		{"spool not mounted", "configmap.yaml", `"/var/spool/artifact-registry"`, `"/var/cache/spool"`, "/var/cache/spool"},
		{"autoscaler target missing", "hpa.yaml", "    name: artifact-registry\n  minReplicas", "    name: registry\n  minReplicas", "scales no Deployment"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(files[c.file], c.old) {
				t.Fatalf("%s does not contain %q: update the case", c.file, c.old)
			}
			broken := maps.Clone(files)
			broken[c.file] = strings.Replace(files[c.file], c.old, c.new, 1)
			_, errs := validate(broken)
			for _, err := range errs {
				if strings.Contains(err.Error(), c.want) {
					return
				}
			}
			t.Errorf("validate did not reject it with %q; errors: %v", c.want, errs)
		})
	}
}

func readManifests(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(manifestDir, "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no manifests under %s (%v)", manifestDir, err)
	}
	files := map[string]string{}
	for _, p := range paths {
		files[filepath.Base(p)] = readFile(t, p)
	}
	return files
}

// manifest is one decoded object.
type manifest struct {
	file, kind string
	obj        any
}

// newObject returns the Go type of an apiVersion and kind.
func newObject(apiVersion, kind string) any {
	switch apiVersion + " " + kind {
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}
	case "v1 Service":
		return &corev1.Service{}
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}
	case "batch/v1 Job":
		return &batchv1.Job{}
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "autoscaling/v2 HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}
	}
	return nil
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// validate decodes every document of files strictly and checks the set.
func validate(files map[string]string) ([]manifest, []error) {
	var ms []manifest
	var errs []error
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, file := range names {
		for _, doc := range docSeparator.Split(files[file], -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			m, err := decode(file, []byte(doc))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			ms = append(ms, m)
		}
	}
	return ms, append(errs, checkSet(ms)...)
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func decode(file string, doc []byte) (manifest, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return manifest{}, fmt.Errorf("%s: %w", file, err)
	}
	obj := newObject(tm.APIVersion, tm.Kind)
	if obj == nil {
		return manifest{}, fmt.Errorf("%s: %s %s: no Go type known for it (a Secret never belongs here)", file, tm.APIVersion, tm.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return manifest{}, fmt.Errorf("%s: %s: %w", file, tm.Kind, err)
	}
	meta := obj.(metav1.ObjectMetaAccessor).GetObjectMeta()
	if meta.GetName() == "" {
		return manifest{}, fmt.Errorf("%s: %s has no metadata.name", file, tm.Kind)
	}
	return manifest{file: file, kind: tm.Kind, obj: obj}, nil
}

// checkSet checks what strict decoding cannot: references between the
// objects and the registry's own flags and endpoints.
func checkSet(ms []manifest) []error {
	var errs []error
	configMaps := map[string]*corev1.ConfigMap{}
	deployments := map[string]*appsv1.Deployment{}
	for _, m := range ms {
		switch o := m.obj.(type) {
		case *corev1.ConfigMap:
			configMaps[o.Name] = o
		case *appsv1.Deployment:
			deployments[o.Name] = o
		}
	}
	known, err := serveEnv()
	if err != nil {
		return []error{err}
	}
	for _, cm := range configMaps {
		errs = append(errs, checkConfigMap(cm, known)...)
	}
	for _, m := range ms {
		switch o := m.obj.(type) {
		case *appsv1.Deployment:
			if !selects(o.Spec.Selector.MatchLabels, o.Spec.Template.Labels) {
				errs = append(errs, fmt.Errorf("%s: the Deployment's selector does not select its own pods", m.file))
			}
			errs = append(errs, checkPod(m.file, &o.Spec.Template.Spec, configMaps, known, true)...)
		case *batchv1.Job:
			errs = append(errs, checkPod(m.file, &o.Spec.Template.Spec, configMaps, known, false)...)
		case *corev1.Service:
			errs = append(errs, checkService(m.file, o, deployments)...)
		case *policyv1.PodDisruptionBudget:
			if o.Spec.Selector == nil || !selectsAny(o.Spec.Selector.MatchLabels, deployments) {
				errs = append(errs, fmt.Errorf("%s: the PodDisruptionBudget selects no Deployment's pods", m.file))
			}
		case *autoscalingv2.HorizontalPodAutoscaler:
			ref := o.Spec.ScaleTargetRef
			if ref.Kind != "Deployment" || deployments[ref.Name] == nil {
				errs = append(errs, fmt.Errorf("%s: the autoscaler scales no Deployment of these manifests (%s %s)", m.file, ref.Kind, ref.Name))
			}
		}
	}
	return errs
}

// serveEnv lists the environment variables serve reads, from the flags
// config.Config registers ("(env NAME)" in each usage).
func serveEnv() (map[string]bool, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var cfg config.Config
	cfg.Register(fs)
	re := regexp.MustCompile(`\(env ([A-Z0-9_]+)\)`)
	known := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		if m := re.FindStringSubmatch(f.Usage); m != nil {
			known[m[1]] = true
		}
	})
	if !known["DATABASE_URL"] || !known["ARTIFACT_REGISTRY_LISTEN"] {
		return nil, errors.New("config.Config.Register no longer names its environment variables as (env NAME): update serveEnv")
	}
	for k := range objectStoreEnv {
		known[k] = true
	}
	return known, nil
}

// checkConfigMap checks each key names a setting and the values pass
// serve's own validation (config.Config.Finish).
func checkConfigMap(cm *corev1.ConfigMap, known map[string]bool) []error {
	var errs []error
	for k := range cm.Data {
		switch {
		case !known[k]:
			errs = append(errs, fmt.Errorf("ConfigMap %s: %s is not an environment variable of serve", cm.Name, k))
		case secretEnv[k]:
			errs = append(errs, fmt.Errorf("ConfigMap %s: %s must come from a Secret", cm.Name, k))
		}
	}
	if err := finishWithEnv(cm.Data); err != nil {
		errs = append(errs, fmt.Errorf("ConfigMap %s: serve refuses these settings: %w", cm.Name, err))
	}
	return errs
}

// finishWithEnv parses serve's flags with env as the environment (and a
// database URL, which the Secret provides) and runs Finish. Register
// reads the process environment, so it is set for the call and restored.
func finishWithEnv(env map[string]string) error {
	env = maps.Clone(env)
	env["DATABASE_URL"] = "postgres://db.invalid/registry"
	restore := map[string]*string{}
	for k, v := range env {
		if old, ok := os.LookupEnv(k); ok {
			restore[k] = &old
		} else {
			restore[k] = nil
		}
		os.Setenv(k, v)
	}
	defer func() {
		for k, v := range restore {
			if v == nil {
				os.Unsetenv(k)
			} else {
				os.Setenv(k, *v)
			}
		}
	}()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var cfg config.Config
	cfg.Register(fs)
	if err := fs.Parse(nil); err != nil {
		return err
	}
	return cfg.Finish()
}

// commands are the argument lists the binary's main accepts that these
// manifests may run.
var commands = [][]string{{"serve"}, {"migrate", "up"}}

func checkPod(file string, spec *corev1.PodSpec, configMaps map[string]*corev1.ConfigMap, known map[string]bool, server bool) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(file+": "+format, args...)) }
	sc := spec.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		bad("the pod must set runAsNonRoot and a non-zero runAsUser")
	}
	if len(spec.Containers) == 0 {
		bad("no containers")
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		if c.Image == "" {
			bad("container %s has no image", c.Name)
		}
		if !slices.ContainsFunc(commands, func(cmd []string) bool { return slices.Equal(cmd, c.Args) }) {
			bad("container %s: %q is not a command of artifact-registry these manifests run (%v)", c.Name, c.Args, commands)
		}
		if server != slices.Equal(c.Args, []string{"serve"}) {
			bad("container %s: a Deployment runs serve, a Job does not", c.Name)
		}
		errs = append(errs, checkContainerSecurity(file, c)...)
		errs = append(errs, checkEnv(file, c, configMaps, known)...)
		if server {
			errs = append(errs, checkProbes(file, c)...)
			errs = append(errs, checkWritableDirs(file, c, configMaps)...)
		}
	}
	return errs
}

func checkContainerSecurity(file string, c *corev1.Container) []error {
	var errs []error
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		errs = append(errs, fmt.Errorf("%s: container %s must set readOnlyRootFilesystem", file, c.Name))
	}
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		errs = append(errs, fmt.Errorf("%s: container %s must drop all capabilities and privilege escalation", file, c.Name))
	}
	if len(c.Resources.Requests) == 0 || c.Resources.Limits.Memory().IsZero() {
		errs = append(errs, fmt.Errorf("%s: container %s needs resource requests and a memory limit", file, c.Name))
	}
	return errs
}

func checkEnv(file string, c *corev1.Container, configMaps map[string]*corev1.ConfigMap, known map[string]bool) []error {
	var errs []error
	for _, e := range c.Env {
		if !known[e.Name] {
			errs = append(errs, fmt.Errorf("%s: %s is not an environment variable of serve", file, e.Name))
		}
		if secretEnv[e.Name] && (e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
			errs = append(errs, fmt.Errorf("%s: %s must come from a Secret (secretKeyRef), not a literal", file, e.Name))
		}
	}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef != nil && configMaps[from.ConfigMapRef.Name] == nil {
			errs = append(errs, fmt.Errorf("%s: envFrom names ConfigMap %s, which these manifests lack", file, from.ConfigMapRef.Name))
		}
	}
	return errs
}

// checkProbes requires both probes, on a declared port, and checks their
// paths against the real HTTP server: liveness answers 200 while the
// database is down, readiness answers 503 then and 200 otherwise.
func checkProbes(file string, c *corev1.Container) []error {
	var errs []error
	probes := map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe}
	for _, kind := range []string{"liveness", "readiness", "startup"} {
		p := probes[kind]
		if p == nil {
			if kind != "startup" {
				errs = append(errs, fmt.Errorf("%s: container %s has no %s probe", file, c.Name, kind))
			}
			continue
		}
		if p.HTTPGet == nil {
			errs = append(errs, fmt.Errorf("%s: the %s probe is not an HTTP GET", file, kind))
			continue
		}
		if !hasPort(c, p.HTTPGet.Port) {
			errs = append(errs, fmt.Errorf("%s: the %s probe's port %q is not a port of container %s", file, kind, p.HTTPGet.Port.String(), c.Name))
		}
		down := probeStatus(p.HTTPGet.Path, errors.New("database unreachable"))
		up := probeStatus(p.HTTPGet.Path, nil)
		switch {
		case up != http.StatusOK:
			errs = append(errs, fmt.Errorf("%s: the %s probe's path %s answers %d on a ready server", file, kind, p.HTTPGet.Path, up))
		case kind == "readiness" && down == http.StatusOK:
			errs = append(errs, fmt.Errorf("%s: the readiness probe's path %s answers 200 with the database down", file, p.HTTPGet.Path))
		case kind != "readiness" && down != http.StatusOK:
			errs = append(errs, fmt.Errorf("%s: the %s probe's path %s fails with the database down: a restart would not help", file, kind, p.HTTPGet.Path))
		}
	}
	return errs
}

// probeStatus asks the registry's HTTP server (the one serve runs, with
// its readiness function failing with ready) for path.
func probeStatus(path string, ready error) int {
	srv := httpserver.New(httpserver.Options{Logger: slog.New(slog.DiscardHandler), Ready: func(context.Context) error { return ready }})
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code
}

func hasPort(c *corev1.Container, port intstr.IntOrString) bool {
	return slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool {
		if port.Type == intstr.String {
			return p.Name == port.StrVal
		}
		return p.ContainerPort == port.IntVal
	})
}

// checkWritableDirs: with a read-only root file system, every directory
// serve writes to must be a volume: /tmp and the spool directory.
func checkWritableDirs(file string, c *corev1.Container, configMaps map[string]*corev1.ConfigMap) []error {
	dirs := []string{"/tmp"}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil || configMaps[from.ConfigMapRef.Name] == nil {
			continue
		}
		if d := configMaps[from.ConfigMapRef.Name].Data["ARTIFACT_REGISTRY_REMOTE_SPOOL_DIR"]; d != "" {
			dirs = append(dirs, d)
		}
	}
	var errs []error
	for _, d := range dirs {
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == d && !m.ReadOnly }) {
			errs = append(errs, fmt.Errorf("%s: container %s writes to %s but mounts no writable volume there", file, c.Name, d))
		}
	}
	return errs
}

func checkService(file string, s *corev1.Service, deployments map[string]*appsv1.Deployment) []error {
	var errs []error
	var target *appsv1.Deployment
	for _, d := range deployments {
		if selects(s.Spec.Selector, d.Spec.Template.Labels) {
			target = d
		}
	}
	if target == nil {
		return []error{fmt.Errorf("%s: the Service selects no Deployment's pods", file)}
	}
	for _, p := range s.Spec.Ports {
		c := &target.Spec.Template.Spec.Containers[0]
		if !hasPort(c, p.TargetPort) {
			errs = append(errs, fmt.Errorf("%s: the Service's targetPort %q is not a port of the Deployment", file, p.TargetPort.String()))
		}
	}
	return errs
}

// selects reports whether a non-empty selector matches labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func selectsAny(selector map[string]string, deployments map[string]*appsv1.Deployment) bool {
	for _, d := range deployments {
		if selects(selector, d.Spec.Template.Labels) {
			return true
		}
	}
	return false
}
