package main

import (
	"context"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every memoryd flag is in docs/configuration.md.
func TestConfigurationListsEveryFlag(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	// -h prints every flag to the flag set's output, standard error.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	out := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		out <- string(b)
	}()
	runErr := run(context.Background(), []string{"-h"})
	os.Stderr = old
	_ = w.Close()
	usage := <-out
	if runErr == nil {
		t.Fatal("memoryd -h ran")
	}
	flags := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(usage, -1)
	if len(flags) < 20 {
		t.Fatalf("only %d flags in the usage:\n%s", len(flags), usage)
	}
	for _, f := range flags {
		if f[1] == "version" {
			continue // docs/configuration.md says it in prose
		}
		if !strings.Contains(string(doc), "`--"+f[1]+"`") {
			t.Errorf("docs/configuration.md does not list --%s", f[1])
		}
	}
}
