package memory

import (
	"fmt"
	"math"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// Counter counts the tokens of a text. Implementations are safe for
// concurrent use.
type Counter interface {
	// Count returns the number of tokens in text; it is 0 for "".
	Count(text string) int
	// Name returns the name NewCounter accepts for this counter.
	Name() string
}

// Names of the token counters, as accepted by NewCounter.
const (
	estimateName = "estimate"
	o200kName    = "o200k"
)

// Estimate returns the default token estimate of text, ceil(cjk/1.5 +
// other/4), where cjk counts the code points in U+4E00..U+9FFF inclusive and
// other counts every other code point (an invalid UTF-8 byte counts as one
// other code point). It is computed with integers as (8*cjk + 3*other + 11) /
// 12, is 0 for "" and never fails. It under-counts Chinese against real
// tokenizers; see MeasureEstimateError.
func Estimate(text string) int {
	var cjk, other int
	for _, r := range text {
		if r >= 0x4E00 && r <= 0x9FFF {
			cjk++
		} else {
			other++
		}
	}
	return (8*cjk + 3*other + 11) / 12
}

// EstimateCounter is the Counter for Estimate. Its zero value is ready to use.
type EstimateCounter struct{}

// Count returns Estimate(text).
func (EstimateCounter) Count(text string) int { return Estimate(text) }

// Name returns "estimate".
func (EstimateCounter) Name() string { return estimateName }

// O200kCounter counts tokens exactly with the o200k_base encoding (GPT-4o and
// later), loaded from files compiled into the binary, so it never touches the
// network. It is safe for concurrent use.
type O200kCounter struct {
	enc *tiktoken.Tiktoken
}

var (
	o200kOnce sync.Once
	o200kEnc  *tiktoken.Tiktoken
	o200kErr  error
)

// NewO200k returns a Counter for the o200k_base encoding. The encoding is
// loaded once per process (it takes about a second and some tens of MB) and
// shared by every O200kCounter. It fails only when the compiled-in BPE file
// cannot be loaded; the failure is remembered and returned on every call.
func NewO200k() (*O200kCounter, error) {
	o200kOnce.Do(func() {
		tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
		o200kEnc, o200kErr = tiktoken.GetEncoding(tiktoken.MODEL_O200K_BASE)
		if o200kErr != nil {
			o200kErr = fmt.Errorf("memory: loading o200k_base offline: %w", o200kErr)
		}
	})
	if o200kErr != nil {
		return nil, o200kErr
	}
	return &O200kCounter{enc: o200kEnc}, nil
}

// Count returns the number of o200k_base tokens in text. Special tokens such
// as "<|endoftext|>" in text are counted as ordinary text, never rejected.
func (c *O200kCounter) Count(text string) int {
	if text == "" {
		return 0
	}
	return len(c.enc.EncodeOrdinary(text))
}

// Name returns "o200k".
func (*O200kCounter) Name() string { return o200kName }

// NewCounter returns the Counter with the given name: "estimate" (also for "")
// or "o200k". Any other name gives an error that names the allowed values, and
// "o200k" fails as NewO200k does.
func NewCounter(name string) (Counter, error) {
	switch name {
	case "", estimateName:
		return EstimateCounter{}, nil
	case o200kName:
		return NewO200k()
	default:
		return nil, fmt.Errorf("memory: unknown token counter %q (allowed: %s, %s)", name, estimateName, o200kName)
	}
}

// ErrorStats describes how far Estimate is from an exact counter over a set of
// texts. Relative errors are (estimate-exact)/exact.
type ErrorStats struct {
	// N is the number of texts measured (those with an exact count above 0).
	N int
	// MeanRel is the mean absolute relative error.
	MeanRel float64
	// WorstRel is the largest absolute relative error.
	WorstRel float64
	// MeanSigned is the mean signed relative error: below 0 means Estimate
	// under-counts.
	MeanSigned float64
}

// MeasureEstimateError compares Estimate with exact over texts, skipping the
// texts for which exact counts 0 tokens. It returns zero stats when no text is
// measured and never fails.
func MeasureEstimateError(texts []string, exact Counter) ErrorStats {
	var st ErrorStats
	var sumAbs, sumSigned float64
	for _, t := range texts {
		want := exact.Count(t)
		if want <= 0 {
			continue
		}
		rel := float64(Estimate(t)-want) / float64(want)
		st.N++
		sumSigned += rel
		sumAbs += math.Abs(rel)
		st.WorstRel = math.Max(st.WorstRel, math.Abs(rel))
	}
	if st.N > 0 {
		st.MeanRel = sumAbs / float64(st.N)
		st.MeanSigned = sumSigned / float64(st.N)
	}
	return st
}
