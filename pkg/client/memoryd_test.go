package client_test

import "github.com/agentmem/agentmem/internal/daemon/daemontest"

// runMemoryd starts an in-process memoryd (embedded NATS on a free loopback port, data in a
// temporary directory, offline extractor) for the examples. It returns the URL an agent would
// connect to and a function that stops memoryd and removes its data.
func runMemoryd() (url string, stop func()) { return daemontest.Run("agentmem-example") }
