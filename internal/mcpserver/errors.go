package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// toolError turns the error of a call to an agentmem service (what, reached on where) into the
// message a model reads in the tool result (isError): what failed and whether trying again can
// help. The SDK reports it as a tool result, not as a protocol error.
func (s *Server) toolError(tool, what, where string, err error) error {
	s.log.Warn().Err(err).Str("tool", tool).Msg("tool failed")
	var se *client.ServiceError
	switch {
	case errors.As(err, &se):
		detail := se.Message
		if se.Field != "" {
			detail = se.Field + ": " + se.Message
		}
		switch se.Code {
		case 400:
			return fmt.Errorf("%s: invalid request: %s", tool, detail)
		case 404:
			return fmt.Errorf("%s: not found: %s", tool, detail)
		case 429:
			return fmt.Errorf("%s: rate limited by agentmem, try again later: %s", tool, detail)
		case 503:
			return fmt.Errorf("%s: agentmem is temporarily unavailable, try again later: %s", tool, detail)
		default:
			return fmt.Errorf("%s: agentmem failed (%d): %s", tool, se.Code, detail)
		}
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse):
		return fmt.Errorf("%s: agentmem is unavailable: %s does not answer on %s (is memoryd running?)", tool, what, where)
	case errors.Is(err, jetstream.ErrBucketNotFound), errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Errorf("%s: agentmem is unavailable: %s %s does not exist (is memoryd running with the same --prefix?)", tool, what, where)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		// The server drops a request its sender may not publish and reports it asynchronously.
		if last := s.nc.LastError(); errors.Is(last, nats.ErrPermissionViolation) {
			return fmt.Errorf("%s: %s did not answer on %s in time; this server's NATS credential was refused: %v", tool, what, where, last)
		}
		return fmt.Errorf("%s: agentmem is unavailable: %s did not answer on %s in time", tool, what, where)
	case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionDraining):
		return fmt.Errorf("%s: agentmem is unavailable: the NATS connection is closed", tool)
	case errors.Is(err, nats.ErrPermissionViolation):
		return fmt.Errorf("%s: this server's NATS credential may not use %s (%s)", tool, where, err)
	case errors.Is(err, events.ErrInvalid):
		return fmt.Errorf("%s: invalid argument: %s", tool, err)
	}
	return fmt.Errorf("%s: %w", tool, err)
}
