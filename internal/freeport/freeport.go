// Package freeport hands out TCP ports on 127.0.0.1 for the servers tests
// and benchmarks start (floe agents, PostgreSQL, MinIO). A port is one the
// kernel found free a moment ago and that this process has not handed out
// before: the kernel may give a just-closed port out again at once, so two
// ports asked for back to back (an agent's Kafka and HTTP addresses,
// MinIO's API and console) would otherwise collide.
package freeport

import (
	"fmt"
	"net"
	"strconv"
	"sync"
)

var (
	mu        sync.Mutex
	handedOut = map[int]bool{}
)

// Get returns a port on 127.0.0.1 that was free a moment ago and that Get
// has not returned before in this process.
func Get() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !handedOut[port] {
			handedOut[port] = true
			return port, nil
		}
	}
}

// Addr returns "127.0.0.1:<port>" for a port from Get.
func Addr() (string, error) {
	port, err := Get()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}
