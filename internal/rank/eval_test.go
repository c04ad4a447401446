package rank

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/search"
)

// dataDir holds the shared development sets (see its README.md and baselines.md).
const dataDir = "/work/shared/data"

// ranker ranks the documents of one user for a query and returns their ids, best first.
type ranker interface {
	rank(docs []Doc, query string) []string
}

// method is a ranking method under evaluation; a nil ranker skips that data set.
type method struct {
	name        string
	lme, zh, en ranker
}

// all returns the method that ranks every data set with r.
func all(name string, r ranker) method { return method{name, r, r, r} }

// cfgRanker ranks with an Index of the given configuration.
type cfgRanker Config

func (c cfgRanker) rank(docs []Doc, query string) []string {
	ix := NewIndex(Config(c))
	ix.Add(docs...)
	hits := ix.Search(query, 50)
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	return ids
}

// plainBM25 ranks with internal/search's index, the retriever's current method: the baseline.
type plainBM25 struct{}

func (plainBM25) rank(docs []Doc, query string) []string {
	ix := search.NewIndex()
	for _, d := range docs {
		ix.Add(d.ID, d.Text)
	}
	hits := ix.Search(query, 50)
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	return ids
}

// refBM25 is plain BM25 (k1 = 1.2, b = 0.75) with a simple tokenizer, ties in document
// order: it reproduces the figures of baselines.md, which validates the metric code here.
type refBM25 struct {
	tokens func(string) []string
	dedup  bool // count a repeated query term once
}

var (
	wordRE  = regexp.MustCompile(`\w+`)
	hanOrAl = regexp.MustCompile(`\p{Han}+|[a-zA-Z0-9]+`)
)

// refWords is lower-cased \w+ words, as baselines.md's LongMemEval figures.
func refWords(s string) []string { return wordRE.FindAllString(strings.ToLower(s), -1) }

// refWordsStop is refWords without internal/search's English stop words.
func refWordsStop(s string) []string {
	return slices.DeleteFunc(refWords(s), func(w string) bool { return len(search.Terms(w)) == 0 })
}

// refBigrams is the character bigrams of each Han run (a one-character run as itself) and
// lower-cased alphanumeric words, as baselines.md's MADial zh figures.
func refBigrams(s string) []string {
	var out []string
	for _, run := range hanOrAl.FindAllString(s, -1) {
		r := []rune(run)
		if r[0] < 0x80 {
			out = append(out, strings.ToLower(run))
			continue
		}
		if len(r) == 1 {
			out = append(out, run)
		}
		for i := 0; i+1 < len(r); i++ {
			out = append(out, string(r[i:i+2]))
		}
	}
	return out
}

func (r refBM25) rank(docs []Doc, query string) []string {
	const k1, b = 1.2, 0.75
	toks := make([][]string, len(docs))
	df := map[string]int{}
	total := 0
	for i, d := range docs {
		toks[i] = r.tokens(d.Text)
		total += len(toks[i])
		seen := map[string]bool{}
		for _, t := range toks[i] {
			if !seen[t] {
				seen[t] = true
				df[t]++
			}
		}
	}
	q := r.tokens(query)
	if r.dedup {
		seen := map[string]bool{}
		q = slices.DeleteFunc(q, func(t string) bool { dup := seen[t]; seen[t] = true; return dup })
	}
	n, avg := float64(len(docs)), float64(total)/float64(len(docs))
	scores := make([]float64, len(docs))
	for i := range docs {
		tf := map[string]int{}
		for _, t := range toks[i] {
			tf[t]++
		}
		for _, t := range q {
			if f := float64(tf[t]); f > 0 {
				idf := math.Log(1 + (n-float64(df[t])+0.5)/(float64(df[t])+0.5))
				scores[i] += idf * f * (k1 + 1) / (f + k1*(1-b+b*float64(len(toks[i]))/avg))
			}
		}
	}
	order := make([]int, len(docs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return scores[order[a]] > scores[order[b]] })
	ids := make([]string, 0, 50)
	for _, i := range order[:min(50, len(order))] {
		ids = append(ids, docs[i].ID)
	}
	return ids
}

// ---- LongMemEval ----

type lmeQuestion struct {
	id, qtype, question string
	date                time.Time
	docs                []Doc
	answerSessions      []string
	answerTurns         map[string]bool
}

func loadLongMemEval(path string) ([]lmeQuestion, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var items []struct {
		QuestionID     string   `json:"question_id"`
		QuestionType   string   `json:"question_type"`
		Question       string   `json:"question"`
		QuestionDate   string   `json:"question_date"`
		SessionIDs     []string `json:"haystack_session_ids"`
		Dates          []string `json:"haystack_dates"`
		AnswerSessions []string `json:"answer_session_ids"`
		Sessions       [][]struct {
			Role      string `json:"role"`
			Content   string `json:"content"`
			HasAnswer bool   `json:"has_answer"`
		} `json:"haystack_sessions"`
	}
	if err := json.NewDecoder(zr).Decode(&items); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	parse := func(s string) time.Time {
		t, _ := time.Parse("2006/01/02 (Mon) 15:04", s)
		return t
	}
	var out []lmeQuestion
	for _, it := range items {
		if strings.HasSuffix(it.QuestionID, "_abs") {
			continue
		}
		q := lmeQuestion{id: it.QuestionID, qtype: it.QuestionType, question: it.Question,
			date: parse(it.QuestionDate), answerSessions: it.AnswerSessions, answerTurns: map[string]bool{}}
		for i, sess := range it.Sessions {
			sid := it.SessionIDs[i]
			var at time.Time
			if i < len(it.Dates) {
				at = parse(it.Dates[i])
			}
			for j, tr := range sess {
				id := sid + "#" + strconv.Itoa(j)
				q.docs = append(q.docs, Doc{ID: id, Text: tr.Content, Group: sid, Pos: j, Role: tr.Role,
					Time: at.Add(time.Duration(j) * time.Second), Kind: "turn"})
				if tr.HasAnswer {
					q.answerTurns[id] = true
				}
			}
		}
		out = append(out, q)
	}
	return out, nil
}

// sessionOf returns the session of a LongMemEval turn id.
func sessionOf(id string) string {
	return id[:strings.LastIndexByte(id, '#')]
}

// lmeScores are the metrics of one question: S-R_all and T-R_any at 5 and 10.
type lmeScores [4]float64

func scoreLME(q *lmeQuestion, ranked []string) lmeScores {
	var out lmeScores
	for i, k := range []int{5, 10} {
		top := ranked[:min(k, len(ranked))]
		sessions := map[string]bool{}
		anyTurn := false
		for _, id := range top {
			sessions[sessionOf(id)] = true
			anyTurn = anyTurn || q.answerTurns[id]
		}
		all := true
		for _, s := range q.answerSessions {
			all = all && sessions[s]
		}
		if all {
			out[i] = 1
		}
		if anyTurn {
			out[2+i] = 1
		}
	}
	return out
}

// parallel runs f(i) for i in [0,n) on every CPU.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

func evalLME(qs []lmeQuestion, r ranker) (byType map[string]lmeScores, counts map[string]int, perQ []lmeScores) {
	perQ = make([]lmeScores, len(qs))
	parallel(len(qs), func(i int) {
		perQ[i] = scoreLME(&qs[i], r.rank(qs[i].docs, qs[i].question))
	})
	byType, counts = map[string]lmeScores{}, map[string]int{}
	for i, q := range qs {
		for _, key := range []string{q.qtype, "all"} {
			s := byType[key]
			for j := range s {
				s[j] += perQ[i][j]
			}
			byType[key] = s
			counts[key]++
		}
	}
	for key, s := range byType {
		for j := range s {
			s[j] /= float64(counts[key])
		}
		byType[key] = s
	}
	return byType, counts, perQ
}

// ---- MADial-Bench ----

type madialQuery struct {
	lang  string
	user  int
	query string
	gold  []string
}

type madialSet struct {
	memories map[int][]Doc // user → own memories
	queries  []madialQuery
}

func readJSONLines(path string, f func(line []byte) error) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		if err := f(sc.Bytes()); err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
	}
	return sc.Err()
}

type madialMemory struct {
	Time   string `json:"time"`
	Event  string `json:"event"`
	UserID *int   `json:"user-id"`
}

func loadMemories(path string) (map[string]madialMemory, error) {
	out := map[string]madialMemory{}
	err := readJSONLines(path, func(line []byte) error {
		var m map[string]madialMemory
		if err := json.Unmarshal(line, &m); err != nil {
			return err
		}
		for id, v := range m {
			out[id] = v
		}
		return nil
	})
	return out, err
}

var speakerMarker = regexp.MustCompile(`^<[^>]*>\s*:\s*`)

// madialQueryText is the dialogue before the first test turn, one line per turn without the
// <BOD>/<EOD> markers, the speaker markers and the quotes, cut to its last 1,000 characters.
func madialQueryText(dialogue []string, testTurns []int) string {
	first := slices.Min(testTurns)
	var lines []string
	for _, line := range dialogue[:min(first, len(dialogue))] {
		line = strings.TrimSpace(line)
		if line == "<BOD>" || line == "<EOD>" || line == "" {
			continue
		}
		line = speakerMarker.ReplaceAllString(line, "")
		line = strings.TrimSpace(strings.Trim(strings.TrimSpace(line), "\"“”"))
		lines = append(lines, line)
	}
	r := []rune(strings.Join(lines, "\n"))
	if len(r) > 1000 {
		r = r[len(r)-1000:]
	}
	return string(r)
}

func loadMADial(dir string) (map[string]*madialSet, error) {
	zh, err := loadMemories(filepath.Join(dir, "MADial-Bench-zh-memory.json"))
	if err != nil {
		return nil, err
	}
	en, err := loadMemories(filepath.Join(dir, "MADial-Bench-en-memory.json"))
	if err != nil {
		return nil, err
	}
	sets := map[string]*madialSet{}
	for lang, mems := range map[string]map[string]madialMemory{"zh": zh, "en": en} {
		set := &madialSet{memories: map[int][]Doc{}}
		ids := make([]string, 0, len(mems))
		for id := range mems {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			m := mems[id]
			user := zh[id].UserID // en memories have no user id: take the zh memory's
			if user == nil {
				continue
			}
			at, _ := time.Parse("2006-01-02", m.Time)
			set.memories[*user] = append(set.memories[*user], Doc{ID: id, Text: m.Event, Time: at, Kind: "fact"})
		}
		err := readJSONLines(filepath.Join(dir, "MADial-Bench-"+lang+"-dialogue.json"), func(line []byte) error {
			var d struct {
				Dialogue    []string `json:"dialogue"`
				TestTurn    []int    `json:"test-turn"`
				RelevantIDs []int    `json:"relevant-id"`
				UserID      int      `json:"user-id"`
			}
			if err := json.Unmarshal(line, &d); err != nil {
				return err
			}
			q := madialQuery{lang: lang, user: d.UserID, query: madialQueryText(d.Dialogue, d.TestTurn)}
			for _, g := range d.RelevantIDs {
				q.gold = append(q.gold, strconv.Itoa(g))
			}
			set.queries = append(set.queries, q)
			return nil
		})
		if err != nil {
			return nil, err
		}
		sets[lang] = set
	}
	return sets, nil
}

var madialKs = []int{1, 3, 5, 10, 20}

// evalMADial returns the mean recall at each of madialKs.
func evalMADial(set *madialSet, r ranker) []float64 {
	per := make([][]float64, len(set.queries))
	parallel(len(set.queries), func(i int) {
		q := set.queries[i]
		ranked := r.rank(set.memories[q.user], q.query)
		per[i] = make([]float64, len(madialKs))
		for j, k := range madialKs {
			top := ranked[:min(k, len(ranked))]
			n := 0
			for _, g := range q.gold {
				if slices.Contains(top, g) {
					n++
				}
			}
			per[i][j] = float64(n) / float64(len(q.gold))
		}
	})
	out := make([]float64, len(madialKs))
	for _, p := range per {
		for j := range out {
			out[j] += p[j] / float64(len(per))
		}
	}
	return out
}

// ---- the measurement ----

// devMethods are the methods compared: the baseline, each component alone, and the final
// method.
func devMethods() []method {
	return []method{
		{"baselines.md reproduction (simple tokens)", refBM25{tokens: refWords},
			refBM25{tokens: refBigrams, dedup: true}, refBM25{tokens: refWordsStop, dedup: true}},
		all("plain BM25 (internal/search)", plainBM25{}),
		all("rank: BM25 only", cfgRanker(Config{QueryK3: Off, AgentTurn: Off, Session: Off, Diversity: Off})),
		all("rank: final", cfgRanker(Config{})),
		all("rank: final max16", cfgRanker(Config{MaxQueryTerms: 16})),
		all("rank: final max24", cfgRanker(Config{MaxQueryTerms: 24})),
		all("rank: final max32", cfgRanker(Config{MaxQueryTerms: 32})),
		all("rank: final max48", cfgRanker(Config{MaxQueryTerms: 48})),
		all("rank: final max64", cfgRanker(Config{MaxQueryTerms: 64})),
	}
}

// TestDevSets measures the ranking methods on the development sets and prints the tables; it
// asserts nothing about the numbers. It skips when the data is absent, in -short mode and under
// the race detector.
func TestDevSets(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a measurement over the development sets (a minute, ten under the race detector); " +
			"run it with: go test -run TestDevSets -v ./internal/rank/")
	}
	lmePath := filepath.Join(dataDir, "longmemeval", "longmemeval_s_dev.json.gz")
	qs, err := loadLongMemEval(lmePath)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("development data not found under %s: nothing to measure", dataDir)
	}
	if err != nil {
		t.Fatal(err)
	}
	sets, err := loadMADial(filepath.Join(dataDir, "madial_bench"))
	if err != nil {
		t.Fatal(err)
	}
	methods := devMethods()
	if only := os.Getenv("RANK_METHODS"); only != "" {
		re := regexp.MustCompile(only)
		methods = slices.DeleteFunc(methods, func(m method) bool { return !re.MatchString(m.name) })
	}

	madial := map[string][]string{}
	var lme strings.Builder
	for _, m := range methods {
		for lang, r := range map[string]ranker{"zh": m.zh, "en": m.en} {
			if r != nil {
				madial[lang] = append(madial[lang], fmt.Sprintf("%-44s %s %s", m.name, lang, fmtFloats(evalMADial(sets[lang], r))))
			}
		}
		if m.lme == nil {
			continue
		}
		start := time.Now()
		byType, counts, _ := evalLME(qs, m.lme)
		all := byType["all"]
		types := make([]string, 0, len(byType))
		for k := range byType {
			if k != "all" {
				types = append(types, k)
			}
		}
		sort.Strings(types)
		var per []string
		for _, ty := range types {
			per = append(per, fmt.Sprintf("%s(%d) %.2f/%.2f", abbrev(ty), counts[ty], byType[ty][1], byType[ty][3]))
		}
		fmt.Fprintf(&lme, "%-44s %8.3f %8.3f %8.3f %8.3f | %s  [%s]\n", m.name, all[0], all[1], all[2], all[3],
			strings.Join(per, " "), time.Since(start).Round(time.Millisecond))
	}
	mad := strings.Join(madial["zh"], "\n") + "\n" + strings.Join(madial["en"], "\n")
	t.Logf("\nLongMemEval-S dev, %d questions: S-R_all and T-R_any over the distinct turn ids (baselines.md units)\n%-44s %8s %8s %8s %8s | @10 S-R_all/T-R_any by type\n%s\nMADial-Bench, the user's own memories as candidates: recall@%v\n%s",
		len(qs), "method", "S-all@5", "S-all@10", "T-any@5", "T-any@10", lme.String(), madialKs, mad)
}

func abbrev(qtype string) string {
	switch qtype {
	case "knowledge-update":
		return "KU"
	case "multi-session":
		return "MS"
	case "single-session-assistant":
		return "SSA"
	case "single-session-preference":
		return "SSP"
	case "single-session-user":
		return "SSU"
	case "temporal-reasoning":
		return "TR"
	}
	return qtype
}

func fmtFloats(fs []float64) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = fmt.Sprintf("%.3f", f)
	}
	return strings.Join(s, " ")
}
