package rank

import (
	"errors"
	"fmt"
	"math"
)

// Defaults of Config, measured on the development sets (see eval_test.go).
const (
	DefaultK1            = 1.2  // BM25 term-frequency saturation
	DefaultB             = 0.75 // BM25 length normalisation
	DefaultAgentTurn     = 0.5  // weight of a non-user turn's own score
	DefaultSession       = 0.5  // weight of the session's score beside the turn's
	DefaultDiversity     = 0.8  // factor per turn of the same session ranked above
	DefaultSessionRepeat = 0.9  // further factor on the session's part, per turn ranked above
	DefaultContext       = 0.25 // weight of the context field (the turn answered)
	DefaultSpeaker       = 0.5  // weight of the speaker field (the speaker's name)
	DefaultMention       = 0.25 // weight of the addressee's name in a reply to them
	DefaultContextUpTo   = 40   // longest turn (terms) given a context field

	DefaultQueryRecency = 1   // factor per query line after it
	DefaultQuerySpeaker = 0.4 // weight of a query line of another speaker than the user

	DefaultMaxQueryTerms = 64 // query terms scored, the most telling first

	DefaultChineseWords = 0 // weight of Chinese words as terms: off (docs/retrieval.md)
)

// relatedDepth is how far up WordNet's hypernyms the related-words field goes (Config.Related):
// three levels, as far as the table goes (coffee table → table → furniture → furnishing).
const relatedDepth = 3

// Config holds the parameters of the ranking method (see the package comment for the
// formula). Zero fields take the defaults; Off switches a component off.
type Config struct {
	// K1 is BM25's term-frequency saturation (default 1.2).
	K1 float64
	// B is BM25's length normalisation in [0,1] (default 0.75).
	B float64
	// QueryK3 saturates a term repeated in the query: it weighs (k3+1)·qtf/(k3+qtf), so
	// long queries such as a whole dialogue favour their recurring terms without letting them
	// dominate. Default: K1. Off: a repeated term counts once.
	QueryK3 float64
	// AgentTurn multiplies the own score of a turn whose role is neither "user" nor ""
	// (assistant, tool, system) and whose speaker is not named (Doc.Speaker): what a user
	// remembers is mostly what the user said, and agent turns are long and match many terms.
	// A named speaker's turn is a person's whatever its role (two people's conversation sent as
	// the user's and the assistant's turns). In (0,1]; default 0.5; 1 (or Off) disables.
	AgentTurn float64
	// Session is the weight λ of the session's score (BM25 over all the turns of the
	// document's group) beside the turn's own: keyword = (turn + λ·session)/(1+λ).
	// Default DefaultSession; Off: turns are scored alone.
	Session float64
	// Diversity is the factor γ in (0,1] that a turn's relevance is multiplied by for each
	// turn of its own session ranked above it, so that the first results span sessions.
	// Default DefaultDiversity; 1 (or Off) disables.
	Diversity float64
	// SessionRepeat is a further factor δ in (0,1] on the session's part of a turn's score for
	// each turn of its session ranked above it: relevance = γ^n·(own + δ^n·session part). A
	// session's evidence lifts its best turn; the turns after it rank by their own words, so
	// turns that only ride their session's score leave room for other sessions. Default
	// DefaultSessionRepeat; 1 (or Off) disables.
	SessionRepeat float64
	// Context is the weight of a turn's context field (Doc.Context: the end of the turn it
	// answers), scored as BM25 without length normalisation beside the turn's own text, and
	// not in its session's score. Default DefaultContext; Off: no context field.
	Context float64
	// ContextUpTo is the length (terms of its own text) of the longest turn given a context
	// field: a short reply ("No, I learned on my own") needs the question it answers, a long
	// turn says what it is about. Default DefaultContextUpTo; Off: every turn.
	ContextUpTo int
	// ContextGate counts a turn's context only when the turn matches the query by its own
	// words or its speaker's name, so that the context ranks replies among the turns the query
	// finds instead of bringing in every turn after a matching one.
	ContextGate bool
	// Speaker is the weight of a turn's speaker field (Doc.Speaker: the speaker's name, each
	// term once): a question naming a person finds that person's turns by their words and the
	// name. Default DefaultSpeaker; Off: no speaker field.
	Speaker float64
	// Mention in (0,1] multiplies the score of the addressee's name in a turn that answers
	// them (Doc.Addressee): "That's awesome, Dave!" is about Dave less than Dave's own turns
	// are. Default DefaultMention; 1 (or Off): the name counts as any other word.
	Mention float64
	// MaxQueryTerms bounds the query terms scored to those with the highest weight × idf, so
	// that a verbose query (a whole dialogue) costs at most that many postings lists; the
	// others, the most common, still count in the perfect score. Default 64; Off: all.
	MaxQueryTerms int
	// QueryRecency is the factor δ in (0,1] that weighs a query line's terms per line after
	// it: in a dialogue used as a query (one turn a line, oldest first) the last turns say most
	// about what to recall. Line i of n weighs δ^(n−1−i) in the query term frequency.
	// Default DefaultQueryRecency; 1 (or Off) disables.
	QueryRecency float64
	// KeepQuestionWords keeps the Chinese words that ask (什么, 哪里, 为什么 …) in a query, and
	// the character pairs across them. By default they are dropped: the answer does not hold
	// them, and "叫什么名字" would otherwise look for 叫什 and 么名 (MADial zh R@5 0.559 →
	// 0.572 without them, docs/retrieval.md).
	KeepQuestionWords bool
	// Related is the weight of a document's related-words field: the English words that its
	// nouns are a kind of, or a synonym of, in WordNet (package thesaurus: hypernyms up to three
	// levels up), so that a question about furniture finds a turn about a coffee table. An
	// agent's turn has none. Each related word counts once a document, scored as BM25 without
	// length normalisation at the idf of the word over the texts and this field together.
	// Default 0: off, as it lowered LongMemEval S-R_all@5 by 0.010 and MADial en R@10 by 0.001
	// to 0.003 (docs/retrieval.md, "WordNet expansion"); Off: off. It costs an index about 15 %
	// more memory (user turns) and the first index 2.3 MB for the table.
	Related float64
	// QuerySpeaker is the weight in (0,1] of a query line marked with a role other than the
	// user's ("assistant: ..."; see [ParseQuery]): the user's own words say more about the
	// user's memories than the assistant's replies. Default DefaultQuerySpeaker; 1 (or Off)
	// disables.
	QuerySpeaker float64
	// ChineseWords is the weight of a text's Chinese words of three or more characters
	// (search.Words: a dictionary's segmentation of each run of Han characters) as terms of their
	// own beside its character unigrams and bigrams, in documents and queries alike: 大学生 (a
	// college student) then matches 大学生 more than it matches 大学 (a university) and 学生
	// (students) apart. A query word's weight is its saturated repetition times ChineseWords; a
	// document's words do not count in its length. Off by default (0 or Off): on the
	// development sets it changed nothing to speak of at a cost in CPU (docs/retrieval.md,
	// "Chinese words"); a weight > 0 switches it on (the ablation measures 1, a word weighing as
	// much as a bigram).
	ChineseWords float64
}

// Off is the value of a Config field that switches its component off.
const Off = -1.0

// ErrConfig is wrapped by the errors of [Config.Validate].
var ErrConfig = errors.New("rank: invalid config")

func (c Config) withDefaults() Config {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.K1, DefaultK1)
	def(&c.B, DefaultB)
	def(&c.QueryK3, c.K1)
	def(&c.AgentTurn, DefaultAgentTurn)
	def(&c.Session, DefaultSession)
	def(&c.Diversity, DefaultDiversity)
	def(&c.SessionRepeat, DefaultSessionRepeat)
	def(&c.Context, DefaultContext)
	def(&c.Speaker, DefaultSpeaker)
	def(&c.Mention, DefaultMention)
	if c.MaxQueryTerms == 0 {
		c.MaxQueryTerms = DefaultMaxQueryTerms
	}
	if c.ContextUpTo == 0 {
		c.ContextUpTo = DefaultContextUpTo
	}
	def(&c.QueryRecency, DefaultQueryRecency)
	def(&c.QuerySpeaker, DefaultQuerySpeaker)
	if c.QueryRecency == Off {
		c.QueryRecency = 1
	}
	if c.QuerySpeaker == Off {
		c.QuerySpeaker = 1
	}
	if c.AgentTurn == Off {
		c.AgentTurn = 1
	}
	if c.Session == Off {
		c.Session = 0
	}
	if c.Diversity == Off {
		c.Diversity = 1
	}
	if c.SessionRepeat == Off {
		c.SessionRepeat = 1
	}
	if c.Context == Off {
		c.Context = 0
	}
	if c.Speaker == Off {
		c.Speaker = 0
	}
	if c.Mention == Off {
		c.Mention = 1
	}
	if c.Related == Off {
		c.Related = 0
	}
	def(&c.ChineseWords, DefaultChineseWords)
	if c.ChineseWords == Off {
		c.ChineseWords = 0
	}
	return c
}

// Validate reports the first field of c, after defaults, that is out of range.
func (c Config) Validate() error {
	c = c.withDefaults()
	bad := func(field string, v float64, want string) error {
		return fmt.Errorf("%w: %s = %v, want %s", ErrConfig, field, v, want)
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !(c.K1 > 0) || !finite(c.K1):
		return bad("K1", c.K1, "> 0")
	case !(c.B >= 0 && c.B <= 1):
		return bad("B", c.B, "in [0,1]")
	case !(c.QueryK3 > 0 || c.QueryK3 == Off) || !finite(c.QueryK3):
		return bad("QueryK3", c.QueryK3, "> 0 or Off")
	case !(c.AgentTurn > 0 && c.AgentTurn <= 1):
		return bad("AgentTurn", c.AgentTurn, "in (0,1] or Off")
	case !(c.Session >= 0) || !finite(c.Session):
		return bad("Session", c.Session, ">= 0 or Off")
	case !(c.Diversity > 0 && c.Diversity <= 1):
		return bad("Diversity", c.Diversity, "in (0,1] or Off")
	case !(c.SessionRepeat > 0 && c.SessionRepeat <= 1):
		return bad("SessionRepeat", c.SessionRepeat, "in (0,1] or Off")
	case !(c.Context >= 0) || !finite(c.Context):
		return bad("Context", c.Context, ">= 0 or Off")
	case !(c.Speaker >= 0) || !finite(c.Speaker):
		return bad("Speaker", c.Speaker, ">= 0 or Off")
	case !(c.Mention > 0 && c.Mention <= 1):
		return bad("Mention", c.Mention, "in (0,1] or Off")
	case c.ContextUpTo < 0 && c.ContextUpTo != int(Off):
		return bad("ContextUpTo", float64(c.ContextUpTo), "> 0 or Off")
	case !(c.QueryRecency > 0 && c.QueryRecency <= 1):
		return bad("QueryRecency", c.QueryRecency, "in (0,1] or Off")
	case !(c.QuerySpeaker > 0 && c.QuerySpeaker <= 1):
		return bad("QuerySpeaker", c.QuerySpeaker, "in (0,1] or Off")
	case !(c.Related >= 0 || c.Related == Off) || !finite(c.Related):
		return bad("Related", c.Related, ">= 0 or Off")
	case !(c.ChineseWords >= 0) || !finite(c.ChineseWords):
		return bad("ChineseWords", c.ChineseWords, ">= 0 or Off")
	case c.MaxQueryTerms < 0 && c.MaxQueryTerms != int(Off):
		return bad("MaxQueryTerms", float64(c.MaxQueryTerms), "> 0 or Off")
	}
	return nil
}
