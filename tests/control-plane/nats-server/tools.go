//go:build tools

// Keeps nats-server in the module graph: a loopback NATS server with JetStream for the exit
// gate's NATS sink tests.
package tools

import _ "github.com/nats-io/nats-server/v2"
