package tour

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// skipMarker, on the last non-blank line before a fenced block, keeps the tour from running
// (a shell block) or checking (a JSON block) it: for an illustration that is not meant to be run
// as it stands against the tour's memoryd.
const skipMarker = "<!-- tour: skip -->"

// block is a fenced code block of a Markdown document.
type block struct {
	lang    string // the info string's first word: sh, json, python, …
	text    string // the lines between the fences, their common fence indent removed
	line    int    // 1-based line of the opening fence
	section int    // how many headings come before it
	skip    bool   // preceded by skipMarker
}

// readBlocks returns the fenced blocks of the Markdown file at path (relative to the repository
// root), in document order.
func readBlocks(t *testing.T, path string) []block {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseBlocks(string(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return blocks
}

// parseBlocks splits a Markdown document into its fenced blocks. It knows backtick fences,
// indented or not (inside list items), and ATX headings; that is all the docs use.
func parseBlocks(doc string) ([]block, error) {
	var (
		blocks   []block
		cur      *block
		indent   string
		body     []string
		section  int
		lastText string // the last non-blank line outside a block
	)
	for i, line := range strings.Split(doc, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur != nil {
			if trimmed == "```" {
				cur.text = strings.Join(body, "\n") + "\n"
				blocks = append(blocks, *cur)
				cur, body = nil, nil
				continue
			}
			body = append(body, strings.TrimPrefix(line, indent))
			continue
		}
		switch {
		case strings.HasPrefix(trimmed, "```"):
			lang, _, _ := strings.Cut(strings.TrimPrefix(trimmed, "```"), " ")
			indent = line[:len(line)-len(strings.TrimLeft(line, " "))]
			cur = &block{lang: lang, line: i + 1, section: section, skip: lastText == skipMarker}
		case strings.HasPrefix(line, "#"):
			section++
		}
		if trimmed != "" {
			lastText = trimmed
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("the block opened on line %d is not closed", cur.line)
	}
	return blocks, nil
}

// commands splits a shell script into its commands as sh would read them: one a line, a line
// continued by a trailing backslash or by an open quote (a JSON body over several lines), comments
// left out. It knows single and double quotes and backslash escapes, which is what the docs use.
func commands(script string) ([]string, error) {
	const (
		plain = iota
		single
		double
	)
	var (
		cmds  []string
		cur   strings.Builder
		state = plain
	)
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			cmds = append(cmds, s)
		}
		cur.Reset()
	}
	for i := 0; i < len(script); i++ {
		c := script[i]
		switch state {
		case single:
			cur.WriteByte(c)
			if c == '\'' {
				state = plain
			}
		case double:
			cur.WriteByte(c)
			if c == '\\' && i+1 < len(script) {
				i++
				cur.WriteByte(script[i])
			} else if c == '"' {
				state = plain
			}
		default:
			switch {
			case c == '\\' && i+1 < len(script):
				i++
				cur.WriteByte(c)
				cur.WriteByte(script[i])
			case c == '\n':
				flush()
			case c == '#' && (cur.Len() == 0 || strings.ContainsRune(" \t", rune(cur.String()[cur.Len()-1]))):
				for i+1 < len(script) && script[i+1] != '\n' {
					i++
				}
			default:
				cur.WriteByte(c)
				switch c {
				case '\'':
					state = single
				case '"':
					state = double
				}
			}
		}
	}
	if state != plain {
		return nil, fmt.Errorf("unterminated quote in %q", cur.String())
	}
	flush()
	return cmds, nil
}

// program is the command's program: its first word after any NAME=value assignments.
func program(cmd string) string {
	for _, w := range strings.Fields(cmd) {
		if name, _, ok := strings.Cut(w, "="); ok && name != "" && !strings.ContainsAny(name, "/-.'\"") {
			continue
		}
		return w
	}
	return ""
}

func TestParseBlocks(t *testing.T) {
	doc := "# A\n\ntext\n\n```sh\ncurl a\n```\n\n" + skipMarker + "\n\n```sh\ncurl b\n```\n\n## B\n\n" +
		"- item:\n\n  ```json\n  {\"a\": 1}\n  ```\n"
	got, err := parseBlocks(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := []block{
		{lang: "sh", text: "curl a\n", line: 5, section: 1},
		{lang: "sh", text: "curl b\n", line: 11, section: 1, skip: true},
		{lang: "json", text: "{\"a\": 1}\n", line: 19, section: 2},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("parseBlocks:\n got %+v\nwant %+v", got, want)
	}
	if _, err := parseBlocks("```sh\ncurl\n"); err == nil {
		t.Fatal("an unclosed block is no error")
	}
}

func TestCommands(t *testing.T) {
	for _, c := range []struct {
		script string
		want   []string
	}{
		{"a b  # comment\n\nc \"it's\" d\n", []string{"a b", `c "it's" d`}},
		{"curl -X POST \\\n  -d '{\"a\":\n  1}'\nnext", []string{"curl -X POST \\\n  -d '{\"a\":\n  1}'", "next"}},
		{"echo a#b \"#c\" '#d' # e", []string{`echo a#b "#c" '#d'`}},
		{"X=1 Y=2 node dist/agent.js", []string{"X=1 Y=2 node dist/agent.js"}},
	} {
		got, err := commands(c.script)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("commands(%q) = %q, %v; want %q", c.script, got, err, c.want)
		}
	}
	if _, err := commands("echo 'open"); err == nil {
		t.Error("an unterminated quote is no error")
	}
	if got := program("NATS_URL=nats://x TENANT=acme node dist/agent.js"); got != "node" {
		t.Errorf("program = %q, want node", got)
	}
	if got := program("bin/memctl search --x=1"); got != "bin/memctl" {
		t.Errorf("program = %q, want bin/memctl", got)
	}
}
