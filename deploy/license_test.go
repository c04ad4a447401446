package deploy_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The repository is Apache-2.0: the LICENSE at its root holds the license's text, and every
// package that carries metadata of its own (the clients, the OpenAPI document) names it.
func TestEveryPackageNamesTheLicense(t *testing.T) {
	root := ".."
	license, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatalf("no LICENSE at the repository root: %v", err)
	}
	for _, w := range []string{"Apache License", "Version 2.0, January 2004", "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION", "END OF TERMS AND CONDITIONS"} {
		if !strings.Contains(string(license), w) {
			t.Errorf("LICENSE lacks %q: not the full Apache-2.0 text", w)
		}
	}
	read := func(path string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	var pkg struct {
		License string `json:"license"`
	}
	if err := json.Unmarshal(read("clients/typescript/package.json"), &pkg); err != nil || pkg.License != "Apache-2.0" {
		t.Errorf("clients/typescript/package.json: license %q (%v), want Apache-2.0", pkg.License, err)
	}

	// pyproject.toml: the PEP 621 table form, which every setuptools from 61 on reads.
	if !regexp.MustCompile(`(?m)^license = \{ ?text = "Apache-2\.0" ?\}$`).Match(read("clients/python/pyproject.toml")) {
		t.Error(`clients/python/pyproject.toml: no license = {text = "Apache-2.0"} in [project]`)
	}

	var doc struct {
		Info struct {
			License struct {
				Name       string `json:"name"`
				Identifier string `json:"identifier"`
			} `json:"license"`
		} `json:"info"`
	}
	if err := json.Unmarshal(read("api/openapi.json"), &doc); err != nil {
		t.Fatal(err)
	}
	if l := doc.Info.License; l.Name != "Apache-2.0" || l.Identifier != "Apache-2.0" {
		t.Errorf("api/openapi.json: info.license %+v, want name and identifier Apache-2.0", l)
	}
}
