package memory

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Decay kinds, as used in Decay.Kind and ParseDecay.
const (
	decayLinear   = "linear"
	decayHalfLife = "halflife"
	decayNone     = "none"
)

// Decay is the time decay of a retrieval score: a factor in [Floor, 1] that
// falls as an entry ages. Floor is above 0, so age lowers a relevant entry's
// score but never swamps its relevance.
type Decay struct {
	// Kind is "linear" (also when empty), "halflife" or "none".
	Kind string
	// Window is the linear decay's length: the factor falls from 1.0 to Floor
	// over Window (default 24h) and stays at Floor after it.
	Window time.Duration
	// Floor is the lowest factor (default 0.5), for linear and halflife.
	Floor float64
	// HalfLife is the halflife decay's half-life: the factor is
	// Floor + (1-Floor) * 0.5^(age/HalfLife).
	HalfLife time.Duration
}

// DefaultDecay returns the decay of the original design: linear from 1.0 to
// 0.5 over the first 24 hours, then 0.5.
func DefaultDecay() Decay {
	return Decay{Kind: decayLinear, Window: 24 * time.Hour, Floor: 0.5}
}

// Factor returns the decay factor for an entry of the given age: 1.0 for an
// age of 0 or less (an entry from the future of the query is not favoured),
// and always within [Floor, 1] (with Floor clamped to [0, 1]), even for an
// invalid Decay. It never fails.
func (d Decay) Factor(age time.Duration) float64 {
	if age <= 0 || d.Kind == decayNone {
		return 1
	}
	floor := d.Floor
	if !(floor >= 0) { // also NaN
		floor = 0
	}
	floor = math.Min(floor, 1)
	var f float64
	switch d.Kind {
	case "", decayLinear:
		if d.Window <= 0 || age >= d.Window {
			return floor
		}
		f = 1 - (1-floor)*(float64(age)/float64(d.Window))
	case decayHalfLife:
		if d.HalfLife <= 0 {
			return floor
		}
		f = floor + (1-floor)*math.Exp2(-float64(age)/float64(d.HalfLife))
	default:
		return 1
	}
	return math.Max(floor, math.Min(1, f))
}

// Validate returns an error naming the bad field when Kind is unknown, Floor
// is outside (0, 1] for linear or halflife, Window is not positive for linear
// or HalfLife is not positive for halflife. A "none" decay is always valid.
func (d Decay) Validate() error {
	switch d.Kind {
	case "", decayLinear:
		if d.Window <= 0 {
			return fmt.Errorf("memory: decay Window is %s, must be positive for linear decay", d.Window)
		}
	case decayHalfLife:
		if d.HalfLife <= 0 {
			return fmt.Errorf("memory: decay HalfLife is %s, must be positive for halflife decay", d.HalfLife)
		}
	case decayNone:
		return nil
	default:
		return fmt.Errorf("memory: decay Kind %q is unknown (allowed: %s, %s, %s)", d.Kind, decayLinear, decayHalfLife, decayNone)
	}
	if !(d.Floor > 0 && d.Floor <= 1) {
		return fmt.Errorf("memory: decay Floor is %v, must be in (0, 1] so that age never swamps relevance", d.Floor)
	}
	return nil
}

// String returns d in the form ParseDecay reads, e.g. "linear:24h0m0s:0.5".
func (d Decay) String() string {
	switch d.Kind {
	case decayNone:
		return decayNone
	case decayHalfLife:
		return fmt.Sprintf("%s:%s:%s", decayHalfLife, d.HalfLife, strconv.FormatFloat(d.Floor, 'g', -1, 64))
	default:
		return fmt.Sprintf("%s:%s:%s", decayLinear, d.Window, strconv.FormatFloat(d.Floor, 'g', -1, 64))
	}
}

// ParseDecay reads a decay spec: "linear:<window>:<floor>" (e.g.
// "linear:24h:0.5"), "halflife:<half-life>:<floor>" (e.g.
// "halflife:168h:0.3") or "none". Durations use time.ParseDuration syntax.
// The floor may be left out (default 0.5), and so may a linear window
// (default 24h); "" gives DefaultDecay. The result is validated: a bad kind,
// duration or floor gives an error naming it.
func ParseDecay(spec string) (Decay, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return DefaultDecay(), nil
	}
	parts := strings.Split(spec, ":")
	kind := strings.ToLower(strings.TrimSpace(parts[0]))
	d := Decay{Kind: kind, Floor: 0.5}
	switch kind {
	case decayNone:
		if len(parts) > 1 {
			return Decay{}, fmt.Errorf("memory: decay %q: none takes no parameters", spec)
		}
		return Decay{Kind: decayNone, Floor: 1}, nil
	case decayLinear:
		d.Window = 24 * time.Hour
	case decayHalfLife:
		if len(parts) < 2 {
			return Decay{}, fmt.Errorf("memory: decay %q: halflife needs a half-life, e.g. halflife:168h:0.3", spec)
		}
	default:
		return Decay{}, fmt.Errorf("memory: decay %q: unknown kind %q (allowed: %s, %s, %s)", spec, parts[0], decayLinear, decayHalfLife, decayNone)
	}
	if len(parts) > 3 {
		return Decay{}, fmt.Errorf("memory: decay %q: too many parts, want %s:<duration>:<floor>", spec, kind)
	}
	if len(parts) >= 2 {
		dur, err := time.ParseDuration(strings.TrimSpace(parts[1]))
		if err != nil {
			return Decay{}, fmt.Errorf("memory: decay %q: bad duration: %w", spec, err)
		}
		if kind == decayLinear {
			d.Window = dur
		} else {
			d.HalfLife = dur
		}
	}
	if len(parts) == 3 {
		f, err := strconv.ParseFloat(strings.TrimSpace(parts[2]), 64)
		if err != nil {
			return Decay{}, fmt.Errorf("memory: decay %q: bad floor: %w", spec, err)
		}
		d.Floor = f
	}
	if err := d.Validate(); err != nil {
		return Decay{}, fmt.Errorf("parsing decay %q: %w", spec, err)
	}
	return d, nil
}

// Sources of retrieved entries.
const (
	// SourceShort is a session's short-term memory, pending entries included.
	SourceShort = "short"
	// SourceLong is a user's long-term facts and summaries.
	SourceLong = "long"
	// SourceArchive is every turn a user published.
	SourceArchive = "archive"
)

// SourceWeight returns the score weight of a source: 1.2 for long-term
// memory, 1.0 for short-term memory, the archive and any unknown source.
func SourceWeight(source string) float64 {
	if source == SourceLong {
		return 1.2
	}
	return 1.0
}
