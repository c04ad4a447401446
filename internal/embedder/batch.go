package embedder

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentmem/agentmem/internal/embed"
	"github.com/agentmem/agentmem/internal/vectors"
)

// batcher gathers the texts of the messages being handled into batches: one Embed call for up to
// size texts, made when the batch is full or wait after its first text arrived. Every caller gets
// its own vector, or the batch's error. Texts to be stored (embedAndStore) are stored by the
// batch: the vectors of one owner and model in one pack, and the packs of the batch in one call
// of store (one atomic write where the bucket allows it), so that a batch costs one disk sync,
// not one per user or per text.
type batcher struct {
	emb  embed.Embedder
	size int
	wait time.Duration
	reqs chan batchReq
	// embedded counts the texts embedded (for the metrics).
	embedded func(n int)
	// store writes packs, each the vectors of one owner and model, and returns each pack's error.
	store func(ctx context.Context, packs [][]vectors.Vector) []error
}

type batchReq struct {
	text string
	// put, when set, names the entry to store the vector as (its Q and Scale are filled in).
	put *vectors.Vector
	// keep, when set, says once the vector is made whether to store it still; a false or an
	// error leaves it unstored (the error goes to the caller).
	keep func(context.Context) (bool, error)
	out  chan batchRes
}

type batchRes struct {
	vec []float32
	err error
}

// embed embeds one text within a batch; it returns when the batch is done or ctx ends.
func (b *batcher) embed(ctx context.Context, text string) ([]float32, error) {
	return b.do(ctx, batchReq{text: text})
}

// embedAndStore embeds text within a batch and stores its vector as entry v (its owner, model, id
// and kind), in a pack with the batch's other vectors of the owner, unless keep, asked once the
// vector is made, says not to; it returns when the pack is stored, or with the batch's, keep's or
// the write's error.
func (b *batcher) embedAndStore(ctx context.Context, text string, v vectors.Vector, keep func(context.Context) (bool, error)) error {
	_, err := b.do(ctx, batchReq{text: text, put: &v, keep: keep})
	return err
}

func (b *batcher) do(ctx context.Context, req batchReq) ([]float32, error) {
	out := make(chan batchRes, 1)
	req.out = out
	select {
	case b.reqs <- req:
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
	if err != nil {
		for _, r := range batch {
			r.out <- batchRes{err: err}
		}
		return
	}
	// The vectors to store, one pack per owner and model, written at once.
	type owner struct{ tenant, user, model string }
	groups := map[owner][]int{}
	var order []owner
	for i, r := range batch {
		if r.put == nil {
			r.out <- batchRes{vec: vecs[i]}
			continue
		}
		if r.keep != nil {
			if ok, err := r.keep(cctx); err != nil || !ok {
				r.out <- batchRes{vec: vecs[i], err: err}
				continue
			}
		}
		r.put.Q, r.put.Scale = vectors.Quantize(vecs[i])
		o := owner{r.put.Tenant, r.put.User, r.put.Model}
		if _, ok := groups[o]; !ok {
			order = append(order, o)
		}
		groups[o] = append(groups[o], i)
	}
	packs := make([][]vectors.Vector, len(order))
	for k, o := range order {
		idx := groups[o]
		packs[k] = make([]vectors.Vector, len(idx))
		for j, i := range idx {
			packs[k][j] = *batch[i].put
		}
	}
	var errs []error
	if len(packs) > 0 {
		errs = b.store(cctx, packs)
	}
	for k, o := range order {
		var err error
		if k < len(errs) {
			err = errs[k]
		}
		for _, i := range groups[o] {
			batch[i].out <- batchRes{vec: vecs[i], err: err}
		}
	}
}
