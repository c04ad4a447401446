package session

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/agentmem/agentmem/internal/wire"
	"github.com/agentmem/agentmem/pkg/memory"
)

// Chunks are stored in a compact binary form (EncodeChunk). Chunks written before it are JSON and
// are still read (DecodeChunk tells them apart by their first byte: a JSON chunk starts with '{').
// Every reader of a session decodes all of its chunks (a cold retriever decodes those of every
// session of a user), and JSON decoding was about a third of a cold load's CPU.
//
//	0xC1 1                      magic, version
//	str tenant, str session, str prev, uvarint n, uvarint len(ops)
//	per op: str kind, uvarint fields (opSeq, opID, …), then the fields present, in that order
//	entry:  uvarint fields (entID, …), then the fields present, in that order
//	str:    uvarint length, bytes; time: varint unix nanoseconds, varint zone offset in seconds
//
// A metadata map is kept as its JSON, so it decodes exactly as a JSON chunk's does.
const (
	chunkMagic   = 0xC1
	chunkVersion = 1
)

// Fields present in an encoded op.
const (
	opSeq = 1 << iota
	opID
	opEntry
	opBudget
	opUser
	opIDs
	opReason
	opTime
)

// Fields present in an encoded entry.
const (
	entID = 1 << iota
	entType
	entContent
	entTimestamp
	entTokens
	entRole
	entSeq
	entProvenance
	entMetadata
)

// EncodeChunk returns the binary form of c, as Store.Commit writes it.
func EncodeChunk(c Chunk) ([]byte, error) {
	b := []byte{chunkMagic, chunkVersion}
	b = wire.AppendText(b, c.Tenant)
	b = wire.AppendText(b, c.Session)
	b = wire.AppendText(b, c.Prev)
	b = binary.AppendUvarint(b, uint64(max(c.N, 0)))
	b = binary.AppendUvarint(b, uint64(len(c.Ops)))
	for _, op := range c.Ops {
		var err error
		if b, err = appendOp(b, op); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// present is bit when a field is set, else 0: the presence masks of ops and entries.
func present(bit uint64, set bool) uint64 {
	if set {
		return bit
	}
	return 0
}

func appendOp(b []byte, op Op) ([]byte, error) {
	f := present(opSeq, op.Seq != 0) | present(opID, op.ID != "") | present(opEntry, op.Entry != nil) |
		present(opBudget, op.Budget != 0) | present(opUser, op.User != "") | present(opIDs, len(op.IDs) > 0) |
		present(opReason, op.Reason != "") | present(opTime, !op.Time.IsZero())
	b = wire.AppendText(b, op.Kind)
	b = binary.AppendUvarint(b, f)
	if f&opSeq != 0 {
		b = binary.AppendUvarint(b, op.Seq)
	}
	if f&opID != 0 {
		b = wire.AppendText(b, op.ID)
	}
	if f&opEntry != 0 {
		var err error
		if b, err = appendEntry(b, op.Entry); err != nil {
			return nil, err
		}
	}
	if f&opBudget != 0 {
		b = binary.AppendVarint(b, int64(op.Budget))
	}
	if f&opUser != 0 {
		b = wire.AppendText(b, op.User)
	}
	if f&opIDs != 0 {
		b = appendStrings(b, op.IDs)
	}
	if f&opReason != 0 {
		b = wire.AppendText(b, op.Reason)
	}
	if f&opTime != 0 {
		b = appendTime(b, op.Time)
	}
	return b, nil
}

func appendEntry(b []byte, e *memory.Entry) ([]byte, error) {
	f := present(entID, e.ID != "") | present(entType, e.Type != "") | present(entContent, e.Content != "") |
		present(entTimestamp, !e.Timestamp.IsZero()) | present(entTokens, e.Tokens != 0) | present(entRole, e.Role != "") |
		present(entSeq, e.Seq != 0) | present(entProvenance, len(e.Provenance) > 0) | present(entMetadata, len(e.Metadata) > 0)
	b = binary.AppendUvarint(b, f)
	if f&entID != 0 {
		b = wire.AppendText(b, e.ID)
	}
	if f&entType != 0 {
		b = wire.AppendText(b, string(e.Type))
	}
	if f&entContent != 0 {
		b = wire.AppendText(b, e.Content)
	}
	if f&entTimestamp != 0 {
		b = appendTime(b, e.Timestamp)
	}
	if f&entTokens != 0 {
		b = binary.AppendVarint(b, int64(e.Tokens))
	}
	if f&entRole != 0 {
		b = wire.AppendText(b, e.Role)
	}
	if f&entSeq != 0 {
		b = binary.AppendUvarint(b, e.Seq)
	}
	if f&entProvenance != 0 {
		b = appendStrings(b, e.Provenance)
	}
	if f&entMetadata != 0 {
		md, err := json.Marshal(e.Metadata)
		if err != nil {
			return nil, fmt.Errorf("encoding the metadata of %q: %w", e.ID, err)
		}
		b = wire.AppendText(b, string(md))
	}
	return b, nil
}

func appendStrings(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = wire.AppendText(b, s)
	}
	return b
}

// appendTime keeps the instant and the zone offset (a JSON chunk keeps both in RFC 3339).
func appendTime(b []byte, t time.Time) []byte {
	_, offset := t.Zone()
	b = binary.AppendVarint(b, t.UnixNano())
	return binary.AppendVarint(b, int64(offset))
}

// DecodeChunk decodes a stored chunk, binary or JSON (written before the binary form).
func DecodeChunk(value []byte) (Chunk, error) {
	if len(value) == 0 || value[0] != chunkMagic {
		var c Chunk
		err := json.Unmarshal(value, &c)
		return c, err
	}
	d := decoder{wire.NewReader(value[1:])}
	if v := d.Byte(); v != chunkVersion {
		if d.Err() != nil {
			return Chunk{}, fmt.Errorf("binary chunk: %w", d.Err())
		}
		return Chunk{}, fmt.Errorf("chunk version %d: this build reads version %d", v, chunkVersion)
	}
	c := Chunk{Tenant: d.Text(), Session: d.Text(), Prev: d.Text(), N: d.int()}
	n := d.Count()
	if d.Err() == nil && n > 0 {
		c.Ops = make([]Op, n)
		for i := range c.Ops {
			c.Ops[i] = d.op()
		}
	}
	if d.Err() == nil && d.Len() > 0 {
		d.Fail(fmt.Errorf("%d bytes after the last operation", d.Len()))
	}
	if d.Err() != nil {
		return Chunk{}, fmt.Errorf("binary chunk: %w", d.Err())
	}
	return c, nil
}

// decoder reads the binary form (a wire.Reader: the first error sticks and every later read
// returns zero) with the chunk's own field types.
type decoder struct{ *wire.Reader }

// int reads an unsigned number that must fit an int32 (a chunk's number).
func (d *decoder) int() int {
	v := d.Uvarint()
	if v > math.MaxInt32 {
		d.Fail(fmt.Errorf("number %d out of range", v))
		return 0
	}
	return int(v)
}

func (d *decoder) strings() []string {
	n := d.Count()
	if d.Err() != nil || n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.Text()
	}
	return out
}

func (d *decoder) time() time.Time {
	ns, offset := d.Varint(), d.Varint()
	if d.Err() != nil {
		return time.Time{}
	}
	if offset < -24*3600 || offset > 24*3600 {
		d.Fail(fmt.Errorf("zone offset %d s out of range", offset))
		return time.Time{}
	}
	t := time.Unix(0, ns)
	if offset == 0 {
		return t.UTC()
	}
	return t.In(time.FixedZone("", int(offset)))
}

func (d *decoder) signed() int {
	v := d.Varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.Fail(fmt.Errorf("number %d out of range", v))
		return 0
	}
	return int(v)
}

func (d *decoder) op() Op {
	op := Op{Kind: d.Text()}
	f := d.Uvarint()
	if f&opSeq != 0 {
		op.Seq = d.Uvarint()
	}
	if f&opID != 0 {
		op.ID = d.Text()
	}
	if f&opEntry != 0 {
		op.Entry = d.entry()
	}
	if f&opBudget != 0 {
		op.Budget = d.signed()
	}
	if f&opUser != 0 {
		op.User = d.Text()
	}
	if f&opIDs != 0 {
		op.IDs = d.strings()
	}
	if f&opReason != 0 {
		op.Reason = d.Text()
	}
	if f&opTime != 0 {
		op.Time = d.time()
	}
	if f >= opTime<<1 {
		d.Fail(fmt.Errorf("unknown operation fields %#x", f))
	}
	return op
}

func (d *decoder) entry() *memory.Entry {
	e := &memory.Entry{}
	f := d.Uvarint()
	if f&entID != 0 {
		e.ID = d.Text()
	}
	if f&entType != 0 {
		e.Type = memory.Type(d.Text())
	}
	if f&entContent != 0 {
		e.Content = d.Text()
	}
	if f&entTimestamp != 0 {
		e.Timestamp = d.time()
	}
	if f&entTokens != 0 {
		e.Tokens = d.signed()
	}
	if f&entRole != 0 {
		e.Role = d.Text()
	}
	if f&entSeq != 0 {
		e.Seq = d.Uvarint()
	}
	if f&entProvenance != 0 {
		e.Provenance = d.strings()
	}
	if f&entMetadata != 0 {
		md := d.Text()
		if d.Err() == nil {
			if err := json.Unmarshal([]byte(md), &e.Metadata); err != nil {
				d.Fail(fmt.Errorf("metadata of %q: %w", e.ID, err))
			}
		}
	}
	if f >= entMetadata<<1 {
		d.Fail(fmt.Errorf("unknown entry fields %#x", f))
	}
	return e
}
