package eval

import (
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// progress logs "label: done/total" each time another tenth of total is done, or, when report is
// set, calls it with every step instead.
type progress struct {
	log    zerolog.Logger
	label  string
	total  int
	start  time.Time
	report func(done, total int)

	mu   sync.Mutex
	done int
	next int // the next tenth (1-10) to log
}

func newProgress(log zerolog.Logger, label string, total int) *progress {
	return &progress{log: log, label: label, total: total, start: time.Now(), next: 1}
}

func (p *progress) add(n int) {
	if p.total <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	if p.report != nil {
		p.report(p.done, p.total)
		return
	}
	tenth := min(10, p.done*10/p.total)
	if tenth < p.next {
		return
	}
	p.next = tenth + 1
	el := time.Since(p.start)
	p.log.Info().Msgf("%s: %d/%d (%d%%) in %s, %.0f/s", p.label, p.done, p.total, 100*p.done/p.total,
		el.Round(time.Millisecond), float64(p.done)/max(el.Seconds(), 1e-9))
}
