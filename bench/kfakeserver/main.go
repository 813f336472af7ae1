// Command kfakeserver serves franz-go's in-memory kfake broker on one
// 127.0.0.1 port until it is sent SIGTERM or SIGINT: `make bench` runs it
// as its own process, so that its CPU time and memory are measured apart
// from the load generator's, as floe's and NATS's are.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 9092, "127.0.0.1 `port` to serve Kafka on")
	flag.Parse()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(*port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfakeserver:", err)
		os.Exit(1)
	}
	fmt.Println("kfake listening on", c.ListenAddrs()[0])
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	c.Close()
}
