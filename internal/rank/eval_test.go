package rank

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
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
				d := Doc{ID: id, Text: tr.Content, Group: sid, Pos: j, Role: tr.Role,
					Time: at.Add(time.Duration(j) * time.Second), Kind: "turn"}
				if j > 0 && sess[j-1].Role != tr.Role {
					d.Context = sess[j-1].Content // as the retriever gives it
				}
				q.docs = append(q.docs, d)
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
// <BOD>/<EOD> markers, the speaker markers and the quotes, cut to its last 1,000 characters;
// the assistant's lines are marked "assistant: " (see ParseQuery), which the cut does not count.
func madialQueryText(dialogue []string, testTurns []int) string {
	first := slices.Min(testTurns)
	var lines []string
	var agent []bool
	for _, line := range dialogue[:min(first, len(dialogue))] {
		line = strings.TrimSpace(line)
		if line == "<BOD>" || line == "<EOD>" || line == "" {
			continue
		}
		agent = append(agent, strings.HasPrefix(line, "<Assistant>"))
		line = speakerMarker.ReplaceAllString(line, "")
		line = strings.TrimSpace(strings.Trim(strings.TrimSpace(line), "\"“”"))
		lines = append(lines, line)
	}
	budget := 1000
	var out []string
	for i := len(lines) - 1; i >= 0 && budget > 0; i-- {
		r := []rune(lines[i])
		if len(r) > budget {
			r = r[len(r)-budget:]
		}
		budget -= len(r) + 1
		l := string(r)
		if agent[i] {
			l = "assistant: " + l
		}
		out = append(out, l)
	}
	slices.Reverse(out)
	return strings.Join(out, "\n")
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

// bm25 is the Index with every component off but those set in c: the base of the "added
// alone" rows.
func bm25(c Config) Config {
	def := func(v *float64) {
		if *v == 0 {
			*v = Off
		}
	}
	def(&c.QueryK3)
	def(&c.AgentTurn)
	def(&c.Session)
	def(&c.Diversity)
	def(&c.SessionRepeat)
	def(&c.Context)
	def(&c.Speaker)
	def(&c.Mention)
	if c.MaxQueryTerms == 0 {
		c.MaxQueryTerms = int(Off)
	}
	return c
}

// devMethods are the methods compared, by section: the baselines, each component added alone
// to BM25, components measured and left out, the final method without each of its
// components, and the final method with one parameter changed.
func devMethods() []method {
	k3 := bm25(Config{QueryK3: DefaultK1})
	return []method{
		{name: "# baselines"},
		{"baselines.md reproduction (simple tokens)", refRanker{tokens: refWords},
			refRanker{tokens: refBigrams, queryTF: -1}, refRanker{tokens: refWordsStop, queryTF: -1}},
		all("BM25 (rank, all components off)", cfgRanker(bm25(Config{}))),

		{name: "# each component added alone to BM25 (the ones left out [out]: to BM25 + k3)"},
		all("+ query tf saturation k3=1.2", cfgRanker(k3)),
		all("+ query term cap 64", cfgRanker(bm25(Config{MaxQueryTerms: DefaultMaxQueryTerms}))),
		all("+ agent turns x0.5", cfgRanker(bm25(Config{AgentTurn: DefaultAgentTurn}))),
		all("+ session evidence lambda=0.5", cfgRanker(bm25(Config{Session: DefaultSession}))),
		all("+ session diversity gamma=0.8", cfgRanker(bm25(Config{Diversity: DefaultDiversity}))),
		all("+ context field w=0.25", cfgRanker(bm25(Config{Context: DefaultContext}))),
		all("+ neighbour context BM25F w=0.25 [out]", refRanker{queryTF: 1.2, neighbour: 0.25}),
		all("+ turn-pair documents [out]", refRanker{queryTF: 1.2, neighbour: 1, pair: true}),
		all("+ RM3 10 docs/10 terms/0.5 [out]", refRanker{queryTF: 1.2, rm3: 10}),
		all("+ word-pair phrases w=0.3 [out]", refRanker{queryTF: 1.2, phrase: 0.3}),
		all("+ LSA k=100 user's docs, fused 0.3 [out]", vecRanker{k3, lsaCosine(100), 0.3}),
		all("+ char n-gram TF-IDF, fused 0.5 [out]", vecRanker{k3, charCosine, 0.5}),

		{name: "# final method, and without each component"},
		all("final (defaults)", cfgRanker(Config{})),
		all("final - query tf saturation", cfgRanker(Config{QueryK3: Off})),
		all("final - agent turn weight", cfgRanker(Config{AgentTurn: Off})),
		all("final - session evidence", cfgRanker(Config{Session: Off})),
		all("final - session diversity", cfgRanker(Config{Diversity: Off})),
		all("final - context field", cfgRanker(Config{Context: Off})),
		all("final - speaker field", cfgRanker(Config{Speaker: Off})),
		all("final - mention weight", cfgRanker(Config{Mention: Off})),
		all("final - query term cap (all terms)", cfgRanker(Config{MaxQueryTerms: int(Off)})),
		all("final + session repeat 0.5 [out]", cfgRanker(Config{SessionRepeat: 0.5})),
		all("final - query speaker weight", cfgRanker(Config{QuerySpeaker: Off})),
		all("final - question words dropped", cfgRanker(Config{KeepQuestionWords: true})),
		all("final + query recency 0.9 [out]", cfgRanker(Config{QueryRecency: 0.9})),
		all("final + Chinese words 0.25 [out]", cfgRanker(Config{ChineseWords: 0.25})),
		all("final + Chinese words 1 [out]", cfgRanker(Config{ChineseWords: 1})),
		all("final + char n-gram TF-IDF 0.5 [out]", vecRanker{Config{}, charCosine, 0.5}),
		all("final + LSA k=100 0.3 [out]", vecRanker{Config{}, lsaCosine(100), 0.3}),
		all("final + WordNet related words 0.3 [out]", cfgRanker(Config{Related: 0.3})),

		{name: "# sensitivity: final with one parameter changed"},
		all("k1=0.9 b=0.4", cfgRanker(Config{K1: 0.9, B: 0.4})),
		all("k1=2.0", cfgRanker(Config{K1: 2})),
		all("b=0.9", cfgRanker(Config{B: 0.9})),
		all("agent turns x0.25", cfgRanker(Config{AgentTurn: 0.25})),
		all("agent turns x0.75", cfgRanker(Config{AgentTurn: 0.75})),
		all("session lambda=0.5", cfgRanker(Config{Session: 0.5})),
		all("session lambda=2", cfgRanker(Config{Session: 2})),
		all("diversity gamma=0.5", cfgRanker(Config{Diversity: 0.5})),
		all("diversity gamma=0.9", cfgRanker(Config{Diversity: 0.9})),
		all("context 0.1", cfgRanker(Config{Context: 0.1})),
		all("context 0.5", cfgRanker(Config{Context: 0.5})),
		all("context on long turns too", cfgRanker(Config{ContextUpTo: int(Off)})),
		all("context gated", cfgRanker(Config{ContextGate: true})),
		all("session repeat 0.25", cfgRanker(Config{SessionRepeat: 0.25})),
		all("diversity gamma=0.05 (one turn a session)", cfgRanker(Config{Diversity: 0.05})),
	}
}

// TestDevSets measures the ranking methods on the development sets and prints the tables; it
// asserts nothing about the numbers. It skips when the data is absent, in -short mode and under
// the race detector.
func TestDevSets(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a measurement over the development sets (three minutes on two cores, far more under the race detector); " +
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

	var lme, mad strings.Builder
	fmt.Fprintf(&lme, "LongMemEval-S dev, %d questions: S-R_all and T-R_any over the distinct turn ids (baselines.md units)\n", len(qs))
	fmt.Fprintf(&lme, "%-44s %7s %7s %7s %7s | @10 S-R_all/T-R_any by question type (count)\n", "method", "S@5", "S@10", "T@5", "T@10")
	fmt.Fprintf(&mad, "MADial-Bench, %d zh and %d en dialogues, the user's own memories as candidates: recall@k\n",
		len(sets["zh"].queries), len(sets["en"].queries))
	fmt.Fprintf(&mad, "%-44s   zh %s |   en %s\n", "method", fmtKs(), fmtKs())
	deadline, hasDeadline := t.Deadline()
	for _, m := range methods {
		if hasDeadline && time.Until(deadline) < 90*time.Second {
			note := fmt.Sprintf("(stopped before %q: the test deadline is near; run with -timeout 30m)\n", m.name)
			lme.WriteString(note)
			mad.WriteString(note)
			break
		}
		if m.lme == nil && m.zh == nil && m.en == nil { // a section title
			fmt.Fprintf(&lme, "%s\n", m.name)
			fmt.Fprintf(&mad, "%s\n", m.name)
			continue
		}
		if m.zh != nil && m.en != nil {
			fmt.Fprintf(&mad, "%-44s %s | %s\n", m.name, fmtFloats(evalMADial(sets["zh"], m.zh)), fmtFloats(evalMADial(sets["en"], m.en)))
		}
		if m.lme == nil {
			continue
		}
		byType, counts, _ := evalLME(qs, m.lme)
		overall := byType["all"]
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
		fmt.Fprintf(&lme, "%-44s %7.3f %7.3f %7.3f %7.3f | %s\n", m.name, overall[0], overall[1], overall[2], overall[3], strings.Join(per, " "))
	}
	t.Logf("\n%s\n%s\n%s", lme.String(), mad.String(), measureIndex(qs, "Final method", Config{})+"\n"+
		measureIndex(qs, "With related words", Config{Related: 0.3}))
}

// measureIndex reports, for the final method over the LongMemEval haystacks (about 500 turns
// each), the memory per document (Bytes, and the Go heap it takes) and the search latency.
func measureIndex(qs []lmeQuestion, name string, cfg Config) string {
	NewIndex(cfg) // loads what the configuration needs once (the related words' table)
	var heap, est, docs int
	var took []time.Duration
	var m0, m1 runtime.MemStats
	for _, q := range qs {
		runtime.GC()
		runtime.ReadMemStats(&m0)
		ix := NewIndex(cfg)
		ix.Add(q.docs...)
		runtime.GC()
		runtime.ReadMemStats(&m1)
		heap += int(m1.HeapAlloc) - int(m0.HeapAlloc)
		est += ix.Bytes()
		docs += ix.Len()
		for range 20 {
			start := time.Now()
			ix.Search(q.question, 10)
			took = append(took, time.Since(start))
		}
		runtime.KeepAlive(ix)
	}
	slices.Sort(took)
	return fmt.Sprintf("%s on the LongMemEval haystacks (%d turns on average): Bytes() %d bytes/turn, Go heap %d bytes/turn; "+
		"search p50 %v, p99 %v", name, docs/len(qs), est/docs, heap/docs, took[len(took)/2], took[len(took)*99/100])
}

func fmtKs() string {
	s := make([]string, len(madialKs))
	for i, k := range madialKs {
		s[i] = fmt.Sprintf("%5s", fmt.Sprintf("@%d", k))
	}
	return strings.Join(s, " ")
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
		s[i] = fmt.Sprintf("%5.3f", f)
	}
	return strings.Join(s, " ")
}
