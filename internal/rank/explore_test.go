package rank

import (
	"encoding/json"
	"fmt"
	"github.com/agentmem/agentmem/internal/search"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestExplore is a temporary experiment driver: RANK_CFGS holds configs as JSON, one a line.
func TestExplore(t *testing.T) {
	spec := os.Getenv("RANK_CFGS")
	if spec == "" {
		t.Skip("no RANK_CFGS")
	}
	qs, err := loadLongMemEval(filepath.Join(dataDir, "longmemeval", "longmemeval_s_dev.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	sets, err := loadMADial(filepath.Join(dataDir, "madial_bench"))
	if err != nil {
		t.Fatal(err)
	}
	skipLME := os.Getenv("RANK_NOLME") != ""
	skipMad := os.Getenv("RANK_NOMAD") != ""
	for _, line := range strings.Split(spec, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var cfg Config
		if err := json.Unmarshal([]byte(line), &cfg); err != nil {
			t.Fatal(err)
		}
		r := cfgRanker(cfg)
		out := fmt.Sprintf("%-70s", line)
		if !skipLME {
			byType, counts, _ := evalLME(qs, r)
			a := byType["all"]
			out += fmt.Sprintf(" LME %.3f %.3f %.3f %.3f |", a[0], a[1], a[2], a[3])
			var types []string
			for k := range byType {
				if k != "all" {
					types = append(types, k)
				}
			}
			sort.Strings(types)
			if os.Getenv("RANK_TYPES") != "" {
				for _, ty := range types {
					out += fmt.Sprintf(" %s %.2f/%.2f", abbrev(ty), byType[ty][1], byType[ty][3])
				}
				_ = counts
			}
		}
		if !skipMad {
			zh := evalMADial(sets["zh"], r)
			en := evalMADial(sets["en"], r)
			out += fmt.Sprintf(" zh %.3f %.3f en %.3f %.3f", zh[2], zh[3], en[2], en[3])
		}
		fmt.Println(out)
	}
}

// TestExploreDump writes, for RANK_CFG, each LongMemEval question's top 30 turns as JSON lines
// to RANK_DUMP.
func TestExploreDump(t *testing.T) {
	spec, path := os.Getenv("RANK_CFG"), os.Getenv("RANK_DUMP")
	if spec == "" || path == "" {
		t.Skip("no RANK_CFG/RANK_DUMP")
	}
	var cfg Config
	if err := json.Unmarshal([]byte(spec), &cfg); err != nil {
		t.Fatal(err)
	}
	qs, err := loadLongMemEval(filepath.Join(dataDir, "longmemeval", "longmemeval_s_dev.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for _, q := range qs {
		ix := NewIndex(cfg)
		ix.Add(q.docs...)
		hits := ix.Search(q.question, 200)
		role := map[string]string{}
		for _, d := range q.docs {
			role[d.ID] = d.Role
		}
		type row struct {
			ID   string
			Role string
			Rel  float64
			Ans  bool
		}
		var rows []row
		for _, h := range hits {
			rows = append(rows, row{h.ID, role[h.ID], h.Relevance, q.answerTurns[h.ID]})
		}
		var ans []string
		for id := range q.answerTurns {
			ans = append(ans, id)
		}
		sort.Strings(ans)
		enc.Encode(map[string]any{"id": q.id, "type": q.qtype, "q": q.question, "sessions": q.answerSessions, "answers": ans, "hits": rows})
	}
}

// TestExploreMADialDump writes the MADial queries and memories with their terms to RANK_MDUMP.
func TestExploreMADialDump(t *testing.T) {
	path := os.Getenv("RANK_MDUMP")
	if path == "" {
		t.Skip("no RANK_MDUMP")
	}
	sets, err := loadMADial(filepath.Join(dataDir, "madial_bench"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for lang, set := range sets {
		mems := map[string]any{}
		for u, docs := range set.memories {
			var ds []any
			for _, d := range docs {
				ds = append(ds, map[string]any{"id": d.ID, "text": d.Text, "terms": search.Terms(d.Text)})
			}
			mems[fmt.Sprint(u)] = ds
		}
		var qs []any
		for _, q := range set.queries {
			qs = append(qs, map[string]any{"user": fmt.Sprint(q.user), "query": q.query, "terms": search.Terms(q.query), "gold": q.gold})
		}
		out[lang] = map[string]any{"mems": mems, "queries": qs}
	}
	b, _ := json.Marshal(out)
	os.WriteFile(path, b, 0o644)
}
