// Package version says which build of agentmem is running: the release set at link time, or
// else what the go command recorded in the binary (module version, VCS revision). Every command's
// --version and the MCP server's implementation info read it.
package version

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is the release, set at link time (make build sets it from git describe):
//
//	go build -ldflags "-X github.com/agentmem/agentmem/internal/version.Version=v1.2.0" ./cmd/...
//
// Empty, Number falls back to the build information.
var Version string

// Number returns the version: Version when set, else the main module's version recorded by the
// go command (a go install of a tagged release), else "dev" (a build of a work tree).
func Number() string {
	bi, _ := debug.ReadBuildInfo()
	return number(Version, bi)
}

// Revision returns the short VCS revision the binary was built from, with "-dirty" when the
// work tree had uncommitted changes; "" when the build recorded none (go run, go test,
// -buildvcs=false).
func Revision() string {
	bi, _ := debug.ReadBuildInfo()
	return revision(bi)
}

// String is the line --version prints, e.g. "memoryd v1.2.0 (3f2a9c1, go1.26.8)".
func String(command string) string {
	bi, _ := debug.ReadBuildInfo()
	return format(command, number(Version, bi), revision(bi), runtime.Version())
}

func number(v string, bi *debug.BuildInfo) string {
	if v != "" {
		return v
	}
	if bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// revisionLen is how much of the commit hash a revision shows, as git's short form.
const revisionLen = 7

func revision(bi *debug.BuildInfo) string {
	if bi == nil {
		return ""
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return ""
	}
	if len(rev) > revisionLen {
		rev = rev[:revisionLen]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

func format(command, number, revision, goVersion string) string {
	var b strings.Builder
	b.WriteString(command + " " + number + " (")
	if revision != "" {
		b.WriteString(revision + ", ")
	}
	b.WriteString(goVersion + ")")
	return b.String()
}
