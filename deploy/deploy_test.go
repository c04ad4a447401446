package deploy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// No container engine runs where the tests do, so the Dockerfile and the compose file are
// checked statically: their structure, and every AGENTMEM_ variable and flag against the flags
// the binaries built from cmd/ print with -h.

func TestMain(m *testing.M) {
	code := m.Run()
	if toolsDir != "" {
		_ = os.RemoveAll(toolsDir)
	}
	os.Exit(code)
}

// report fails t with each problem.
func report(t *testing.T, problems []string) {
	t.Helper()
	for _, p := range problems {
		t.Error(p)
	}
}

func TestDockerfile(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	commands, err := commandDirs(root)
	if err != nil {
		t.Fatal(err)
	}
	goVer, err := goVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	d, err := loadDockerfile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	report(t, checkDockerfile(d, commands, goVer))
}

func TestCompose(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	commands, err := commandDirs(root)
	if err != nil {
		t.Fatal(err)
	}
	dep := loadDeployment(t, "docker-compose.yml", "Dockerfile", commands, nil, nil)
	if len(dep.agentmemServices()) == 0 {
		t.Fatal("no service is built from deploy/Dockerfile (build: {context: .., dockerfile: deploy/Dockerfile})")
	}
	dep.flags = binaryFlags(t, composeCommands(t))
	if dep.natsFlags, err = dep.flags("nats-server"); err != nil {
		t.Fatal(err)
	}
	t.Run("cluster", func(t *testing.T) { report(t, checkCluster(dep)) })
	for _, name := range dep.agentmemServices() {
		t.Run(name, func(t *testing.T) { report(t, checkService(dep, name)) })
	}
	t.Run("workers", func(t *testing.T) { report(t, checkWorkers(dep)) })
}

// composeCommands lists the commands of cmd/ that the compose file's services run: the ones
// builtTools builds (once per test run, so every test asks for the same list).
func composeCommands(t *testing.T) []string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	commands, err := commandDirs(root)
	if err != nil {
		t.Fatal(err)
	}
	c, err := loadCompose(filepath.Join(root, "deploy", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var run []string
	for _, s := range c.Services {
		if b := binary(s); slices.Contains(commands, b) && !slices.Contains(run, b) {
			run = append(run, b)
		}
	}
	slices.Sort(run)
	return run
}

// TestChecksCatchMistakes runs the checks on files with known mistakes, against a fixed flag
// table, and wants each mistake reported by name.
func TestChecksCatchMistakes(t *testing.T) {
	set := func(bin string, flags ...string) *flagSet {
		fs := &flagSet{bin: bin, flags: map[string]bool{}}
		for _, f := range flags {
			fs.flags[f] = true
		}
		return fs
	}
	common := []string{"nats", "replicas", "prefix", "partitions", "health-listen", "log-format"}
	memctl := set("memctl", "nats", "prefix", "tenant", "context")
	memctl.sub = map[string]map[string]bool{"search": {"nats": true, "prefix": true, "tenant": true, "context": true}}
	table := map[string]*flagSet{
		"ingest":     set("ingest", common...),
		"compressor": set("compressor", append(common, "concurrency", "llm-api-key", "llm-model")...),
		"memctl":     memctl,
	}
	flags := func(bin string) (*flagSet, error) {
		if fs, ok := table[bin]; ok {
			return fs, nil
		}
		return nil, fmt.Errorf("no binary %q", bin)
	}
	natsFlags := set("nats-server", "name", "n", "cluster_name", "cluster", "routes", "jetstream", "js", "store_dir", "sd", "http_port", "m")
	commands := []string{"compressor", "extractor", "ingest", "memctl"}

	dir := filepath.Join("testdata", "bad")
	dep := loadDeployment(t, filepath.Join(dir, "docker-compose.yml"), filepath.Join(dir, "Dockerfile"), commands, flags, natsFlags)
	got := checkDockerfile(dep.dockerfile, commands, "1.26.0")
	got = append(got, checkCluster(dep)...)
	for _, name := range dep.agentmemServices() {
		got = append(got, checkService(dep, name)...)
	}
	got = append(got, checkWorkers(dep)...)

	for _, want := range []string{
		"Dockerfile: FROM golang:1.25 is not a Go 1.26 image",
		"Dockerfile: FROM gcr.io/distroless/static is not pinned",
		"Dockerfile: go build without CGO_ENABLED=0",
		"Dockerfile: go build without -trimpath",
		"Dockerfile: cmd/extractor is a command the image does not build: add ./cmd/extractor",
		"Dockerfile: go build names ./cmd/ghost, which is not a command directory",
		"Dockerfile: the final stage has no USER",
		`service "n1": image nats:latest is not pinned`,
		`service "n2": nats-server has no option -store-dir`,
		`service "n2": no --store_dir`,
		`service "n3": image nats:2.10-alpine is older than NATS 2.11`,
		`service "n3": no route to n1: add nats://n1:6222 to --routes`,
		`service "n2": volume "n2-data" is not declared`,
		`service "ingest": AGENTMEM_LLM_MODEL is not a flag of ingest`,
		`service "ingest": FOO is not an AGENTMEM_ variable`,
		`service "ingest": AGENTMEM_NATS "nats://n1:4222" does not list NATS node n2`,
		`service "ingest": does not wait for NATS node n1 to be healthy`,
		`service "ingest": does not wait for NATS node n3 to be healthy`,
		`service "ingest": AGENTMEM_REPLICAS is "1": on a 3-node cluster`,
		`service "ingest": no health endpoint: set AGENTMEM_HEALTH_LISTEN`,
		`service "retriever": entrypoint "/usr/local/bin/searcher" is not a binary the Dockerfile builds`,
		`service "compressor": compressor has no flag -batch`,
		`service "compressor": AGENTMEM_LLM_API_KEY is a secret written into the compose file`,
		`service "compressor": the healthcheck runs wget, which the runtime image gcr.io/distroless/static does not have`,
		`service "memctl": memctl search has no flag -bogus`,
		"workers: no service runs retriever",
		"workers: no service runs extractor",
		"workers: ingest runs 1 replica(s), want at least 2",
		"workers: the services disagree on AGENTMEM_PREFIX",
		"workers: the services disagree on AGENTMEM_REPLICAS",
	} {
		if !containsPrefix(got, want) {
			t.Errorf("no problem reported starting with %q", want)
		}
	}
	if t.Failed() {
		t.Logf("reported:\n%s", strings.Join(got, "\n"))
	}
}

// containsPrefix reports whether one of the messages starts with want.
func containsPrefix(messages []string, want string) bool {
	for _, m := range messages {
		if strings.HasPrefix(m, want) {
			return true
		}
	}
	return false
}

// loadDeployment reads a compose file and a Dockerfile.
func loadDeployment(t *testing.T, composePath, dockerfilePath string, commands []string, flags flagsFunc, natsFlags *flagSet) deployment {
	t.Helper()
	c, err := loadCompose(composePath)
	if err != nil {
		t.Fatal(err)
	}
	d, err := loadDockerfile(dockerfilePath)
	if err != nil {
		t.Fatal(err)
	}
	return deployment{compose: c, dockerfile: d, commands: commands, flags: flags, natsFlags: natsFlags, testedNATS: goModNATS(t)}
}

// goModNATS is the major and minor version of nats-server that go.mod pins.
func goModNATS(t *testing.T) [2]int {
	t.Helper()
	data, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`github\.com/nats-io/nats-server/v2 v(\d+)\.(\d+)\.`).FindSubmatch(data)
	if m == nil {
		t.Fatal("go.mod names no nats-server version")
	}
	major, _ := strconv.Atoi(string(m[1]))
	minor, _ := strconv.Atoi(string(m[2]))
	return [2]int{major, minor}
}
