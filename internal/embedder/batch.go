package embedder

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentmem/agentmem/internal/embed"
)

// batcher gathers the texts of the messages being handled into batches: one Embed call for up to
// size texts, made when the batch is full or wait after its first text arrived. Every caller gets
// its own vector, or the batch's error.
type batcher struct {
	emb  embed.Embedder
	size int
	wait time.Duration
	reqs chan batchReq
	// embedded counts the texts embedded (for the metrics).
	embedded func(n int)
}

type batchReq struct {
	text string
	out  chan batchRes
}

type batchRes struct {
	vec []float32
	err error
}

// embed embeds one text within a batch; it returns when the batch is done or ctx ends.
func (b *batcher) embed(ctx context.Context, text string) ([]float32, error) {
	out := make(chan batchRes, 1)
	select {
	case b.reqs <- batchReq{text: text, out: out}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-out:
		return r.vec, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run makes the batches until ctx ends, with up to callsInFlight Embed calls at once (the next
// batch forms while one is being embedded). An embedder in the process (embed.Local) embeds
// what is there at once: waiting to fill a batch only pays for a network round trip.
func (b *batcher) run(ctx context.Context) {
	wait := b.wait
	if l, ok := b.emb.(embed.Local); ok && l.Local() {
		wait = 0
	}
	calls := make(chan struct{}, callsInFlight)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		var batch []batchReq
		select {
		case <-ctx.Done():
			return
		case r := <-b.reqs:
			batch = append(batch, r)
		}
		timer := time.NewTimer(wait)
	fill:
		for len(batch) < b.size {
			select {
			case r := <-b.reqs:
				batch = append(batch, r)
				continue
			default:
			}
			if wait == 0 {
				break
			}
			select {
			case r := <-b.reqs:
				batch = append(batch, r)
			case <-timer.C:
				break fill
			case <-ctx.Done():
				break fill
			}
		}
		timer.Stop()
		calls <- struct{}{}
		wg.Go(func() {
			defer func() { <-calls }()
			b.call(ctx, batch)
		})
	}
}

// callsInFlight bounds the Embed calls made at once.
const callsInFlight = 4

// callTimeout bounds one Embed call of a batch (the embedder's own retries included).
const callTimeout = 2 * time.Minute

func (b *batcher) call(ctx context.Context, batch []batchReq) {
	texts := make([]string, len(batch))
	for i, r := range batch {
		texts[i] = r.text
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	vecs, err := b.emb.Embed(cctx, texts)
	if err == nil && len(vecs) != len(texts) {
		err = fmt.Errorf("embedder %s returned %d vectors for %d texts", b.emb.Name(), len(vecs), len(texts))
	}
	if err == nil && b.embedded != nil {
		b.embedded(len(texts))
	}
	for i, r := range batch {
		if err != nil {
			r.out <- batchRes{err: err}
			continue
		}
		r.out <- batchRes{vec: vecs[i]}
	}
}
