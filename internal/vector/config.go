package vector

import (
	"errors"
	"fmt"
)

// Defaults for the zero fields of a Config.
const (
	DefaultExactBelow     = 20_000
	DefaultM              = 16
	DefaultEfConstruction = 200
	DefaultEfSearch       = 64
)

// ErrInvalidConfig is wrapped by the errors of Config.Validate and New.
var ErrInvalidConfig = errors.New("vector: invalid config")

// Config configures an Index. Only Dim is required; a zero field takes its default.
type Config struct {
	// Dim is the number of dimensions of every vector. Required.
	Dim int
	// ExactBelow is the number of vectors below which searches are exact (brute force). The
	// graph is built when the index grows to ExactBelow vectors and dropped again when it
	// shrinks below ExactBelow/2, so that an index hovering at the threshold does not rebuild
	// on every call. Default 20,000; 1 builds the graph from the first vector.
	ExactBelow int
	// M is the number of graph neighbours per node on the upper layers; the bottom layer keeps
	// up to 2*M. Default 16.
	M int
	// EfConstruction is the size of the candidate list while inserting into the graph. Larger
	// builds a better graph, more slowly. Default 200.
	EfConstruction int
	// EfSearch is the size of the candidate list while searching the graph, raised to k when
	// k is larger. Larger gives better recall, more slowly. Default 64.
	EfSearch int
	// Seed seeds the choice of graph layers. The same sequence of calls builds the same graph,
	// except that a graph rebuilt from thousands of vectors at once is built on all cores and
	// differs in detail (not in quality) from run to run.
	Seed int64
}

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.ExactBelow == 0 {
		c.ExactBelow = DefaultExactBelow
	}
	if c.M == 0 {
		c.M = DefaultM
	}
	if c.EfConstruction == 0 {
		c.EfConstruction = DefaultEfConstruction
	}
	if c.EfSearch == 0 {
		c.EfSearch = DefaultEfSearch
	}
	return c
}

// Validate reports the first bad field of c, after defaults are applied, as an error wrapping
// ErrInvalidConfig.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Dim <= 0:
		return fmt.Errorf("%w: Dim must be positive, got %d", ErrInvalidConfig, c.Dim)
	case c.ExactBelow < 0:
		return fmt.Errorf("%w: ExactBelow must not be negative, got %d", ErrInvalidConfig, c.ExactBelow)
	case c.M < 2 || c.M > maxM:
		return fmt.Errorf("%w: M must be between 2 and %d, got %d", ErrInvalidConfig, maxM, c.M)
	case c.EfConstruction < 1:
		return fmt.Errorf("%w: EfConstruction must be positive, got %d", ErrInvalidConfig, c.EfConstruction)
	case c.EfSearch < 1:
		return fmt.Errorf("%w: EfSearch must be positive, got %d", ErrInvalidConfig, c.EfSearch)
	}
	return nil
}

// maxM bounds M so that neighbour counts fit the graph's int32 link slots comfortably.
const maxM = 1 << 10
