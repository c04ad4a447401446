package deploy_test

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
)

// The checks return what is wrong as messages that name the service (or the Dockerfile) and
// what to change; no message means the file is right.

// workers are the commands the cluster runs as long-lived services, each at least twice.
var workers = []string{"ingest", "retriever", "compressor", "extractor"}

// minReplicas is how many containers each worker runs at least.
const minReplicas = 2

// minNATS is the oldest NATS server agentmem runs on: ingest's partition consumers use priority
// groups with the pinned-client policy (2.11).
var minNATS = [2]int{2, 11}

// runtimeVars are variables the Go runtime reads; a service may set them besides AGENTMEM_*.
var runtimeVars = []string{"GOMAXPROCS", "GOMEMLIMIT", "GOGC", "GODEBUG", "TZ"}

// deployment is what the compose checks look at.
type deployment struct {
	compose    *compose
	dockerfile *dockerfile
	commands   []string  // the command directories of cmd/
	flags      flagsFunc // flags of the image's commands
	natsFlags  *flagSet  // options of nats-server
	testedNATS [2]int    // the nats-server version go.mod pins (what the tests run), major and minor
}

// ---- images ----

// pinned reports whether an image reference names a version: a tag other than latest, or a
// digest.
func pinned(image string) bool {
	if strings.Contains(image, "@sha256:") {
		return true
	}
	name := image[strings.LastIndex(image, "/")+1:]
	_, tag, ok := strings.Cut(name, ":")
	return ok && tag != "" && tag != "latest"
}

// imageName is the repository of an image reference without registry, tag or digest
// ("docker.io/library/nats:2.12-alpine" → "nats").
func imageName(image string) string {
	image, _, _ = strings.Cut(image, "@")
	name := image[strings.LastIndex(image, "/")+1:]
	name, _, _ = strings.Cut(name, ":")
	return name
}

// imageTag is the tag of an image reference, or "".
func imageTag(image string) string {
	image, _, _ = strings.Cut(image, "@")
	name := image[strings.LastIndex(image, "/")+1:]
	_, tag, _ := strings.Cut(name, ":")
	return tag
}

// versionAtLeast reports whether a tag such as "2.12-alpine" or "2.12.1" is at least min; ok is
// false when the tag does not start with a version.
func versionAtLeast(tag string, min [2]int) (at, ok bool) {
	v := tag
	if i := strings.IndexFunc(v, func(r rune) bool { return r != '.' && (r < '0' || r > '9') }); i >= 0 {
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	if len(parts) < 2 {
		return false, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false, false
	}
	return major > min[0] || major == min[0] && minor >= min[1], true
}

// hasWget reports whether an image is known to ship wget (busybox's).
func hasWget(image string) bool {
	n := imageName(image)
	return n == "alpine" || n == "busybox" || strings.Contains(imageTag(image), "alpine")
}

// ---- Dockerfile ----

// checkDockerfile checks the image build: pinned bases, a Go base of go.mod's version, every
// command of cmd/ built statically and reproducibly, a non-root runtime.
func checkDockerfile(d *dockerfile, commands []string, goVer string) []string {
	var out []string
	name := "Dockerfile"
	goMinor := goVer
	if p := strings.SplitN(goVer, ".", 3); len(p) >= 2 {
		goMinor = p[0] + "." + p[1]
	}
	goBase := false
	for _, s := range d.stages {
		if s.image == "scratch" || d.stageNamed(s.image) != nil {
			continue
		}
		if !pinned(s.image) {
			out = append(out, fmt.Sprintf("%s: FROM %s is not pinned to a version (no tag, or latest)", name, s.image))
		}
		if imageName(s.image) == "golang" {
			goBase = true
			tag := imageTag(s.image)
			if tag != goMinor && !strings.HasPrefix(tag, goMinor+".") && !strings.HasPrefix(tag, goMinor+"-") {
				out = append(out, fmt.Sprintf("%s: FROM %s is not a Go %s image (go.mod says go %s)", name, s.image, goMinor, goVer))
			}
		}
	}
	if !goBase {
		out = append(out, fmt.Sprintf("%s: no stage is FROM golang:%s", name, goMinor))
	}
	dirs, runs, all := d.builds()
	if len(runs) == 0 {
		out = append(out, fmt.Sprintf("%s: no RUN … go build", name))
	}
	for _, r := range runs {
		if !strings.Contains(r, "CGO_ENABLED=0") {
			out = append(out, fmt.Sprintf("%s: go build without CGO_ENABLED=0 (the runtime image has no C library to link against): %s", name, r))
		}
		if !strings.Contains(r, "-trimpath") {
			out = append(out, fmt.Sprintf("%s: go build without -trimpath: %s", name, r))
		}
	}
	if !all {
		for _, c := range commands {
			if !slices.Contains(dirs, c) {
				out = append(out, fmt.Sprintf("%s: cmd/%s is a command the image does not build: add ./cmd/%s to its go build line", name, c, c))
			}
		}
		for _, c := range dirs {
			if !slices.Contains(commands, c) {
				out = append(out, fmt.Sprintf("%s: go build names ./cmd/%s, which is not a command directory of cmd/", name, c))
			}
		}
	}
	if d.binDir() == "" {
		out = append(out, fmt.Sprintf("%s: the final stage copies no binaries from the build stage (COPY --from=…)", name))
	}
	switch u := d.final().user; {
	case u == "":
		out = append(out, fmt.Sprintf("%s: the final stage has no USER: containers would run as root", name))
	case u == "root" || u == "0" || strings.HasPrefix(u, "0:") || strings.HasPrefix(u, "root:"):
		out = append(out, fmt.Sprintf("%s: the final stage runs as %s: use a non-root user", name, u))
	}
	return out
}

// builtCommands lists the commands the image contains.
func builtCommands(d *dockerfile, commands []string) []string {
	dirs, _, all := d.builds()
	if all {
		return commands
	}
	return dirs
}

// ---- NATS cluster ----

// natsNode is a NATS server of the compose file, with its options.
type natsNode struct {
	service string
	host    string // the name other containers reach it by
	opts    map[string]string
}

// natsAliases maps nats-server's short and alternative option names to one name.
var natsAliases = map[string]string{
	"js": "jetstream", "sd": "store_dir", "m": "http_port", "n": "name", "server_name": "name",
	"p": "port", "a": "addr", "net": "addr", "c": "config",
}

// natsBool lists nats-server options that take no value.
var natsBool = map[string]bool{
	"jetstream": true, "js": true, "D": true, "V": true, "VV": true, "DV": true, "DVV": true,
	"T": true, "logtime": true, "logtime_utc": true, "s": true, "syslog": true, "tls": true,
	"tlsverify": true, "t": true, "h": true, "help": true, "v": true, "version": true,
}

// parseNATSArgs splits a nats-server command line into options (canonical name → value) and the
// names as written.
func parseNATSArgs(args []string) (opts map[string]string, written []string) {
	opts = map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		written = append(written, name)
		if !hasVal && !natsBool[name] && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			val = args[i+1]
			i++
		}
		if c, ok := natsAliases[name]; ok {
			name = c
		}
		opts[name] = val
	}
	return opts, written
}

// natsNodes returns the services running the official nats image, sorted by name.
func natsNodes(c *compose) []natsNode {
	var out []natsNode
	for _, name := range serviceNames(c) {
		s := c.Services[name]
		if imageName(s.Image) != "nats" {
			continue
		}
		opts, _ := parseNATSArgs(append(slices.Clone(s.Entrypoint), s.Command...))
		host := name
		if s.Hostname != "" {
			host = s.Hostname
		}
		out = append(out, natsNode{service: name, host: host, opts: opts})
	}
	return out
}

// port returns the port of the node's option, or def.
func (n natsNode) port(opt, def string) string {
	if v, ok := n.opts[opt]; ok && v != "" {
		if _, p, err := net.SplitHostPort(strings.TrimPrefix(strings.TrimPrefix(v, "nats://"), "nats-route://")); err == nil {
			return p
		}
		return v
	}
	return def
}

// clusterPort is the port the node listens on for routes.
func (n natsNode) clusterPort() string {
	u, err := url.Parse(n.opts["cluster"])
	if err != nil || u.Port() == "" {
		return "6222"
	}
	return u.Port()
}

// checkCluster checks the NATS nodes: at least three, each with a known option set, JetStream
// with its store on a volume, a monitoring port with a JetStream healthcheck, one cluster name,
// distinct server names and a full mesh of routes.
func checkCluster(dep deployment) []string {
	var out []string
	nodes := natsNodes(dep.compose)
	if len(nodes) < 3 {
		return []string{fmt.Sprintf("cluster: %d NATS node(s) (services with the nats image); want 3 for R3 streams", len(nodes))}
	}
	clusterNames := map[string][]string{}
	serverNames := map[string][]string{}
	for _, n := range nodes {
		s := dep.compose.Services[n.service]
		where := fmt.Sprintf("service %q", n.service)
		if tag := imageTag(s.Image); pinned(s.Image) {
			if at, ok := versionAtLeast(tag, minNATS); ok && !at {
				out = append(out, fmt.Sprintf("%s: image %s is older than NATS %d.%d (pinned-client priority groups)", where, s.Image, minNATS[0], minNATS[1]))
			} else if at, ok := versionAtLeast(tag, dep.testedNATS); ok && !at && dep.testedNATS != [2]int{} {
				out = append(out, fmt.Sprintf("%s: image %s is older than the NATS server go.mod pins and the tests run (%d.%d)", where, s.Image, dep.testedNATS[0], dep.testedNATS[1]))
			}
		}
		if !hasWget(s.Image) && usesWget(s.Healthcheck) {
			out = append(out, fmt.Sprintf("%s: the healthcheck runs wget, which image %s does not have (use an -alpine tag)", where, s.Image))
		}
		_, written := parseNATSArgs(append(slices.Clone(s.Entrypoint), s.Command...))
		if dep.natsFlags != nil {
			for _, f := range written {
				if !dep.natsFlags.flags[f] {
					out = append(out, fmt.Sprintf("%s: nats-server has no option -%s (command: %s)", where, f, strings.Join(s.Command, " ")))
				}
			}
		}
		if _, ok := n.opts["jetstream"]; !ok {
			out = append(out, fmt.Sprintf("%s: JetStream is off: add --jetstream", where))
		}
		store := n.opts["store_dir"]
		switch {
		case store == "":
			out = append(out, fmt.Sprintf("%s: no --store_dir: JetStream data would not be on a volume", where))
		case !slices.ContainsFunc(s.Volumes, func(m mount) bool { return path.Clean(m.target) == path.Clean(store) && m.source != "" }):
			out = append(out, fmt.Sprintf("%s: --store_dir %s is not a mounted volume: the data dies with the container", where, store))
		}
		http := n.port("http_port", "")
		if http == "" {
			out = append(out, fmt.Sprintf("%s: no --http_port: no monitoring endpoint for the healthcheck", where))
		}
		hc := strings.Join(s.Healthcheck.command(), " ")
		if hc == "" {
			out = append(out, fmt.Sprintf("%s: no healthcheck (want one on http://localhost:%s/healthz?js-enabled-only=true)", where, http))
		} else if !strings.Contains(hc, ":"+http+"/healthz") {
			out = append(out, fmt.Sprintf("%s: the healthcheck %q does not ask /healthz on the monitoring port %s", where, hc, http))
		}
		if name := n.opts["name"]; name == "" {
			out = append(out, fmt.Sprintf("%s: no --name: JetStream clustering needs a stable server name", where))
		} else {
			serverNames[name] = append(serverNames[name], n.service)
		}
		cn := n.opts["cluster_name"]
		if cn == "" {
			out = append(out, fmt.Sprintf("%s: no --cluster_name", where))
		}
		clusterNames[cn] = append(clusterNames[cn], n.service)
		if n.opts["cluster"] == "" {
			out = append(out, fmt.Sprintf("%s: no --cluster listen address for routes", where))
		}
		routes := map[string]string{} // host → port
		for _, r := range strings.Split(n.opts["routes"], ",") {
			r = strings.TrimSpace(r)
			if r == "" {
				continue
			}
			u, err := url.Parse(r)
			if err != nil || u.Hostname() == "" {
				out = append(out, fmt.Sprintf("%s: route %q is not a URL", where, r))
				continue
			}
			routes[u.Hostname()] = u.Port()
		}
		for _, peer := range nodes {
			if peer.service == n.service {
				continue
			}
			port, ok := routes[peer.host]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("%s: no route to %s: add nats://%s:%s to --routes (the nodes must form a full mesh)", where, peer.host, peer.host, peer.clusterPort()))
			case port != peer.clusterPort():
				out = append(out, fmt.Sprintf("%s: the route to %s uses port %s, but %s listens for routes on %s", where, peer.host, port, peer.service, peer.clusterPort()))
			}
		}
	}
	if len(clusterNames) > 1 {
		out = append(out, fmt.Sprintf("cluster: the nodes disagree on --cluster_name: %v", clusterNames))
	}
	for _, name := range sortedKeys(serverNames) {
		if svcs := serverNames[name]; len(svcs) > 1 {
			out = append(out, fmt.Sprintf("cluster: services %v share the server name %q", svcs, name))
		}
	}
	return out
}

// usesWget reports whether a healthcheck runs wget.
func usesWget(h *healthcheck) bool {
	cmd := h.command()
	return len(cmd) > 0 && path.Base(cmd[0]) == "wget"
}

// ---- agentmem services ----

// fromImage reports whether the service is built from the Dockerfile under check.
func (dep deployment) fromImage(s *service) bool {
	return s.Build != nil && s.Build.dockerfile(dep.compose.dir) == dep.dockerfile.path
}

// agentmemServices lists the services built from the Dockerfile, sorted.
func (dep deployment) agentmemServices() []string {
	var out []string
	for _, name := range serviceNames(dep.compose) {
		if dep.fromImage(dep.compose.Services[name]) {
			out = append(out, name)
		}
	}
	return out
}

// binary returns the command a service runs: the base name of its entrypoint.
func binary(s *service) string {
	if len(s.Entrypoint) == 0 {
		return ""
	}
	return path.Base(s.Entrypoint[0])
}

// args returns the arguments the service's command gets: the rest of the entrypoint, then the
// command.
func args(s *service) []string {
	var a []string
	if len(s.Entrypoint) > 1 {
		a = append(a, s.Entrypoint[1:]...)
	}
	return append(a, s.Command...)
}

// setting returns the value a service gives a flag: on the command line, or else through its
// environment twin.
func setting(s *service, flag string) (string, bool) {
	a := args(s)
	for i := 0; i < len(a); i++ {
		name, val, hasVal := strings.Cut(strings.TrimLeft(a[i], "-"), "=")
		if !strings.HasPrefix(a[i], "-") || name != flag {
			continue
		}
		if !hasVal && i+1 < len(a) {
			val = a[i+1]
		}
		return val, true
	}
	if v, ok := s.Environment[envName(flag)]; ok && v != nil {
		return *v, true
	}
	return "", false
}

// secretVar reports whether a variable holds a secret itself (as settings.Secret judges flags,
// less --creds, whose value is a file's path).
func secretVar(name string) bool {
	n := strings.ToLower(strings.TrimPrefix(name, "AGENTMEM_"))
	for _, s := range []string{"password", "key", "secret", "token"} {
		if strings.Contains(n, s) && !strings.Contains(n, "tokens") && n != "tokenizer" {
			return true
		}
	}
	return false
}

// checkService checks one service built from the Dockerfile: its entrypoint is a binary of the
// image, every AGENTMEM_ variable and command-line flag is a flag of that binary, it reaches
// every NATS node and waits for them to be healthy; a long-running one also has a restart
// policy, a /readyz healthcheck on its health port and R3 topology.
func checkService(dep deployment, name string) []string {
	s := dep.compose.Services[name]
	where := fmt.Sprintf("service %q", name)
	var out []string
	add := func(format string, a ...any) { out = append(out, where+": "+fmt.Sprintf(format, a...)) }

	built := builtCommands(dep.dockerfile, dep.commands)
	bin := binary(s)
	switch {
	case bin == "":
		add("no entrypoint: name the command it runs, e.g. entrypoint: [%q]", path.Join(dep.dockerfile.binDir(), "ingest"))
		return out
	case !slices.Contains(built, bin):
		add("entrypoint %q is not a binary the Dockerfile builds (it builds %s)", s.Entrypoint[0], strings.Join(built, ", "))
		return out
	case strings.Contains(s.Entrypoint[0], "/") && path.Dir(s.Entrypoint[0]) != dep.dockerfile.binDir():
		add("entrypoint %q is not where the Dockerfile puts the binaries (%s)", s.Entrypoint[0], dep.dockerfile.binDir())
	}
	fs, err := dep.flags(bin)
	if err != nil {
		add("reading the flags of %s: %v", bin, err)
		return out
	}

	// Command-line flags; with subcommands, those of the subcommand named first.
	a := args(s)
	flags, label := fs.flags, bin
	var path []string
	for _, w := range a {
		if strings.HasPrefix(w, "-") {
			break
		}
		sf, ok := fs.sub[strings.Join(append(path, w), " ")]
		if !ok {
			break
		}
		path = append(path, w)
		flags, label = sf, bin+" "+strings.Join(path, " ")
	}
	for _, w := range a {
		if w == "--" {
			break
		}
		if !strings.HasPrefix(w, "-") || w == "-" {
			continue
		}
		f, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if !flags[f] {
			add("%s has no flag -%s (command: %s); its flags: %s", label, f, strings.Join(a, " "), strings.Join(sorted(flags), ", "))
		}
	}

	// Environment.
	vars := fs.envNames()
	keys := make([]string, 0, len(s.Environment))
	for k := range s.Environment {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := s.Environment[k]
		switch {
		case strings.HasPrefix(k, "AGENTMEM_"):
			if _, ok := vars[k]; !ok {
				add("%s is not a flag of %s, which reads no such variable; its variables: %s", k, bin, strings.Join(sortedKeys(vars), ", "))
				continue
			}
			if secretVar(k) && v != nil && *v != "" && !strings.HasPrefix(*v, "${") {
				add("%s is a secret written into the compose file: pass it from the host, e.g. %s: ${%s:-}", k, k, k)
			}
		case slices.Contains(runtimeVars, k):
		default:
			add("%s is not an AGENTMEM_ variable: the commands read only AGENTMEM_* (and %s)", k, strings.Join(runtimeVars, ", "))
		}
	}

	// NATS: every node in the URL list, every node healthy before start.
	nodes := natsNodes(dep.compose)
	if fs.flags["nats"] {
		urls, ok := setting(s, "nats")
		if !ok {
			add("no AGENTMEM_NATS: it would connect to nats://127.0.0.1:4222, not to the cluster")
		} else {
			listed := map[string]string{}
			for _, u := range strings.Split(urls, ",") {
				pu, err := url.Parse(strings.TrimSpace(u))
				if err != nil || pu.Hostname() == "" {
					add("AGENTMEM_NATS: %q is not a URL", u)
					continue
				}
				listed[pu.Hostname()] = pu.Port()
			}
			for _, n := range nodes {
				port, ok := listed[n.host]
				switch {
				case !ok:
					add("AGENTMEM_NATS %q does not list NATS node %s: the connection could not fail over to it", urls, n.host)
				case port != "" && port != n.port("port", "4222"):
					add("AGENTMEM_NATS lists %s on port %s; its client port is %s", n.host, port, n.port("port", "4222"))
				}
			}
		}
	}
	for _, n := range nodes {
		if c, ok := s.DependsOn[n.service]; !ok || c != "service_healthy" {
			add("does not wait for NATS node %s to be healthy: depends_on: {%s: {condition: service_healthy}}", n.service, n.service)
		}
	}

	if s.onDemand() {
		return out
	}
	if s.Restart == "" || s.Restart == "no" {
		add("no restart policy: a worker that exits (NATS unreachable at start) would stay down; use restart: unless-stopped")
	}
	if fs.flags["replicas"] {
		r, _ := setting(s, "replicas")
		if r != strconv.Itoa(len(nodes)) {
			add("AGENTMEM_REPLICAS is %q: on a %d-node cluster streams and buckets should have %d replicas", r, len(nodes), len(nodes))
		}
	}
	listen, ok := setting(s, "health-listen")
	if !ok || listen == "" {
		add("no health endpoint: set AGENTMEM_HEALTH_LISTEN (e.g. \":8080\") for the /readyz healthcheck")
		return out
	}
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		add("AGENTMEM_HEALTH_LISTEN %q is not host:port", listen)
		return out
	}
	hc := strings.Join(s.Healthcheck.command(), " ")
	switch {
	case hc == "":
		add("no healthcheck: want one on http://127.0.0.1:%s/readyz", port)
	case !strings.Contains(hc, ":"+port+"/readyz"):
		add("the healthcheck %q does not ask /readyz on the health port %s", hc, port)
	case usesWget(s.Healthcheck) && !hasWget(dep.dockerfile.final().image):
		add("the healthcheck runs wget, which the runtime image %s does not have", dep.dockerfile.final().image)
	}
	return out
}

// checkWorkers checks the deployment as a whole: every worker runs at least twice, every
// service's image is pinned, named volumes are declared, depends_on names services, and the
// agentmem services agree on the topology.
func checkWorkers(dep deployment) []string {
	var out []string
	c := dep.compose
	running := map[string]int{}
	for _, name := range dep.agentmemServices() {
		s := c.Services[name]
		if !s.onDemand() {
			running[binary(s)] += s.replicas()
		}
	}
	for _, w := range workers {
		switch n := running[w]; {
		case n == 0:
			out = append(out, fmt.Sprintf("workers: no service runs %s (entrypoint [\"%s\"])", w, path.Join(dep.dockerfile.binDir(), w)))
		case n < minReplicas:
			out = append(out, fmt.Sprintf("workers: %s runs %d replica(s), want at least %d (deploy: {replicas: %d})", w, n, minReplicas, minReplicas))
		}
	}
	for _, name := range serviceNames(c) {
		s := c.Services[name]
		where := fmt.Sprintf("service %q", name)
		switch {
		case s.Image == "" && s.Build == nil:
			out = append(out, where+": neither image nor build")
		case s.Image != "" && !pinned(s.Image):
			out = append(out, fmt.Sprintf("%s: image %s is not pinned to a version (no tag, or latest)", where, s.Image))
		}
		if !s.onDemand() && (s.Restart == "" || s.Restart == "no") && imageName(s.Image) == "nats" {
			out = append(out, where+": no restart policy: use restart: unless-stopped")
		}
		for d := range s.DependsOn {
			if _, ok := c.Services[d]; !ok {
				out = append(out, fmt.Sprintf("%s: depends_on names %q, which is not a service", where, d))
			}
		}
		for _, m := range s.Volumes {
			if m.source == "" || strings.ContainsAny(m.source[:1], "./~$") {
				continue // anonymous volume or bind mount
			}
			if _, ok := c.Volumes[m.source]; !ok {
				out = append(out, fmt.Sprintf("%s: volume %q is not declared under volumes:", where, m.source))
			}
		}
	}
	for _, flag := range []string{"prefix", "partitions", "replicas", "duplicate-window"} {
		seen := map[string][]string{}
		for _, name := range dep.agentmemServices() {
			s := c.Services[name]
			if flag == "replicas" && s.onDemand() {
				continue // tools read streams; they never create them
			}
			v, _ := setting(s, flag)
			seen[v] = append(seen[v], name)
		}
		if len(seen) > 1 {
			var parts []string
			for _, v := range sortedKeys(seen) {
				shown := v
				if v == "" {
					shown = "(default)"
				}
				parts = append(parts, strings.Join(seen[v], ", ")+": "+shown)
			}
			out = append(out, fmt.Sprintf("workers: the services disagree on %s (--%s): %s; every process of a deployment must use the same", envName(flag), flag, strings.Join(parts, "; ")))
		}
	}
	return out
}

// serviceNames lists a compose file's services, sorted.
func serviceNames(c *compose) []string {
	out := make([]string, 0, len(c.Services))
	for n := range c.Services {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// sortedKeys lists the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
