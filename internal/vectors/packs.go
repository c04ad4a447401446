package vectors

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/agentmem/agentmem/internal/integrity"
	"github.com/agentmem/agentmem/internal/wire"
	"github.com/agentmem/agentmem/pkg/events"
)

// Packs: the turns' vectors are written several to a value. A value of its own per vector cost
// the server a stored message, its acknowledgement and a watcher delivery to every retriever per
// turn, a third of what a turn costs the pipeline in messages; a pack holds the vectors of one
// user and model embedded in one batch, so those costs are paid per batch. Summaries and facts,
// few and looked up by id before they are embedded, keep a value each (Key).
//
//	key    <tenant>.<user>.<model token>.p.<pack id>      (five tokens; a vector key has four)
//	pack   a unique id (NUID) per write
//
// A pack is written once (KV Create) and never changed; forget purges it with the user's other
// vectors. Which entries a pack holds is in its value only, so a lookup by entry id reads the
// user's packs (the embedding stage keeps an index of them per user).

// packToken is the fourth token of a pack key.
const packToken = "p"

// maxPackBytes bounds the value of one pack; a batch's vectors of one user beyond it are written
// in several packs (the server's default payload limit is 1 MiB).
const maxPackBytes = 512 << 10

// PackKey is the key of pack id of (tenant, user) vectors made by model.
func PackKey(tenant, user, model, id string) string {
	return tenant + "." + user + "." + ModelToken(model) + "." + packToken + "." + id
}

// PackFilter is the key filter of a user's packs of model.
func PackFilter(tenant, user, model string) string {
	return tenant + "." + user + "." + ModelToken(model) + "." + packToken + ".*"
}

const packMagic = 'P'

// EncodePack is the stored form of vectors of one owner and model: the owner and model once
// (checked against the key on every read), then each vector's kind, entry id, scale and int8
// components.
func EncodePack(vs []Vector) []byte {
	if len(vs) == 0 {
		return nil
	}
	size := 16 + len(vs[0].Tenant) + len(vs[0].User) + len(vs[0].Model)
	for _, v := range vs {
		size += 16 + len(v.ID) + len(v.Q)
	}
	b := make([]byte, 0, size)
	b = append(b, packMagic, codecVersion, encodingInt8)
	for _, s := range []string{vs[0].Tenant, vs[0].User, vs[0].Model} {
		b = wire.AppendText(b, s)
	}
	b = binary.AppendUvarint(b, uint64(len(vs)))
	for _, v := range vs {
		b = append(b, v.Kind)
		b = wire.AppendText(b, v.ID)
		b = appendComponents(b, v)
	}
	return b
}

// DecodePack reads a value written by EncodePack.
func DecodePack(b []byte) ([]Vector, error) {
	if len(b) < 3 || b[0] != packMagic {
		return nil, errors.New("vectors: not a vector pack")
	}
	if b[1] != codecVersion || b[2] != encodingInt8 {
		return nil, fmt.Errorf("vectors: vector pack version %d encoding %d unknown", b[1], b[2])
	}
	r := wire.NewReader(b[3:])
	tenant, user, model := r.Text(), r.Text(), r.Text()
	n := r.Uvarint()
	// Each vector takes at least 7 bytes (kind, id length, dimension, scale).
	if r.Err() == nil && n > uint64(r.Len())/7 {
		return nil, errShort
	}
	vs := make([]Vector, 0, n)
	for range n {
		v := Vector{Tenant: tenant, User: user, Model: model, Kind: r.Byte(), ID: r.Text()}
		readComponents(r, &v)
		if r.Err() != nil {
			return nil, fmt.Errorf("vectors: vector pack: %w", r.Err())
		}
		vs = append(vs, v)
	}
	if r.Err() != nil {
		return nil, fmt.Errorf("vectors: vector pack: %w", r.Err())
	}
	if r.Len() != 0 {
		return nil, errors.New("vectors: trailing bytes after a vector pack")
	}
	return vs, nil
}

// PutPack stores vectors of one owner and model (vs[0]'s) as one pack, or several when they
// exceed maxPackBytes, and returns the keys written.
func (s *Store) PutPack(ctx context.Context, vs []Vector) ([]string, error) {
	parts, err := packParts(vs)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, part := range parts {
		key := PackKey(part[0].Tenant, part[0].User, part[0].Model, nuid.Next())
		if _, err := s.kv.Create(ctx, key, EncodePack(part)); err != nil {
			return keys, fmt.Errorf("storing %s: %w", key, err)
		}
		keys = append(keys, key)
	}
	return keys, nil
}

// PutPacks stores several packs (PutPack's vs each) and returns each one's error. At least
// events.MinAtomicBatch packs are written as one JetStream atomic batch when the bucket's stream
// allows it (events.Topology enables it): all or nothing, and on a server that syncs every write,
// one disk sync for the whole batch instead of one per pack. Fewer packs, or a batch that fails
// (a server or bucket without atomic publish, a timeout), are written one by one under the same
// keys; a key the batch stored already counts as written.
func (s *Store) PutPacks(ctx context.Context, packs [][]Vector) []error {
	errs := make([]error, len(packs))
	type write struct {
		pack int
		key  string
		data []byte
	}
	var writes []write
	for k, vs := range packs {
		parts, err := packParts(vs)
		if err != nil {
			errs[k] = err
			continue
		}
		for _, part := range parts {
			writes = append(writes, write{k, PackKey(part[0].Tenant, part[0].User, part[0].Model, nuid.Next()), EncodePack(part)})
		}
	}
	if s.batches && len(writes) >= events.MinAtomicBatch && len(writes) <= events.MaxAtomicBatch {
		msgs := make([]*nats.Msg, len(writes))
		for i, w := range writes {
			msgs[i] = &nats.Msg{Subject: "$KV." + s.bucket + "." + w.key, Data: w.data, Header: nats.Header{}}
		}
		if _, err := jetstreamext.PublishMsgBatch(ctx, s.js, msgs); err == nil {
			return errs
		}
	}
	for _, w := range writes {
		if errs[w.pack] != nil {
			continue
		}
		if _, err := s.kv.Create(ctx, w.key, w.data); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			errs[w.pack] = fmt.Errorf("storing %s: %w", w.key, err)
		}
	}
	return errs
}

// packParts splits vectors of one owner and model into packs of at most maxPackBytes.
func packParts(vs []Vector) ([][]Vector, error) {
	var parts [][]Vector
	for len(vs) > 0 {
		n, size := 0, 0
		for n < len(vs) && (n == 0 || size+len(vs[n].Q)+len(vs[n].ID)+16 <= maxPackBytes) {
			size += len(vs[n].Q) + len(vs[n].ID) + 16
			n++
		}
		part := vs[:n]
		vs = vs[n:]
		for _, v := range part[1:] {
			if v.Tenant != part[0].Tenant || v.User != part[0].User || v.Model != part[0].Model {
				return nil, fmt.Errorf("vectors: a pack holds one owner and model: %s/%s/%s and %s/%s/%s",
					part[0].Tenant, part[0].User, part[0].Model, v.Tenant, v.User, v.Model)
			}
		}
		parts = append(parts, part)
	}
	return parts, nil
}

// Entries decodes the value of a vector key or a pack key and checks it against the key: the
// owner and model of every vector it holds, and a vector's entry. A mismatch or an undecodable
// value is corrupt (the whole value: a pack is written whole).
func (s *Store) Entries(key string, data []byte) ([]Vector, *integrity.Error) {
	k, err := ParseKey(key)
	if err != nil {
		return nil, integrity.Undecoded(s.bucket, key, err)
	}
	if k.Pack == "" {
		v, cerr := s.Check(key, data)
		if cerr != nil {
			return nil, cerr
		}
		return []Vector{v}, nil
	}
	vs, err := DecodePack(data)
	if err != nil {
		return nil, integrity.Undecoded(s.bucket, key, err)
	}
	for _, v := range vs {
		if e := integrity.Mismatch(s.bucket, key, integrity.Tenant, v.Tenant, k.Tenant); e != nil {
			return nil, e
		}
		if e := integrity.Mismatch(s.bucket, key, integrity.User, v.User, k.User); e != nil {
			return nil, e
		}
		if e := integrity.Mismatch(s.bucket, key, integrity.ID, ModelToken(v.Model), k.Model); e != nil {
			return nil, e
		}
	}
	return vs, nil
}
