package compress

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/internal/metrics"
)

// A compression is several LLM calls (one per group of turns, then the reduce). When its worker
// dies or a call fails after others succeeded, the pressure event is redelivered and the
// compression starts again. memoChat keeps every answer in the memo bucket under the summary it
// is for, so the next attempt asks the model only what no earlier attempt got an answer to. The
// memo of a summary is deleted once the summary is stored; forget purges a session's memo with
// the rest of the session; the bucket's TTL removes what a compression that never finished left.

// memoScope names the summary an LLM call works for: "<tenant>.<session>.<summary hash>".
type memoScope struct {
	prefix string
	made   atomic.Int64
	reused atomic.Int64
}

type memoKey struct{}

// withMemo scopes the LLM calls made with ctx to one summary of a session.
func withMemo(ctx context.Context, tenant, session, summaryID string) (context.Context, *memoScope) {
	h := sha256.Sum256([]byte(summaryID))
	sc := &memoScope{prefix: tenant + "." + session + "." + hex.EncodeToString(h[:8])}
	return context.WithValue(ctx, memoKey{}, sc), sc
}

// memoRecord is a remembered answer.
type memoRecord struct {
	Key     string `json:"key"` // the record's own key: a value under another key is not used
	Content string `json:"content"`
	Model   string `json:"model,omitempty"`
}

// memoChat answers a call from the memo when an earlier attempt got its answer, and remembers
// every new answer.
type memoChat struct {
	next    Chat
	js      jetstream.JetStream
	bucket  string
	kv      jetstream.KeyValue
	metrics *metrics.Metrics
	log     zerolog.Logger
}

var _ Chat = (*memoChat)(nil)

// requestKey hashes everything that shapes the answer.
func requestKey(req llm.Request) (string, error) {
	data, err := json.Marshal(struct {
		Messages    []llm.Message
		MaxTokens   int
		JSON        bool
		Temperature *float64
		Purpose     string
	}{req.Messages, req.MaxTokens, req.JSON, req.Temperature, req.Purpose})
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:16]), nil
}

// Complete implements Chat.
func (c *memoChat) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	sc, _ := ctx.Value(memoKey{}).(*memoScope)
	if sc == nil {
		return c.next.Complete(ctx, req)
	}
	h, err := requestKey(req)
	if err != nil {
		return c.next.Complete(ctx, req)
	}
	key := sc.prefix + "." + h
	gctx, cancel := op(ctx)
	e, err := c.kv.Get(gctx, key)
	cancel()
	if err == nil {
		var r memoRecord
		if json.Unmarshal(e.Value(), &r) == nil && r.Key == key {
			sc.reused.Add(1)
			c.metrics.CompressionCall("reused")
			return llm.Response{Content: r.Content, Model: r.Model}, nil
		}
		c.log.Warn().Str("key", key).Msg("ignoring an unreadable memo record")
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		c.log.Debug().Err(err).Str("key", key).Msg("reading the memo; asking the model")
	}
	resp, err := c.next.Complete(ctx, req)
	if err != nil {
		return resp, err
	}
	sc.made.Add(1)
	c.metrics.CompressionCall("made")
	data, _ := json.Marshal(memoRecord{Key: key, Content: resp.Content, Model: resp.Model})
	pctx, cancel := op(ctx)
	_, perr := c.kv.Put(pctx, key, data)
	cancel()
	if perr != nil {
		c.log.Warn().Err(perr).Str("key", key).Msg("remembering an LLM answer; a retry would ask again")
	}
	return resp, nil
}

// forget deletes the memo of a summary once it is stored.
func (c *memoChat) forget(ctx context.Context, sc *memoScope) error {
	if _, err := archive.PurgeKV(ctx, c.js, c.bucket, sc.prefix+".>"); err != nil {
		return fmt.Errorf("clearing the memo of %s: %w", sc.prefix, err)
	}
	return nil
}
