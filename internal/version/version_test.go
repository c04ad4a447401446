package version

import (
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	vcs := func(rev, modified string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/agentmem/agentmem", Version: "(devel)"}}
		if rev != "" {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: "vcs.revision", Value: rev})
		}
		if modified != "" {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: "vcs.modified", Value: modified})
		}
		return bi
	}
	installed := &debug.BuildInfo{Main: debug.Module{Path: "github.com/agentmem/agentmem", Version: "v0.4.1"}}
	for _, c := range []struct {
		name   string
		linked string
		bi     *debug.BuildInfo
		want   string
	}{
		{"linked version and a clean tree", "v1.2.0", vcs("3f2a9c1e0d5b", "false"), "memoryd v1.2.0 (3f2a9c1, go1.26.8)"},
		{"linked version and a dirty tree", "v1.2.0-3-g3f2a9c1-dirty", vcs("3f2a9c1e0d5b", "true"), "memoryd v1.2.0-3-g3f2a9c1-dirty (3f2a9c1-dirty, go1.26.8)"},
		{"work tree build", "", vcs("3f2a9c1e0d5b", "true"), "memoryd dev (3f2a9c1-dirty, go1.26.8)"},
		{"go install of a release", "", installed, "memoryd v0.4.1 (go1.26.8)"},
		{"no vcs information", "", vcs("", ""), "memoryd dev (go1.26.8)"},
		{"no build information", "", nil, "memoryd dev (go1.26.8)"},
		{"linked version wins", "v2.0.0", installed, "memoryd v2.0.0 (go1.26.8)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := format("memoryd", number(c.linked, c.bi), revision(c.bi), "go1.26.8"); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestThisBinary(t *testing.T) {
	old := Version
	t.Cleanup(func() { Version = old })
	Version = "v9.9.9"
	if got := Number(); got != "v9.9.9" {
		t.Fatalf("Number() = %q with Version set, want it", got)
	}
	s := String("memctl")
	if !strings.HasPrefix(s, "memctl v9.9.9 (") || !strings.HasSuffix(s, runtime.Version()+")") {
		t.Fatalf("String = %q", s)
	}
	if r := Revision(); r != "" && !regexp.MustCompile(`^[0-9a-f]{7}(-dirty)?$`).MatchString(r) {
		t.Fatalf("Revision() = %q", r)
	}
}
