// Command manifests checks the Kubernetes manifests of deploy/kubernetes/ without a
// cluster: every document is decoded strictly into the Kubernetes API type its apiVersion
// and kind name (k8s.io/api; an unknown or misspelt field, a value of the wrong type or a
// repeated key is an error), and the references between the documents of one file are
// followed: the Deployment's selector and its Pod's labels, the Service's selector and
// target ports, the probes' ports, the Secrets and ConfigMaps the Pod uses. For every
// container that runs `idem serve --config PATH`, the config it would read (PATH in a
// ConfigMap volume) and the environment it would get (values and Secret keys) are written
// to -extract DIR as NAME.yaml and NAME.env, for `idem check --strict`.
//
// Usage: manifests [-extract DIR] FILE.yaml...
// Exit 0 when every file holds, 1 naming each problem otherwise.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The objects of one file, by kind.
type manifest struct {
	file        string
	configMaps  map[string]*corev1.ConfigMap
	secrets     map[string]*corev1.Secret
	services    []*corev1.Service
	deployments []*appsv1.Deployment
	budgets     []*policyv1.PodDisruptionBudget
}

type checker struct {
	problems []string
}

func (c *checker) fail(format string, args ...interface{}) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// decode reads every document of `file` into its API type, strictly.
func (c *checker) decode(file string) *manifest {
	m := &manifest{file: file, configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	f, err := os.Open(file)
	if err != nil {
		c.fail("%s: %v", file, err)
		return m
	}
	defer f.Close()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for n := 1; ; n++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			c.fail("%s: document %d: %v", file, n, err)
			return m
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			c.fail("%s: document %d: %v", file, n, err)
			continue
		}
		where := fmt.Sprintf("%s: document %d (%s %s)", file, n, tm.APIVersion, tm.Kind)
		var obj interface{}
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 ConfigMap":
			obj = &corev1.ConfigMap{}
		case "v1 Secret":
			obj = &corev1.Secret{}
		case "v1 Service":
			obj = &corev1.Service{}
		case "apps/v1 Deployment":
			obj = &appsv1.Deployment{}
		case "policy/v1 PodDisruptionBudget":
			obj = &policyv1.PodDisruptionBudget{}
		default:
			c.fail("%s: not a kind this checker knows", where)
			continue
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			c.fail("%s: %v", where, err)
			continue
		}
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			m.configMaps[o.Name] = o
		case *corev1.Secret:
			m.secrets[o.Name] = o
		case *corev1.Service:
			m.services = append(m.services, o)
		case *appsv1.Deployment:
			m.deployments = append(m.deployments, o)
		case *policyv1.PodDisruptionBudget:
			m.budgets = append(m.budgets, o)
		}
	}
	return m
}

func stripComments(doc []byte) []byte {
	var out bytes.Buffer
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			out.WriteString(line + "\n")
		}
	}
	return out.Bytes()
}

func (m *manifest) secretValue(name, key string) (string, bool) {
	s, ok := m.secrets[name]
	if !ok {
		return "", false
	}
	if v, ok := s.StringData[key]; ok {
		return v, true
	}
	v, ok := s.Data[key]
	return string(v), ok
}

func hasPort(c *corev1.Container, port intstr.IntOrString) bool {
	for _, p := range c.Ports {
		if (port.Type == intstr.String && p.Name == port.StrVal) ||
			(port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
			return true
		}
	}
	return false
}

func (c *checker) probe(where, what string, ctr *corev1.Container, p *corev1.Probe) {
	if p == nil {
		c.fail("%s: container %s has no %s", where, ctr.Name, what)
		return
	}
	if p.HTTPGet != nil && !hasPort(ctr, p.HTTPGet.Port) {
		c.fail("%s: container %s: %s: no port %s in the container", where, ctr.Name, what, p.HTTPGet.Port.String())
	}
}

// configPath is PATH of `serve ... --config PATH` in the container's command and args.
func configPath(ctr *corev1.Container) (string, bool) {
	argv := append(append([]string{}, ctr.Command...), ctr.Args...)
	serve := false
	for i, a := range argv {
		if a == "serve" {
			serve = true
		}
		if serve && a == "--config" && i+1 < len(argv) {
			return argv[i+1], true
		}
		if serve && strings.HasPrefix(a, "--config=") {
			return strings.TrimPrefix(a, "--config="), true
		}
	}
	return "", false
}

func (c *checker) deployment(m *manifest, d *appsv1.Deployment, extract string) {
	where := fmt.Sprintf("%s: Deployment %s", m.file, d.Name)
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || d.Spec.Selector == nil {
		c.fail("%s: selector: %v", where, err)
		return
	}
	if !selector.Matches(labels.Set(d.Spec.Template.Labels)) {
		c.fail("%s: the selector does not select the Pod template's labels", where)
	}
	pod := &d.Spec.Template.Spec
	volumes := map[string]*corev1.Volume{}
	for i := range pod.Volumes {
		volumes[pod.Volumes[i].Name] = &pod.Volumes[i]
		if cm := pod.Volumes[i].ConfigMap; cm != nil {
			if _, ok := m.configMaps[cm.Name]; !ok {
				c.fail("%s: volume %s: no ConfigMap %s in the file", where, pod.Volumes[i].Name, cm.Name)
			}
		}
	}
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		c.fail("%s: the Pod does not say runAsNonRoot: true", where)
	}
	for i := range pod.Containers {
		ctr := &pod.Containers[i]
		if ctr.Image == "" {
			c.fail("%s: container %s has no image", where, ctr.Name)
		}
		if ctr.Resources.Requests == nil || ctr.Resources.Limits == nil {
			c.fail("%s: container %s: resources need requests and limits", where, ctr.Name)
		}
		for _, vm := range ctr.VolumeMounts {
			if _, ok := volumes[vm.Name]; !ok {
				c.fail("%s: container %s mounts %s, which is not a volume of the Pod", where, ctr.Name, vm.Name)
			}
		}
		env := map[string]string{}
		for _, e := range ctr.Env {
			switch {
			case e.ValueFrom == nil:
				env[e.Name] = e.Value
			case e.ValueFrom.SecretKeyRef != nil:
				ref := e.ValueFrom.SecretKeyRef
				v, ok := m.secretValue(ref.Name, ref.Key)
				if !ok {
					c.fail("%s: container %s: env %s: no key %s in a Secret %s of the file", where, ctr.Name, e.Name, ref.Key, ref.Name)
				}
				env[e.Name] = v
			}
		}
		path, isIdem := configPath(ctr)
		if !isIdem {
			continue
		}
		// What a Pod of idem must have (deploy/kubernetes/README.md).
		c.probe(where, "livenessProbe", ctr, ctr.LivenessProbe)
		c.probe(where, "readinessProbe", ctr, ctr.ReadinessProbe)
		if p := ctr.LivenessProbe; p != nil && (p.HTTPGet == nil || p.HTTPGet.Path != "/healthz") {
			c.fail("%s: container %s: livenessProbe must GET /healthz", where, ctr.Name)
		}
		if p := ctr.ReadinessProbe; p != nil && (p.HTTPGet == nil || p.HTTPGet.Path != "/readyz") {
			c.fail("%s: container %s: readinessProbe must GET /readyz", where, ctr.Name)
		}
		if ctr.Lifecycle == nil || ctr.Lifecycle.PreStop == nil {
			c.fail("%s: container %s has no preStop", where, ctr.Name)
		}
		if sc := ctr.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			c.fail("%s: container %s: securityContext needs readOnlyRootFilesystem: true and allowPrivilegeEscalation: false", where, ctr.Name)
		}
		config, ok := c.mountedFile(m, pod, ctr, path)
		if !ok {
			c.fail("%s: container %s: --config %s is not a key of a ConfigMap mounted in the container", where, ctr.Name, path)
			continue
		}
		if extract != "" {
			name := strings.TrimSuffix(filepath.Base(m.file), filepath.Ext(m.file)) + "-" + d.Name + "-" + ctr.Name
			c.write(filepath.Join(extract, name+".yaml"), config)
			var lines []string
			for k, v := range env {
				if strings.ContainsAny(v, "\n\x00") {
					c.fail("%s: container %s: env %s holds a line break", where, ctr.Name, k)
				}
				lines = append(lines, k+"="+v)
			}
			sort.Strings(lines)
			c.write(filepath.Join(extract, name+".env"), strings.Join(lines, "\n")+"\n")
		}
	}
}

// mountedFile is the content of `path` as the container sees it through a ConfigMap volume.
func (c *checker) mountedFile(m *manifest, pod *corev1.PodSpec, ctr *corev1.Container, path string) (string, bool) {
	for _, vm := range ctr.VolumeMounts {
		dir := strings.TrimSuffix(vm.MountPath, "/") + "/"
		if !strings.HasPrefix(path, dir) {
			continue
		}
		key := strings.TrimPrefix(path, dir)
		if vm.SubPath != "" {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name != vm.Name || v.ConfigMap == nil {
				continue
			}
			cm, ok := m.configMaps[v.ConfigMap.Name]
			if !ok {
				return "", false
			}
			if len(v.ConfigMap.Items) > 0 {
				for _, it := range v.ConfigMap.Items {
					if it.Path == key {
						data, ok := cm.Data[it.Key]
						return data, ok
					}
				}
				return "", false
			}
			data, ok := cm.Data[key]
			return data, ok
		}
	}
	return "", false
}

func (c *checker) write(path, text string) {
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		c.fail("%v", err)
	}
}

func (c *checker) service(m *manifest, s *corev1.Service) {
	where := fmt.Sprintf("%s: Service %s", m.file, s.Name)
	selector := labels.SelectorFromSet(s.Spec.Selector)
	for _, d := range m.deployments {
		if len(s.Spec.Selector) == 0 || !selector.Matches(labels.Set(d.Spec.Template.Labels)) {
			continue
		}
		for _, p := range s.Spec.Ports {
			found := false
			for i := range d.Spec.Template.Spec.Containers {
				target := p.TargetPort
				if target.Type == intstr.Int && target.IntVal == 0 {
					target = intstr.FromInt(int(p.Port))
				}
				found = found || hasPort(&d.Spec.Template.Spec.Containers[i], target)
			}
			if !found {
				c.fail("%s: port %s: no container port %s in Deployment %s", where, p.Name, p.TargetPort.String(), d.Name)
			}
		}
		return
	}
	c.fail("%s: selects no Pod of a Deployment in the file", where)
}

func (c *checker) budget(m *manifest, b *policyv1.PodDisruptionBudget) {
	selector, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
	if err == nil {
		for _, d := range m.deployments {
			if selector.Matches(labels.Set(d.Spec.Template.Labels)) {
				return
			}
		}
	}
	c.fail("%s: PodDisruptionBudget %s selects no Pod of a Deployment in the file", m.file, b.Name)
}

func main() {
	extract := flag.String("extract", "", "write each idem container's config and environment to this directory")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: manifests [-extract DIR] FILE.yaml...")
		os.Exit(2)
	}
	c := &checker{}
	for _, file := range flag.Args() {
		m := c.decode(file)
		if len(m.deployments) == 0 {
			c.fail("%s: no Deployment", file)
		}
		for _, d := range m.deployments {
			c.deployment(m, d, *extract)
		}
		for _, s := range m.services {
			c.service(m, s)
		}
		for _, b := range m.budgets {
			c.budget(m, b)
		}
	}
	for _, p := range c.problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(c.problems) > 0 {
		os.Exit(1)
	}
	fmt.Printf("%d files: every document decoded strictly into its Kubernetes API type\n", flag.NArg())
}
