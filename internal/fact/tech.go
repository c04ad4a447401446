package fact

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// techNames maps well-known programming languages, databases and frameworks to the project
// slot they fill, so that "our project uses Go" is keyed project.language and a later "our
// project uses Rust" supersedes it.
var techNames = map[string]string{}

// techByLength lists techNames' keys, longest first, so that "ruby on rails" wins over "ruby".
var techByLength []string

func init() {
	add := func(class string, names ...string) {
		for _, n := range names {
			techNames[n] = class
		}
	}
	add("language", "go", "golang", "python", "python3", "rust", "java", "javascript", "js", "typescript", "ts", "c",
		"c++", "cpp", "c#", "csharp", "f#", "ruby", "php", "kotlin", "swift", "scala", "elixir", "erlang", "haskell", "zig",
		"dart", "lua", "perl", "r", "clojure", "ocaml", "julia", "nim", "crystal", "objective-c", "fortran", "cobol",
		"groovy", "visual basic", "vb.net", "matlab", "solidity", "gleam", "v", "mojo", "assembly")
	add("database", "postgres", "postgresql", "mysql", "mariadb", "sqlite", "mongodb", "mongo", "redis", "cassandra",
		"dynamodb", "elasticsearch", "opensearch", "clickhouse", "cockroachdb", "neo4j", "oracle database", "sql server",
		"mssql", "couchdb", "firestore", "supabase", "tidb", "oceanbase", "influxdb", "timescaledb", "duckdb", "scylladb",
		"valkey", "etcd", "bigquery", "snowflake", "planetscale")
	add("framework", "react", "vue", "vue.js", "angular", "svelte", "sveltekit", "next.js", "nextjs", "nuxt", "django",
		"flask", "fastapi", "rails", "ruby on rails", "spring", "spring boot", "laravel", "express", "nestjs", "gin",
		"echo", "fiber", "asp.net", ".net", "phoenix", "remix", "solidjs", "flutter", "react native", "electron", "tauri",
		"htmx", "symfony", "actix", "axum", "rocket", "quarkus")
	add("editor", "vim", "neovim", "nvim", "emacs", "vs code", "vscode", "visual studio code", "visual studio", "intellij",
		"intellij idea", "goland", "pycharm", "webstorm", "clion", "rider", "sublime text", "sublime", "atom", "cursor",
		"zed", "helix", "xcode", "android studio", "nano", "notepad++", "eclipse", "jetbrains fleet", "kakoune")
	add("os", "linux", "ubuntu", "debian", "fedora", "arch linux", "arch", "manjaro", "nixos", "linux mint", "macos",
		"mac os", "os x", "windows", "windows 11", "windows 10", "freebsd", "chromeos", "chrome os", "pop!_os", "pop os")
	add("browser", "chrome", "google chrome", "firefox", "safari", "microsoft edge", "brave", "opera", "vivaldi",
		"arc", "chromium", "duckduckgo browser", "tor browser", "librewolf", "zen browser")
	add("queue", "kafka", "rabbitmq", "nats", "nats jetstream", "jetstream", "sqs", "pulsar", "activemq", "zeromq")
	for k := range techNames {
		techByLength = append(techByLength, k)
	}
	slices.SortFunc(techByLength, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
}

// techClass returns the slot ("language", "database", "framework", "queue", "editor", "os",
// "browser") of the
// technology an object starts with, or "" when it names none.
func techClass(obj string) string {
	s := strings.ToLower(strings.TrimSpace(obj))
	s = strings.TrimLeft(s, "\"'`“")
	for _, n := range techByLength {
		rest, ok := strings.CutPrefix(s, n)
		if !ok {
			continue
		}
		if r, _ := utf8.DecodeRuneInString(rest); rest == "" || !(unicode.IsLetter(r) && r < utf8.RuneSelf) && !unicode.IsDigit(r) && r != '+' && r != '#' {
			return techNames[n]
		}
	}
	return ""
}
