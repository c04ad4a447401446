package memory

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// maxEnglishTurns bounds how many LongMemEval turns the error measurement
// reads: enough for stable figures, small enough to count exactly in seconds.
const maxEnglishTurns = 5000

// sharedDataDir finds the evaluation data: $AGENTMEM_SHARED_DATA, else the
// first shared/data directory found walking up from the working directory.
func sharedDataDir() (string, error) {
	if d := os.Getenv("AGENTMEM_SHARED_DATA"); d != "" {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return "", fmt.Errorf("AGENTMEM_SHARED_DATA=%s is not a directory", d)
		}
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		p := filepath.Join(dir, "shared", "data")
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no shared/data above %s and AGENTMEM_SHARED_DATA unset", wd)
		}
		dir = parent
	}
}

// readLongMemEvalTurns returns the distinct, non-empty turn contents of the
// haystack sessions, in file order, up to limit.
func readLongMemEvalTurns(path string, limit int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dec := json.NewDecoder(bufio.NewReaderSize(zr, 1<<20))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, fmt.Errorf("%s: want a JSON list, got %v (%v)", path, tok, err)
	}
	seen := map[string]bool{}
	var out []string
	for dec.More() && len(out) < limit {
		var item struct {
			Sessions [][]struct {
				Content string `json:"content"`
			} `json:"haystack_sessions"`
		}
		if err := dec.Decode(&item); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for _, s := range item.Sessions {
			for _, turn := range s {
				if c := turn.Content; c != "" && !seen[c] && len(out) < limit {
					seen[c] = true
					out = append(out, c)
				}
			}
		}
	}
	return out, nil
}

// readJSONLines decodes every JSON value of a JSON-lines file into a new T.
func readJSONLines[T any](path string, each func(T)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	for {
		var v T
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		each(v)
	}
}

// readMADialMemories returns the event texts of a MADial-Bench memory file
// (one {"<id>": {..., "event": "..."}} object per line).
func readMADialMemories(path string) ([]string, error) {
	var out []string
	err := readJSONLines(path, func(m map[string]struct {
		Event string `json:"event"`
	}) {
		for _, v := range m {
			if v.Event != "" {
				out = append(out, v.Event)
			}
		}
	})
	return out, err
}

// readMADialDialogue returns the utterances of a MADial-Bench dialogue file,
// without the <BOD>/<EOD> markers, the "<Speaker>:" prefix and the quotes, as
// an agent would publish them.
func readMADialDialogue(path string) ([]string, error) {
	var out []string
	err := readJSONLines(path, func(d struct {
		Dialogue []string `json:"dialogue"`
	}) {
		for _, line := range d.Dialogue {
			line = strings.TrimSpace(line)
			if line == "<BOD>" || line == "<EOD>" || line == "" {
				continue
			}
			if strings.HasPrefix(line, "<") {
				if i := strings.Index(line, ">:"); i > 0 {
					line = line[i+2:]
				}
			}
			line = strings.TrimSpace(strings.Trim(line, `"“”`))
			if line != "" {
				out = append(out, line)
			}
		}
	})
	return out, err
}

// errorData is the text the estimate error is measured on, with exact counts.
type errorData struct {
	dir          string
	en, zh       []string
	zhMem, zhDia []string
	exact        memoCounter
}

var (
	errorDataOnce sync.Once
	errorDataVal  *errorData
	errorDataErr  error
)

// loadErrorData reads the shared data once per process and counts every text
// exactly, so that benchmark iterations only run the estimate.
func loadErrorData() (*errorData, error) {
	errorDataOnce.Do(func() {
		errorDataVal, errorDataErr = readErrorData()
	})
	return errorDataVal, errorDataErr
}

func readErrorData() (*errorData, error) {
	dir, err := sharedDataDir()
	if err != nil {
		return nil, err
	}
	d := &errorData{dir: dir}
	if d.en, err = readLongMemEvalTurns(filepath.Join(dir, "longmemeval", "longmemeval_s_dev.json.gz"), maxEnglishTurns); err != nil {
		return nil, err
	}
	if d.zhMem, err = readMADialMemories(filepath.Join(dir, "madial_bench", "MADial-Bench-zh-memory.json")); err != nil {
		return nil, err
	}
	if d.zhDia, err = readMADialDialogue(filepath.Join(dir, "madial_bench", "MADial-Bench-zh-dialogue.json")); err != nil {
		return nil, err
	}
	d.zh = append(append([]string{}, d.zhMem...), d.zhDia...)
	o, err := NewO200k()
	if err != nil {
		return nil, err
	}
	d.exact = memoCounter{}
	for _, set := range [][]string{d.en, d.zh} {
		for _, s := range set {
			d.exact[s] = o.Count(s)
		}
	}
	return d, nil
}

// memoCounter answers with exact counts computed beforehand.
type memoCounter map[string]int

func (m memoCounter) Count(s string) int { return m[s] }
func (memoCounter) Name() string         { return "o200k (precomputed)" }

// sumRatio returns total estimated tokens over total exact tokens: the error
// of a budget made of many texts, where per-text errors partly cancel.
func sumRatio(texts []string, exact Counter) float64 {
	var est, ex int
	for _, s := range texts {
		est += Estimate(s)
		ex += exact.Count(s)
	}
	if ex == 0 {
		return 0
	}
	return float64(est) / float64(ex)
}

// BenchmarkEstimateErrorSharedData measures how far Estimate is from o200k_base
// on real conversations: English turns from LongMemEval and Chinese memories
// and utterances from MADial-Bench. Each iteration estimates every text; the
// error figures are reported as metrics (relative errors, signed < 0 means the
// estimate under-counts; sum_ratio is total estimate over total exact).
func BenchmarkEstimateErrorSharedData(b *testing.B) {
	d, err := loadErrorData()
	if err != nil {
		b.Skipf("shared data not found or unreadable (set AGENTMEM_SHARED_DATA): %v", err)
	}
	var en, zh ErrorStats
	for b.Loop() {
		en = MeasureEstimateError(d.en, d.exact)
		zh = MeasureEstimateError(d.zh, d.exact)
	}
	for _, r := range []struct {
		lang  string
		st    ErrorStats
		texts []string
	}{{"en", en, d.en}, {"zh", zh, d.zh}} {
		b.ReportMetric(float64(r.st.N), "texts_"+r.lang)
		b.ReportMetric(r.st.MeanRel, "mean_rel_err_"+r.lang)
		b.ReportMetric(r.st.WorstRel, "worst_rel_err_"+r.lang)
		b.ReportMetric(r.st.MeanSigned, "mean_signed_err_"+r.lang)
		b.ReportMetric(sumRatio(r.texts, d.exact), "sum_ratio_"+r.lang)
	}
	for _, r := range []struct {
		name  string
		texts []string
	}{{"longmemeval turns (en)", d.en}, {"madial memories (zh)", d.zhMem}, {"madial utterances (zh)", d.zhDia}} {
		st := MeasureEstimateError(r.texts, d.exact)
		b.Logf("%s from %s: n=%d mean_rel=%.3f worst_rel=%.3f mean_signed=%+.3f sum_ratio=%.3f",
			r.name, d.dir, st.N, st.MeanRel, st.WorstRel, st.MeanSigned, sumRatio(r.texts, d.exact))
	}
}
