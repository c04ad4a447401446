package deploy_test

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// dockerfile is the part of a Dockerfile the checks read.
type dockerfile struct {
	path   string
	stages []*stage
}

// stage is one FROM … section.
type stage struct {
	image, name string
	user        string     // the last USER
	runs        []string   // RUN instructions, continuation lines joined
	copies      [][]string // COPY instructions, split into words
}

// final is the stage the image is made of.
func (d *dockerfile) final() *stage {
	if len(d.stages) == 0 {
		return &stage{}
	}
	return d.stages[len(d.stages)-1]
}

// stageNamed returns the stage a FROM or COPY --from refers to by name, or nil.
func (d *dockerfile) stageNamed(name string) *stage {
	for _, s := range d.stages {
		if s.name != "" && strings.EqualFold(s.name, name) {
			return s
		}
	}
	return nil
}

// builds returns the command directories (under cmd/) that the go build instructions name, the
// RUN lines that run them, and whether one builds ./cmd/... (every command).
func (d *dockerfile) builds() (dirs []string, runs []string, all bool) {
	for _, s := range d.stages {
		for _, r := range s.runs {
			if !strings.Contains(r, "go build") {
				continue
			}
			runs = append(runs, r)
			for _, w := range strings.Fields(r) {
				w = strings.TrimSuffix(strings.TrimPrefix(w, "./"), "/")
				switch {
				case w == "cmd/...":
					all = true
				case strings.HasPrefix(w, "cmd/"):
					dirs = append(dirs, strings.TrimPrefix(w, "cmd/"))
				}
			}
		}
	}
	slices.Sort(dirs)
	return slices.Compact(dirs), runs, all
}

// binDir is where the final stage copies the built binaries: the destination of its COPY --from.
func (d *dockerfile) binDir() string {
	for _, c := range d.final().copies {
		if len(c) >= 3 && strings.HasPrefix(c[0], "--from=") {
			return path.Clean(c[len(c)-1])
		}
	}
	return ""
}

// loadDockerfile reads the instructions of a Dockerfile: comments dropped, continuation lines
// joined.
func loadDockerfile(p string) (*dockerfile, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		lines []string
		cur   strings.Builder
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(cont)
			cur.WriteString(" ")
			continue
		}
		cur.WriteString(line)
		lines = append(lines, cur.String())
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, err
	}
	d := &dockerfile{path: abs}
	for _, l := range lines {
		instr, rest, _ := strings.Cut(l, " ")
		rest = strings.TrimSpace(rest)
		instr = strings.ToUpper(instr)
		if instr == "FROM" {
			w := strings.Fields(rest)
			for len(w) > 0 && strings.HasPrefix(w[0], "--") { // --platform=…
				w = w[1:]
			}
			if len(w) == 0 {
				return nil, fmt.Errorf("%s: FROM without an image", p)
			}
			s := &stage{image: w[0]}
			if len(w) >= 3 && strings.EqualFold(w[1], "AS") {
				s.name = w[2]
			}
			d.stages = append(d.stages, s)
			continue
		}
		if len(d.stages) == 0 {
			continue // ARG before the first FROM
		}
		s := d.stages[len(d.stages)-1]
		switch instr {
		case "USER":
			s.user = rest
		case "RUN":
			s.runs = append(s.runs, rest)
		case "COPY":
			s.copies = append(s.copies, strings.Fields(rest))
		}
	}
	if len(d.stages) == 0 {
		return nil, fmt.Errorf("%s: no FROM", p)
	}
	return d, nil
}
