package deploy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// helm runs the helm pinned in deploy/tools/go.mod (built on first use,
// then taken from Go's build cache) with its config, cache and data in a
// temporary directory.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command("go", append([]string{"tool", "-modfile=deploy/tools/go.mod", "helm"}, args...)...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

const chart = "deploy/helm/chime"

// testValues are what an install must give: the chart has no default DSN
// or token.
var testValues = []string{"--set", "database.dsn=postgres://chime:pw@db:5432/chime,apiToken=s3cret"}

type envVar struct {
	Name      string `yaml:"name"`
	Value     string `yaml:"value"`
	ValueFrom struct {
		SecretKeyRef struct {
			Name string `yaml:"name"`
			Key  string `yaml:"key"`
		} `yaml:"secretKeyRef"`
	} `yaml:"valueFrom"`
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

type container struct {
	Name           string   `yaml:"name"`
	Args           []string `yaml:"args"`
	Env            []envVar `yaml:"env"`
	ReadinessProbe *probe   `yaml:"readinessProbe"`
	LivenessProbe  *probe   `yaml:"livenessProbe"`
	Ports          []struct {
		Name string `yaml:"name"`
	} `yaml:"ports"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
	} `yaml:"resources"`
}

// manifest is the union of the fields this test reads from any kind.
type manifest struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name        string            `yaml:"name"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
	StringData map[string]string `yaml:"stringData"`
	Spec       struct {
		Selector       yaml.Node `yaml:"selector"`
		MaxUnavailable *int      `yaml:"maxUnavailable"`
		Ports          []struct {
			Name       string `yaml:"name"`
			TargetPort string `yaml:"targetPort"`
		} `yaml:"ports"`
		Endpoints []struct {
			Port string `yaml:"port"`
			Path string `yaml:"path"`
		} `yaml:"endpoints"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec struct {
				TerminationGracePeriodSeconds *int64      `yaml:"terminationGracePeriodSeconds"`
				Containers                    []container `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// matchLabels reads a selector: a Service's is a plain map, the others'
// are under matchLabels.
func (m manifest) matchLabels(t *testing.T) map[string]string {
	t.Helper()
	var sel struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	}
	require.NoError(t, m.Spec.Selector.Decode(&sel))
	if sel.MatchLabels != nil {
		return sel.MatchLabels
	}
	var plain map[string]string
	require.NoError(t, m.Spec.Selector.Decode(&plain))
	return plain
}

// render runs helm template and parses every YAML document it prints,
// by kind.
func render(t *testing.T, args ...string) map[string][]manifest {
	t.Helper()
	out, err := helm(t, append([]string{"template", "rel", chart}, args...)...)
	require.NoError(t, err, "helm template: %s", out)
	byKind := map[string][]manifest{}
	dec := yaml.NewDecoder(bytes.NewReader([]byte(out)))
	for {
		var m manifest
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "rendered YAML:\n%s", out)
		if m.Kind == "" {
			continue // an empty document
		}
		byKind[m.Kind] = append(byKind[m.Kind], m)
	}
	return byKind
}

func one(t *testing.T, byKind map[string][]manifest, kind string) manifest {
	t.Helper()
	require.Len(t, byKind[kind], 1, kind)
	return byKind[kind][0]
}

func env(t *testing.T, c container, name string) envVar {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == name {
			return e
		}
	}
	require.Failf(t, "no env variable", "%s in container %s", name, c.Name)
	return envVar{}
}

// requireSecretRefs: the DSN and the token come from the named Secret,
// never from a literal value in the pod spec.
func requireSecretRefs(t *testing.T, c container, secret string) {
	t.Helper()
	for name, key := range map[string]string{"CHIME_DATABASE_DSN": "dsn", "CHIME_API_TOKEN": "token"} {
		e := env(t, c, name)
		require.Empty(t, e.Value, name)
		require.Equal(t, secret, e.ValueFrom.SecretKeyRef.Name, name)
		require.Equal(t, key, e.ValueFrom.SecretKeyRef.Key, name)
	}
}

// TestHelmChart runs helm lint and helm template on the chart (helm from
// deploy/tools/go.mod) and checks the rendered manifests: the probes, the
// Secret references, the stop grace against chime's default shutdown_grace,
// the PodDisruptionBudget, the Service and the optional ServiceMonitor.
func TestHelmChart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds helm on first use (minutes)")
	}

	for _, extra := range [][]string{nil, {"--set", "serviceMonitor.enabled=true,migrateJob.enabled=false"}} {
		out, err := helm(t, append(append([]string{"lint", "--strict", chart}, testValues...), extra...)...)
		require.NoError(t, err, "helm lint: %s", out)
		require.Contains(t, out, "0 chart(s) failed")
	}
	// Without a DSN the chart refuses to render instead of starting nodes
	// that cannot reach a database.
	out, err := helm(t, "template", "rel", chart, "--set", "apiToken=x")
	require.Error(t, err)
	require.Contains(t, out, "database.dsn is required")

	grace := defaultGrace(t)
	byKind := render(t, testValues...)

	dep := one(t, byKind, "Deployment")
	pod := dep.Spec.Template.Spec
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	require.NotNil(t, c.ReadinessProbe, "readinessProbe")
	require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	require.NotNil(t, c.LivenessProbe, "livenessProbe")
	require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	require.Len(t, c.Ports, 1)
	require.Equal(t, c.Ports[0].Name, c.ReadinessProbe.HTTPGet.Port)
	require.Equal(t, c.Ports[0].Name, c.LivenessProbe.HTTPGet.Port)
	require.NotEmpty(t, c.Resources.Requests["cpu"])
	require.NotEmpty(t, c.Resources.Requests["memory"])
	require.Equal(t, []string{"serve", "--no-migrate"}, c.Args, "the migrate Job migrates, not the nodes")

	secret := one(t, byKind, "Secret")
	require.Equal(t, "postgres://chime:pw@db:5432/chime", secret.StringData["dsn"])
	require.Equal(t, "s3cret", secret.StringData["token"])
	requireSecretRefs(t, c, secret.Metadata.Name)
	job := one(t, byKind, "Job")
	require.Equal(t, "pre-install,pre-upgrade", job.Metadata.Annotations["helm.sh/hook"])
	require.Len(t, job.Spec.Template.Spec.Containers, 1)
	require.Equal(t, []string{"migrate"}, job.Spec.Template.Spec.Containers[0].Args)
	requireSecretRefs(t, job.Spec.Template.Spec.Containers[0], secret.Metadata.Name)
	// Helm creates pre-install hooks before the release's other resources:
	// the Job's pod would wait for a Secret that does not exist yet, and
	// the install would fail, unless the Secret is a hook of the same
	// events with a lower weight.
	require.Equal(t, job.Metadata.Annotations["helm.sh/hook"], secret.Metadata.Annotations["helm.sh/hook"], "the Secret is created with the migrate Job's hook")
	secretWeight, err := strconv.Atoi(secret.Metadata.Annotations["helm.sh/hook-weight"])
	require.NoError(t, err, "the Secret's hook weight")
	jobWeight, err := strconv.Atoi(job.Metadata.Annotations["helm.sh/hook-weight"])
	require.NoError(t, err, "the Job's hook weight")
	require.Less(t, secretWeight, jobWeight, "the Secret before the Job")
	require.NotContains(t, secret.Metadata.Annotations["helm.sh/hook-delete-policy"], "hook-succeeded", "the nodes need the Secret after the hook")

	// Kubernetes sends SIGTERM, waits terminationGracePeriodSeconds, then
	// kills: it must cover the grace chime is told (CHIME_SHUTDOWN_GRACE)
	// plus the 10 s chime adds for its jobs' process groups, and the grace
	// chime is told is at least its own default.
	require.NotNil(t, pod.TerminationGracePeriodSeconds, "terminationGracePeriodSeconds")
	termination := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	told, err := time.ParseDuration(env(t, c, "CHIME_SHUTDOWN_GRACE").Value)
	require.NoError(t, err)
	require.GreaterOrEqual(t, told, grace, "the chart's shutdownGraceSeconds is below chime's default shutdown_grace")
	require.GreaterOrEqual(t, termination, grace+10*time.Second)
	require.Greater(t, termination, told+10*time.Second)

	pdb := one(t, byKind, "PodDisruptionBudget")
	require.Equal(t, dep.Spec.Template.Metadata.Labels, pdb.matchLabels(t))
	require.NotNil(t, pdb.Spec.MaxUnavailable)
	require.Equal(t, 1, *pdb.Spec.MaxUnavailable)
	svc := one(t, byKind, "Service")
	require.Equal(t, dep.Spec.Template.Metadata.Labels, svc.matchLabels(t))
	require.Equal(t, c.Ports[0].Name, svc.Spec.Ports[0].TargetPort)
	require.Empty(t, byKind["ServiceMonitor"], "the ServiceMonitor is off by default (its CRD may be missing)")

	// A longer grace moves the pod's grace period with it.
	byKind = render(t, append(testValues, "--set", "shutdownGraceSeconds=300")...)
	pod = one(t, byKind, "Deployment").Spec.Template.Spec
	require.Equal(t, "300s", env(t, pod.Containers[0], "CHIME_SHUTDOWN_GRACE").Value)
	require.Greater(t, *pod.TerminationGracePeriodSeconds, int64(310))

	// Without the Job the Secret is an ordinary resource of the release,
	// which helm uninstall deletes.
	byKind = render(t, append(testValues, "--set", "migrateJob.enabled=false")...)
	require.Empty(t, one(t, byKind, "Secret").Metadata.Annotations["helm.sh/hook"])

	// An existing Secret: none rendered, the references name it.
	byKind = render(t, "--set", "existingSecret=chime-prod,serviceMonitor.enabled=true,migrateJob.enabled=false")
	require.Empty(t, byKind["Secret"])
	require.Empty(t, byKind["Job"])
	dep = one(t, byKind, "Deployment")
	requireSecretRefs(t, dep.Spec.Template.Spec.Containers[0], "chime-prod")
	require.Equal(t, []string{"serve"}, dep.Spec.Template.Spec.Containers[0].Args, "without the Job the nodes migrate")
	sm := one(t, byKind, "ServiceMonitor")
	svc = one(t, byKind, "Service")
	for k, v := range sm.matchLabels(t) {
		require.Equal(t, v, svc.Metadata.Labels[k], "the ServiceMonitor selects the Service by %s", k)
	}
	require.Len(t, sm.Spec.Endpoints, 1)
	require.Equal(t, svc.Spec.Ports[0].Name, sm.Spec.Endpoints[0].Port, "a ServiceMonitor names the Service's port")
	require.Equal(t, "/metrics", sm.Spec.Endpoints[0].Path)
}
