//go:build !linux

package agent

import "net"

// peerGone is known only on Linux (POLLRDHUP); elsewhere a reader waiting
// for budget learns its peer is gone at the frame's deadline.
func peerGone(net.Conn, int) bool { return false }
