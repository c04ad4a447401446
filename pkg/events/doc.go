// Package events is the v1 wire contract of agentmem: the CloudEvent types,
// the NATS subjects they travel on, their JSON payloads, the CloudEvents codec
// for NATS messages (binary and structured content mode), the retrieve and
// forget request-reply bodies, and the dead-letter record.
//
// Everything an agent or a worker puts on the wire, or reads from it, goes
// through this package. Every validation and decoding error wraps ErrInvalid,
// so a worker can tell permanent bad input (terminate and dead-letter) from a
// transient failure (retry) with errors.Is.
package events
