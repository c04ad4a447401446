package rank

// Config holds the parameters of the ranking method. Zero fields take the defaults
// (withDefaults); a negative weight turns its component off.
type Config struct {
	K1 float64 // BM25 term-frequency saturation (default 1.2)
	B  float64 // BM25 length normalisation (default 0.75)

	// QueryK3 saturates a term repeated in the query: weight (k3+1)·qtf/(k3+qtf). Negative: a
	// repeated term counts once.
	QueryK3 float64

	// Neighbour weighs the terms of a turn's neighbours in its group in the turn's context
	// field (BM25F). Negative: off.
	Neighbour float64
	// NeighbourPair restricts context to the turn's pair (user turn + next turn, or a turn + the
	// user turn before it) rather than both neighbours.
	NeighbourPair bool

	// Session weighs the group's (session's) score in a turn's relevance. Negative: off.
	Session float64
	// SessionMax uses the best turn of the group as its score instead of BM25 over the group.
	SessionMax bool

	// Diversity multiplies a turn's relevance by Diversity^n, n = turns of its group ranked
	// above it. Negative or 1: off.
	Diversity float64

	// PRF: pseudo-relevance feedback (RM3) from the top PRFDocs documents, PRFTerms expansion
	// terms mixed in with weight PRFWeight. PRFDocs negative: off.
	PRFDocs   int
	PRFTerms  int
	PRFWeight float64

	// Assistant multiplies the turn score of assistant turns. Zero: 1 (no change).
	Assistant float64

	// MaxDF drops query terms found in more than this fraction of documents. Negative: keep all.
	MaxDF float64
}

func (c Config) withDefaults() Config {
	if c.K1 == 0 {
		c.K1 = 1.2
	}
	if c.B == 0 {
		c.B = 0.75
	}
	if c.QueryK3 == 0 {
		c.QueryK3 = -1
	}
	if c.Neighbour == 0 {
		c.Neighbour = -1
	}
	if c.Session == 0 {
		c.Session = -1
	}
	if c.Diversity == 0 {
		c.Diversity = -1
	}
	if c.PRFDocs == 0 {
		c.PRFDocs = -1
	}
	if c.PRFTerms == 0 {
		c.PRFTerms = 10
	}
	if c.PRFWeight == 0 {
		c.PRFWeight = 0.5
	}
	if c.Assistant == 0 {
		c.Assistant = 1
	}
	if c.MaxDF == 0 {
		c.MaxDF = -1
	}
	return c
}
