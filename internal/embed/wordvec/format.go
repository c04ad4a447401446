package wordvec

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// The vendored file is gzip over this little-endian layout (version 1):
//
//	magic    "agentmem-wordvec" (16 bytes)
//	version  uint32 (1)
//	words    uint32: N, the words in frequency order (most frequent first)
//	dim      uint32: D
//	common   D × float32: the unit direction removed from every sentence vector (zeros: none)
//	N × { len uint8, the word's UTF-8 bytes }
//	N × { scale float32, D × int8 }: component j of word i is scale_i × q_ij
const (
	magic         = "agentmem-wordvec"
	formatVersion = 1
)

// ErrFormat is wrapped by the errors of Read: the data is not a word-vector file this package
// can read.
var ErrFormat = errors.New("wordvec: bad word-vector file")

// Model is a quantised word-vector table: words in frequency order, each with an int8 vector
// and its scale, and the common direction that sentence vectors lose.
type Model struct {
	Words  []string
	Dim    int
	Scales []float32
	Q      []int8    // word i at [i*Dim, (i+1)*Dim)
	Common []float32 // unit length, or nil
}

// Quantize makes a Model of words (most frequent first) and their float vectors of length dim:
// each vector is scaled so that its largest component is ±127 and rounded. The common direction
// is the unit vector of the expected sentence vector, Σ p(w)·weight(w)·v(w) over the words with
// the frequencies and weights Embed uses (see package comment).
func Quantize(words []string, vecs [][]float32, dim int) *Model {
	m := &Model{Words: words, Dim: dim, Scales: make([]float32, len(words)), Q: make([]int8, len(words)*dim)}
	for i, v := range vecs {
		var mx float64
		for _, x := range v {
			mx = max(mx, math.Abs(float64(x)))
		}
		if mx == 0 {
			continue
		}
		s := mx / 127
		m.Scales[i] = float32(s)
		for j, x := range v {
			m.Q[i*dim+j] = int8(math.Round(float64(x) / s))
		}
	}
	mean := make([]float64, dim)
	for i, v := range vecs {
		w := prob(i) * sifWeight(i)
		for j, x := range v {
			mean[j] += w * float64(x)
		}
	}
	var n float64
	for _, x := range mean {
		n += x * x
	}
	if n > 0 {
		n = math.Sqrt(n)
		m.Common = make([]float32, dim)
		for j, x := range mean {
			m.Common[j] = float32(x / n)
		}
	}
	return m
}

// Write writes m in the vendored format, gzipped.
func (m *Model) Write(w io.Writer) error {
	gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(gz)
	bw.WriteString(magic)
	common := m.Common
	if common == nil {
		common = make([]float32, m.Dim)
	}
	for _, v := range []any{uint32(formatVersion), uint32(len(m.Words)), uint32(m.Dim), common} {
		if err := binary.Write(bw, binary.LittleEndian, v); err != nil {
			return err
		}
	}
	for _, word := range m.Words {
		if len(word) > 255 {
			return fmt.Errorf("wordvec: word %q is longer than 255 bytes", word)
		}
		bw.WriteByte(byte(len(word)))
		bw.WriteString(word)
	}
	for i := range m.Words {
		if err := binary.Write(bw, binary.LittleEndian, m.Scales[i]); err != nil {
			return err
		}
		if err := binary.Write(bw, binary.LittleEndian, m.Q[i*m.Dim:(i+1)*m.Dim]); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return gz.Close()
}

// Read reads a Model written by Write. It fails with ErrFormat on anything else.
func Read(r io.Reader) (*Model, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	br := bufio.NewReader(gz)
	head := make([]byte, len(magic))
	if _, err := io.ReadFull(br, head); err != nil || string(head) != magic {
		return nil, fmt.Errorf("%w: no magic", ErrFormat)
	}
	var hdr [3]uint32
	if err := binary.Read(br, binary.LittleEndian, &hdr); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	if hdr[0] != formatVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrFormat, hdr[0], formatVersion)
	}
	n, dim := int(hdr[1]), int(hdr[2])
	if n > 10_000_000 || dim < 1 || dim > 4096 {
		return nil, fmt.Errorf("%w: %d words of %d dimensions", ErrFormat, n, dim)
	}
	m := &Model{Dim: dim, Words: make([]string, n), Scales: make([]float32, n), Q: make([]int8, n*dim)}
	common := make([]float32, dim)
	if err := binary.Read(br, binary.LittleEndian, common); err != nil {
		return nil, fmt.Errorf("%w: common direction: %v", ErrFormat, err)
	}
	for _, x := range common {
		if x != 0 {
			m.Common = common
			break
		}
	}
	buf := make([]byte, 255)
	for i := range m.Words {
		l, err := br.ReadByte()
		if err != nil {
			return nil, fmt.Errorf("%w: word %d: %v", ErrFormat, i, err)
		}
		if _, err := io.ReadFull(br, buf[:l]); err != nil {
			return nil, fmt.Errorf("%w: word %d: %v", ErrFormat, i, err)
		}
		m.Words[i] = string(buf[:l])
	}
	for i := range m.Words {
		if err := binary.Read(br, binary.LittleEndian, &m.Scales[i]); err != nil {
			return nil, fmt.Errorf("%w: vector %d: %v", ErrFormat, i, err)
		}
		if err := binary.Read(br, binary.LittleEndian, m.Q[i*dim:(i+1)*dim]); err != nil {
			return nil, fmt.Errorf("%w: vector %d: %v", ErrFormat, i, err)
		}
	}
	return m, nil
}
