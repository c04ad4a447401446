package metrics

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmem/agentmem/pkg/events"
)

// Lag is where one durable consumer stands on its stream.
type Lag struct {
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	// Pending is how many messages the consumer has not been delivered yet (its lag).
	Pending uint64 `json:"pending"`
	// AckPending is how many were delivered and await an acknowledgement.
	AckPending int `json:"ack_pending"`
	// Redelivered is how many of those were delivered more than once.
	Redelivered int `json:"redelivered"`
	// Waiting is how many pull requests wait for messages (workers idle on it).
	Waiting int `json:"waiting"`
}

// ConsumerLag lists the lag of every durable consumer on the topology's event streams (turns,
// pressure, summaries, facts), sorted by stream and consumer. keep, when not nil, picks the consumers.
func ConsumerLag(ctx context.Context, js jetstream.JetStream, topo events.Topology, keep func(stream, consumer string) bool) ([]Lag, error) {
	var out []Lag
	for _, stream := range []string{topo.TurnsStream(), topo.PressureStream(), topo.SummaryStream(), topo.FactStream()} {
		s, err := js.Stream(ctx, stream)
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", stream, err)
		}
		infos := s.ListConsumers(ctx)
		for ci := range infos.Info() {
			if keep != nil && !keep(stream, ci.Name) {
				continue
			}
			out = append(out, Lag{Stream: stream, Consumer: ci.Name, Pending: ci.NumPending,
				AckPending: ci.NumAckPending, Redelivered: ci.NumRedelivered, Waiting: ci.NumWaiting})
		}
		if err := infos.Err(); err != nil {
			return nil, fmt.Errorf("listing consumers of %s: %w", stream, err)
		}
	}
	slices.SortFunc(out, func(a, b Lag) int {
		if a.Stream != b.Stream {
			if a.Stream < b.Stream {
				return -1
			}
			return 1
		}
		if a.Consumer < b.Consumer {
			return -1
		}
		if a.Consumer > b.Consumer {
			return 1
		}
		return 0
	})
	return out, nil
}

// LagCollector reports, at every scrape, the lag of the topology's durable consumers (those
// keep picks; all when nil) and the size of its streams and buckets. A scrape waits at most
// timeout for the server; when it does not answer, the scrape reports
// agentmem_jetstream_scrape_errors_total and what it has.
func LagCollector(js jetstream.JetStream, topo events.Topology, keep func(stream, consumer string) bool, timeout time.Duration) prometheus.Collector {
	return &lagCollector{js: js, topo: topo, keep: keep, timeout: timeout,
		errors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "jetstream_scrape_errors_total",
			Help: "Scrapes that could not read consumer or stream state from JetStream."}),
	}
}

type lagCollector struct {
	js      jetstream.JetStream
	topo    events.Topology
	keep    func(stream, consumer string) bool
	timeout time.Duration
	errors  prometheus.Counter
}

var (
	pendingDesc = prometheus.NewDesc(Namespace+"_consumer_pending_messages",
		"Messages of the stream the durable consumer has not been delivered yet (its lag).", []string{"stream", "consumer"}, nil)
	ackPendingDesc = prometheus.NewDesc(Namespace+"_consumer_ack_pending_messages",
		"Messages delivered to the consumer and not acknowledged yet.", []string{"stream", "consumer"}, nil)
	redeliveredDesc = prometheus.NewDesc(Namespace+"_consumer_redelivered_messages",
		"Unacknowledged messages delivered more than once.", []string{"stream", "consumer"}, nil)
	streamMsgsDesc = prometheus.NewDesc(Namespace+"_stream_messages",
		"Messages stored in a stream (a bucket's stream counts values and revisions).", []string{"stream"}, nil)
	streamBytesDesc = prometheus.NewDesc(Namespace+"_stream_bytes",
		"Bytes stored in a stream.", []string{"stream"}, nil)
	embedLagDesc = prometheus.NewDesc(Namespace+"_embed_lag_messages",
		"Messages the embedding stage has not finished (pending plus unacknowledged on its consumers of turns, summaries and facts): entries not embedded yet.", nil, nil)
)

// EmbedLag is the embedding stage's lag: the messages of its consumers (those named
// "<prefix>_embedder_…") not delivered yet or not acknowledged yet; ok is false when lags holds
// none of them (no embedder has started).
func EmbedLag(topo events.Topology, lags []Lag) (n uint64, ok bool) {
	for _, l := range lags {
		if strings.HasPrefix(l.Consumer, topo.Prefix+"_embedder_") {
			n += l.Pending + uint64(max(l.AckPending, 0))
			ok = true
		}
	}
	return n, ok
}

func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{pendingDesc, ackPendingDesc, redeliveredDesc, streamMsgsDesc, streamBytesDesc, embedLagDesc} {
		ch <- d
	}
	c.errors.Describe(ch)
}

func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	lags, err := ConsumerLag(ctx, c.js, c.topo, c.keep)
	if err != nil {
		c.errors.Inc()
	}
	for _, l := range lags {
		ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(l.Pending), l.Stream, l.Consumer)
		ch <- prometheus.MustNewConstMetric(ackPendingDesc, prometheus.GaugeValue, float64(l.AckPending), l.Stream, l.Consumer)
		ch <- prometheus.MustNewConstMetric(redeliveredDesc, prometheus.GaugeValue, float64(l.Redelivered), l.Stream, l.Consumer)
	}
	if n, ok := EmbedLag(c.topo, lags); ok && err == nil {
		ch <- prometheus.MustNewConstMetric(embedLagDesc, prometheus.GaugeValue, float64(n))
	}
	t := c.topo
	streams := []string{t.TurnsStream(), t.PressureStream(), t.SummaryStream(), t.FactStream(), t.DeadLetterStream()}
	for _, b := range []string{t.SessionBucket(), t.ChunkBucket(), t.LongTermBucket(), t.UsageBucket(), t.VectorBucket(), t.ViewBucket()} {
		streams = append(streams, "KV_"+b)
	}
	for _, name := range streams {
		s, err := c.js.Stream(ctx, name)
		if err != nil {
			c.errors.Inc()
			continue
		}
		st := s.CachedInfo().State
		ch <- prometheus.MustNewConstMetric(streamMsgsDesc, prometheus.GaugeValue, float64(st.Msgs), name)
		ch <- prometheus.MustNewConstMetric(streamBytesDesc, prometheus.GaugeValue, float64(st.Bytes), name)
	}
	c.errors.Collect(ch)
}

// GaugeFunc returns a gauge read from f at every scrape (a worker's open sessions, its owned
// partitions).
func GaugeFunc(name, help string, f func() float64) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, f)
}
