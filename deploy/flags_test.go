package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// natsServerPkg is the main package of the NATS server, built from the version go.mod requires
// (the one every other test runs against) to learn the flags the cluster nodes may use.
const natsServerPkg = "github.com/nats-io/nats-server/v2"

// flagSet is what one binary accepts.
type flagSet struct {
	bin string
	// flags are the binary's flags; for a binary with subcommands, the union of theirs (an
	// environment variable is read by every subcommand that defines its flag).
	flags map[string]bool
	// sub maps each subcommand ("search", "dlq list") to its own flags.
	sub map[string]map[string]bool
}

// envName is the environment twin of a flag: AGENTMEM_ + its name upper-cased, "-" as "_".
func envName(flag string) string {
	return "AGENTMEM_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// envNames maps the environment twins of the binary's flags to the flags.
func (f *flagSet) envNames() map[string]string {
	out := map[string]string{}
	for name := range f.flags {
		out[envName(name)] = name
	}
	return out
}

// sorted lists the flags of fs.
func sorted(fs map[string]bool) []string {
	out := make([]string, 0, len(fs))
	for f := range fs {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// flagsFunc returns the flags of one binary of the image.
type flagsFunc func(bin string) (*flagSet, error)

var (
	toolsOnce sync.Once
	toolsDir  string
	toolsErr  error
	flagCache sync.Map // bin → *flagSet
)

// builtTools builds the given commands of cmd/ and the NATS server into one directory, once per
// test run, and returns the directory. Only the commands the compose file runs are built: linking
// is most of the time.
func builtTools(t *testing.T, commands []string) string {
	t.Helper()
	toolsOnce.Do(func() {
		root, err := repoRoot()
		if err != nil {
			toolsErr = err
			return
		}
		dir, err := os.MkdirTemp("", "agentmem-deploy-")
		if err != nil {
			toolsErr = err
			return
		}
		toolsDir = dir
		pkgs := []string{natsServerPkg}
		for _, c := range commands {
			pkgs = append(pkgs, "./cmd/"+c)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		args := append([]string{"build", "-ldflags=-s -w", "-o", dir + string(filepath.Separator)}, pkgs...)
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			toolsErr = fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	})
	if toolsErr != nil {
		t.Fatalf("building the commands to read their flags: %v", toolsErr)
	}
	return toolsDir
}

// binaryFlags builds the commands and returns a flagsFunc reading their flags, and those of
// "nats-server".
func binaryFlags(t *testing.T, commands []string) flagsFunc {
	dir := builtTools(t, commands)
	return func(bin string) (*flagSet, error) {
		if fs, ok := flagCache.Load(bin); ok {
			return fs.(*flagSet), nil
		}
		p := filepath.Join(dir, bin)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("no binary %q was built from cmd/", bin)
		}
		var fs *flagSet
		var err error
		if bin == "nats-server" {
			fs, err = natsServerFlags(p)
		} else {
			fs, err = commandFlags(p, bin)
		}
		if err != nil {
			return nil, err
		}
		flagCache.Store(bin, fs)
		return fs, nil
	}
}

// helpOutput runs the binary with args and -h in an environment without AGENTMEM_ variables and
// returns what it printed; the exit status is ignored (flag.ErrHelp exits 1 in some commands).
func helpOutput(p string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p, append(args, "-h")...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir()}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return "", fmt.Errorf("running %s -h: %w", p, err)
	}
	if ctx.Err() != nil {
		return "", fmt.Errorf("running %s -h: %w", p, ctx.Err())
	}
	return out.String(), nil
}

// flagLine matches a flag in the usage of the flag package ("  -name type") and of ffcli
// ("  -name=false  usage", "  -name value  usage").
var flagLine = regexp.MustCompile(`^  -([A-Za-z0-9][A-Za-z0-9_.-]*)`)

// parseUsage returns the flags and the subcommands listed in a usage text.
func parseUsage(text string) (flags map[string]bool, subs []string) {
	flags = map[string]bool{}
	inSubs := false
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "SUBCOMMANDS":
			inSubs = true
			continue
		case strings.TrimSpace(line) == "":
			inSubs = false
			continue
		}
		if inSubs {
			if f := strings.Fields(line); len(f) > 0 {
				subs = append(subs, f[0])
			}
			continue
		}
		if m := flagLine.FindStringSubmatch(line); m != nil {
			flags[m[1]] = true
		}
	}
	return flags, subs
}

// commandFlags reads an agentmem command's flags from its -h output, and those of each of its
// subcommands, nested ones included ("dlq list").
func commandFlags(p, bin string) (*flagSet, error) {
	out, err := helpOutput(p)
	if err != nil {
		return nil, err
	}
	flags, subs := parseUsage(out)
	fs := &flagSet{bin: bin, flags: flags, sub: map[string]map[string]bool{}}
	var walk func(path []string) error
	walk = func(path []string) error {
		out, err := helpOutput(p, path...)
		if err != nil {
			return err
		}
		sf, nested := parseUsage(out)
		if len(sf) == 0 && len(nested) == 0 {
			return fmt.Errorf("%s %s -h listed no flags and no subcommands:\n%s", bin, strings.Join(path, " "), out)
		}
		fs.sub[strings.Join(path, " ")] = sf
		for f := range sf {
			fs.flags[f] = true
		}
		for _, n := range nested {
			if err := walk(append(slices.Clone(path), n)); err != nil {
				return err
			}
		}
		return nil
	}
	for _, s := range subs {
		if err := walk([]string{s}); err != nil {
			return nil, err
		}
	}
	if len(fs.flags) == 0 {
		return nil, fmt.Errorf("%s -h listed no flags:\n%s", bin, out)
	}
	return fs, nil
}

// natsOption matches an option in nats-server's hand-written usage ("-js, --jetstream",
// "--store_dir <dir>", "-ms,--https_port").
var natsOption = regexp.MustCompile(`(?:^|[\s,\[])--?([A-Za-z][A-Za-z0-9_]*)`)

// natsServerFlags reads the options nats-server -h lists.
func natsServerFlags(p string) (*flagSet, error) {
	out, err := helpOutput(p)
	if err != nil {
		return nil, err
	}
	fs := &flagSet{bin: "nats-server", flags: map[string]bool{}}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		// The option column: up to the first run of two blanks after the options.
		if !strings.HasPrefix(line, "    ") {
			continue
		}
		opts := strings.TrimSpace(line)
		if i := strings.Index(opts, "  "); i >= 0 {
			opts = opts[:i]
		}
		for _, m := range natsOption.FindAllStringSubmatch(" "+opts, -1) {
			fs.flags[m[1]] = true
		}
	}
	if !fs.flags["jetstream"] || !fs.flags["routes"] {
		return nil, fmt.Errorf("nats-server -h did not list --jetstream and --routes:\n%s", out)
	}
	return fs, nil
}

// repoRoot finds the module root above the test's working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// commandDirs lists the directories of cmd/ that hold a command (cmd/internal aside).
func commandDirs(root string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(root, "cmd"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "internal" || e.Name() == "testdata" {
			continue
		}
		files, err := filepath.Glob(filepath.Join(root, "cmd", e.Name(), "*.go"))
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(files, func(f string) bool { return !strings.HasSuffix(f, "_test.go") }) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// goVersion returns the go directive of go.mod ("1.26.0").
func goVersion(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "go "); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", errors.New("go.mod has no go directive")
}
