package agent

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// peerGone reports whether nc's peer has closed (or reset) its side and
// the bytes the kernel still holds for us are fewer than missing, so the
// frame being read can never be completed. It never reads: whatever the
// peer sent stays queued for the reader. A connection it cannot look
// into (not a socket) is never gone.
func peerGone(nc net.Conn, missing int) bool {
	if tc, ok := nc.(interface{ NetConn() net.Conn }); ok {
		nc = tc.NetConn() // TLS: the queue holds records, at least as many bytes as they carry
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	_ = raw.Control(func(fd uintptr) {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		if n, err := unix.Poll(p, 0); err != nil || n == 0 {
			return
		}
		if p[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) == 0 {
			return
		}
		queued, err := unix.IoctlGetInt(int(fd), unix.SIOCINQ)
		gone = err != nil || queued < missing
	})
	return gone
}
