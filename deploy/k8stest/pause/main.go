// Command pause is the sandbox ("pause") container of the pods k8s-test's kubelets run: no
// registry is reachable here, so the harness builds this into an image of its own. It holds
// the pod's namespaces open and exits on SIGTERM or SIGINT.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
