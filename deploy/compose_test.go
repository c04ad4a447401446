package deploy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// compose is the part of a compose file the checks read. Anchors and merge keys (`<<`) are
// resolved by the YAML decoder as compose resolves them; ${VAR} interpolation is not done, so
// values are checked as written.
type compose struct {
	dir      string              // the compose file's directory: build contexts are relative to it
	Services map[string]*service `yaml:"services"`
	Volumes  map[string]any      `yaml:"volumes"`
}

// service is one compose service.
type service struct {
	Image       string       `yaml:"image"`
	Build       *build       `yaml:"build"`
	Entrypoint  words        `yaml:"entrypoint"`
	Command     words        `yaml:"command"`
	Environment environment  `yaml:"environment"`
	Healthcheck *healthcheck `yaml:"healthcheck"`
	DependsOn   dependsOn    `yaml:"depends_on"`
	Deploy      struct {
		Replicas *int `yaml:"replicas"`
	} `yaml:"deploy"`
	Scale    *int     `yaml:"scale"`
	Restart  string   `yaml:"restart"`
	Profiles []string `yaml:"profiles"`
	Volumes  mounts   `yaml:"volumes"`
	Hostname string   `yaml:"hostname"`
}

// replicas is how many containers `up` starts for the service.
func (s *service) replicas() int {
	switch {
	case s.Deploy.Replicas != nil:
		return *s.Deploy.Replicas
	case s.Scale != nil:
		return *s.Scale
	}
	return 1
}

// onDemand reports whether the service belongs to a profile, so that a plain `up` does not
// start it (a tool run with `docker compose run`).
func (s *service) onDemand() bool { return len(s.Profiles) > 0 }

// build is a service's build section: a context alone, or a context and a Dockerfile.
type build struct {
	Context    string `yaml:"context"`
	Dockerfile string `yaml:"dockerfile"`
}

func (b *build) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		b.Context = n.Value
		return nil
	}
	type plain build
	return n.Decode((*plain)(b))
}

// dockerfile returns the path of the Dockerfile the service is built from.
func (b *build) dockerfile(composeDir string) string {
	ctx := b.Context
	if ctx == "" {
		ctx = "."
	}
	df := b.Dockerfile
	if df == "" {
		df = "Dockerfile"
	}
	return filepath.Clean(filepath.Join(composeDir, ctx, df))
}

// words is a command line written as a list or as one string.
type words []string

func (w *words) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*w = strings.Fields(n.Value)
		return nil
	}
	var l []string
	if err := n.Decode(&l); err != nil {
		return err
	}
	*w = l
	return nil
}

// environment maps variable names to values; nil means "taken from the host as it is".
type environment map[string]*string

func (e *environment) UnmarshalYAML(n *yaml.Node) error {
	out := environment{}
	if n.Kind == yaml.SequenceNode {
		var l []string
		if err := n.Decode(&l); err != nil {
			return err
		}
		for _, kv := range l {
			k, v, ok := strings.Cut(kv, "=")
			if ok {
				out[k] = &v
			} else {
				out[k] = nil
			}
		}
		*e = out
		return nil
	}
	var m map[string]*string
	if err := n.Decode(&m); err != nil {
		return err
	}
	for k, v := range m {
		out[k] = v
	}
	*e = out
	return nil
}

// healthcheck is a service's healthcheck.
type healthcheck struct {
	Test    words `yaml:"test"`
	Disable bool  `yaml:"disable"`
}

// command returns the program and arguments the healthcheck runs ("CMD-SHELL" lines split on
// blanks), or nil when there is none.
func (h *healthcheck) command() []string {
	if h == nil || h.Disable || len(h.Test) == 0 {
		return nil
	}
	switch h.Test[0] {
	case "NONE":
		return nil
	case "CMD":
		return h.Test[1:]
	case "CMD-SHELL":
		return strings.Fields(strings.Join(h.Test[1:], " "))
	}
	return h.Test // the string form: a shell command
}

// dependsOn maps the services a service waits for to the condition it waits on.
type dependsOn map[string]string

func (d *dependsOn) UnmarshalYAML(n *yaml.Node) error {
	out := dependsOn{}
	if n.Kind == yaml.SequenceNode {
		var l []string
		if err := n.Decode(&l); err != nil {
			return err
		}
		for _, s := range l {
			out[s] = "service_started"
		}
		*d = out
		return nil
	}
	var m map[string]struct {
		Condition string `yaml:"condition"`
	}
	if err := n.Decode(&m); err != nil {
		return err
	}
	for s, c := range m {
		if c.Condition == "" {
			c.Condition = "service_started"
		}
		out[s] = c.Condition
	}
	*d = out
	return nil
}

// mount is one entry of a service's volumes.
type mount struct{ source, target string }

// mounts is a service's volumes, short ("src:dst[:mode]") or long syntax.
type mounts []mount

func (m *mounts) UnmarshalYAML(n *yaml.Node) error {
	var out mounts
	for _, item := range n.Content {
		if item.Kind == yaml.ScalarNode {
			parts := strings.Split(item.Value, ":")
			switch len(parts) {
			case 1:
				out = append(out, mount{target: parts[0]})
			default:
				out = append(out, mount{source: parts[0], target: parts[1]})
			}
			continue
		}
		var long struct {
			Source string `yaml:"source"`
			Target string `yaml:"target"`
		}
		if err := item.Decode(&long); err != nil {
			return err
		}
		out = append(out, mount{source: long.Source, target: long.Target})
	}
	*m = out
	return nil
}

// loadCompose reads and decodes a compose file.
func loadCompose(path string) (*compose, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c := &compose{}
	if err := yaml.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	abs, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	c.dir = abs
	for name, s := range c.Services {
		if s == nil {
			return nil, fmt.Errorf("%s: service %q is empty", path, name)
		}
	}
	return c, nil
}
