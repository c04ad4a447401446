package vectors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/integrity"
)

// Model completion markers: after a backfill, the key "_models.<model token>" says that every
// entry stored before the backfill started has a vector of the model. A retriever configured with
// a previous model keeps answering with that model's vectors until the marker of its new model
// exists (see retrieve.Config.PreviousEmbedder). The key has two tokens, vectors four, so no
// vector key and no user's key filter ever matches it.

// markerPrefix starts the key of a model completion marker.
const markerPrefix = "_models"

// MarkerKey is the key of the completion marker of model.
func MarkerKey(model string) string { return markerPrefix + "." + ModelToken(model) }

// IsMarkerKey reports whether key is a completion marker, and of which model token.
func IsMarkerKey(key string) (token string, ok bool) {
	rest, found := strings.CutPrefix(key, markerPrefix+".")
	return rest, found && rest != "" && !strings.Contains(rest, ".")
}

// Marker is the value of a completion marker.
type Marker struct {
	Model    string    `json:"model"`
	Complete time.Time `json:"complete"`
	// Entries is how many entries the backfill found; Embedded how many of them it embedded
	// (the others had a vector already).
	Entries  int `json:"entries"`
	Embedded int `json:"embedded"`
}

// Complete reads the completion marker of model; ok is false when there is none.
func (s *Store) Complete(ctx context.Context, model string) (Marker, bool, error) {
	e, err := s.kv.Get(ctx, MarkerKey(model))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Marker{}, false, nil
	}
	if err != nil {
		return Marker{}, false, err
	}
	var m Marker
	if err := json.Unmarshal(e.Value(), &m); err != nil || m.Model != model {
		s.rep.Report(integrity.Undecoded(s.bucket, MarkerKey(model), fmt.Errorf("marker of %q: %v", model, err)))
		return Marker{}, false, nil
	}
	return m, true, nil
}

// MarkComplete writes the completion marker m.Model (Backfill does, once every entry has a vector
// of the model).
func (s *Store) MarkComplete(ctx context.Context, m Marker) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = s.kv.Put(ctx, MarkerKey(m.Model), data)
	return err
}
